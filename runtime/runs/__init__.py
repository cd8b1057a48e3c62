"""One run: the planner loop and everything it uses while a run is in progress.

Requests and outcomes, the host protocol the loop reads registrations through, per-activity
planning catalogs, run policy, accepted calls with their saved contracts, execution and
confirmation.
"""

__all__: list[str] = []
