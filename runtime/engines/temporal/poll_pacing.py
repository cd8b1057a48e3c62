"""How often a client looks for the confirmations a durable run waits for.

A client that decides a run's confirmations (``TemporalEngine.run``, ``result``) learns of them
only by asking: one status query per workflow of the run's tree (the run and its running child
runs), each answered by a worker. Asked every ``poll_interval`` (0.1 s) for as long as the run
lasts, a run busy for minutes with its model and tools, or waiting for a person to decide,
cost ten queries a second per workflow, to find nothing new. So the watcher backs off while it
finds nothing new (doubling its wait up to ``max_poll_interval``, 1 s), and looks every
``poll_interval`` again as soon as it finds a confirmation or delivers a decision: the run then
moves on, and the next call of the same reply may ask at once. Only the first confirmation
after an idle spell waits longer to be seen, at most ``max_poll_interval``.
"""

from __future__ import annotations

__all__ = ["PollPacing"]


class PollPacing:
    """The wait before each next look at a run tree: ``fastest`` after a look that found a new
    confirmation or a delivered decision, twice the last one (up to ``slowest``) after a look
    that found nothing new."""

    def __init__(self, fastest: float, slowest: float) -> None:
        if not 0 < fastest <= slowest:
            raise ValueError(
                f"the poll intervals must be positive and the slowest at least the fastest, not "
                f"{fastest!r} and {slowest!r}"
            )
        self.fastest = fastest
        self.slowest = slowest
        self.current = fastest

    def after(self, *, found: bool) -> float:
        """The seconds to wait after a look that ``found`` a new confirmation (or not)."""
        self.current = self.fastest if found else min(self.current * 2, self.slowest)
        return self.current

    def decided(self) -> float:
        """The seconds to wait after a decision was delivered (the run goes on at once)."""
        self.current = self.fastest
        return self.current
