"""A planning activity's usage across its attempts, carried in its heartbeat details.

Temporal retries a planning activity that failed transiently (a provider's 5xx on a later
search round, a planner's second call, a registry read). The responses the failed attempt got
were billed, but they travel in no answer: only the successful attempt's ``Planned`` reaches
the workflow. So every attempt heartbeats its running usage (earlier attempts' included) with
the attempt's number, once more as final when it fails by an error, and the next attempt
starts from the last details Temporal kept.

Details can be older than the failed attempt's last response: a worker lost, or an attempt
ended by a timeout, never sends its last ones, and the SDK throttles heartbeats. An earlier
attempt whose final account did not arrive is therefore counted as one response that reported
no usage (``Usage.unreported``): the run's usage is then a lower bound, never a count that looks
complete while it misses something. The details are plain JSON (a worker of an older release,
which sends none, decodes them without knowing them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio import activity

from agentgen.runtime.model_client import Usage
from agentgen.runtime.runs.model_calls import UsageMeter

__all__ = ["KEY", "AttemptUsage", "earlier_usage"]

#: The key of the heartbeat detail that holds the usage.
KEY = "agentgen.usage"


class AttemptUsage(UsageMeter):
    """The usage meter of one attempt of a planning activity: it starts from the earlier
    attempts' usage and heartbeats its count as each response arrives."""

    def __init__(self) -> None:
        info = activity.info()
        self.attempt = info.attempt
        super().__init__(earlier_usage(info.attempt, info.heartbeat_details))

    def add(self, usage: Usage) -> None:
        super().add(usage)
        activity.heartbeat(*self.details())

    def details(self, *, final: bool = False) -> tuple[dict[str, Any], ...]:
        """The heartbeat details saying what the attempts so far cost; ``final`` when this
        attempt will get no further response (it failed)."""
        usage = self.usage
        counts = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
        counts["unreported"] = usage.unreported
        return ({KEY: counts, "attempt": self.attempt, "final": final},)

    def failed(self) -> None:
        """Record this attempt's final account (sent before the failure completes it)."""
        activity.heartbeat(*self.details(final=True))


def earlier_usage(attempt: int, details: Sequence[Any]) -> Usage:
    """What the attempts before ``attempt`` cost, from the last heartbeat details Temporal
    kept: each earlier attempt whose final account is missing counts one unreported
    response."""
    if attempt <= 1:
        return Usage()
    recorded = _recorded(details)
    if recorded is None or not 1 <= recorded[1] < attempt:
        return Usage(unreported=attempt - 1)
    usage, written, final = recorded
    return usage + Usage(unreported=attempt - 1 - written + (0 if final else 1))


def _recorded(details: Sequence[Any]) -> tuple[Usage, int, bool] | None:
    """The usage, attempt and finality the details hold (None: none, or not ours)."""
    last = details[-1] if details else None
    if not isinstance(last, dict) or not isinstance(last.get(KEY), dict):
        return None
    counts = last[KEY]
    numbers = (counts.get("input_tokens"), counts.get("output_tokens"), counts.get("unreported"))
    attempt, final = last.get("attempt"), last.get("final")
    if not all(type(n) is int and n >= 0 for n in (*numbers, attempt)) or type(final) is not bool:
        return None
    input_tokens, output_tokens, unreported = numbers
    assert isinstance(input_tokens, int) and isinstance(output_tokens, int)
    assert isinstance(unreported, int) and isinstance(attempt, int)
    return Usage(input_tokens, output_tokens, unreported), attempt, final
