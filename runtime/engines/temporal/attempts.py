"""One attempt of an activity on the worker: the one sender of its heartbeats.

Every activity heartbeats while it runs (a lost worker is noticed within the heartbeat
timeout), and a planning activity's heartbeats also carry what its model calls cost. Both go
through :class:`Attempt`, so that its clock of the gaps between heartbeats, which tells a
timed-out attempt from a withdrawn one (:mod:`.cancellations`), sees every heartbeat sent.

Temporal retries a planning activity that failed transiently (a provider's 5xx on a later
search round, a planner's second call, a registry read). The responses the failed attempt got
were billed, but they travel in no answer: only the successful attempt's ``Planned`` reaches
the workflow. So every attempt heartbeats its running usage (earlier attempts' included) with
the attempt's number after each response, once more as final when it fails by an error (and
the failure carries the same final account to the workflow: :func:`failure_details`), and the
next attempt starts from the last details Temporal kept.

Details can be older than the failed attempt's last response: a worker lost, or an attempt
ended by a timeout, never sends its last ones, and the SDK throttles heartbeats. An earlier
attempt whose final account did not arrive is therefore counted as one response that reported
no usage (``Usage.unreported``): the run's usage is then a lower bound, never a count that looks
complete while it misses something. The details are plain JSON (a worker of an older release,
which sends none, decodes them without knowing them).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio import activity

from agentgen.runtime.engines.temporal.usage_details import usage_detail, usage_in
from agentgen.runtime.model_client import Usage
from agentgen.runtime.runs.model_calls import UsageMeter

__all__ = ["DISPATCH_ALLOWANCE", "Attempt", "earlier_usage", "failed_step_usage"]

#: How much earlier than its start-to-close timeout an attempt that the server no longer knows
#: counts as timed out: the server's clock starts when it hands the task out, a little before
#: the attempt's own.
DISPATCH_ALLOWANCE = 0.25


class Attempt(UsageMeter):
    """One attempt of an activity: its heartbeats, the clock of the gaps between them, and
    (``metered``: a planning activity) the usage meter its model calls add to, which starts
    from the earlier attempts' usage and heartbeats its count as each response arrives."""

    def __init__(self, *, metered: bool = False) -> None:
        info = activity.info()
        self.number = info.attempt
        self.metered = metered
        super().__init__(earlier_usage(info.attempt, info.heartbeat_details) if metered else None)
        self.started = self.beaten = time.monotonic()
        self.start_to_close = _seconds(info.start_to_close_timeout)
        self.heartbeat_timeout = _seconds(info.heartbeat_timeout)
        self.heartbeat_missed = False

    def add(self, usage: Usage) -> None:
        super().add(usage)
        self.heartbeat()

    def heartbeat(self, *, final: bool = False) -> None:
        """Heartbeat the attempt's details, noting a gap longer than the heartbeat timeout (the
        event loop was blocked): the server has given up on the attempt by then."""
        self._gap()
        self.beaten = time.monotonic()
        activity.heartbeat(*self.details(final=final))

    def details(self, *, final: bool = False) -> tuple[dict[str, Any], ...]:
        """The heartbeat details: for a metered attempt, what the attempts so far cost;
        ``final`` when this attempt will get no further response (it failed)."""
        if not self.metered:
            return ()
        return (usage_detail(self.usage, attempt=self.number, final=final),)

    def failed(self) -> tuple[dict[str, Any], ...]:
        """Record this attempt's final account (sent before the failure completes it); the
        details to fail with."""
        self.heartbeat(final=True)
        return self.details(final=True)

    def timed_out(self) -> bool:
        """Whether the server has given up on the attempt by now, by its own clock: a gap
        between heartbeats longer than the heartbeat timeout, or its start-to-close timeout
        spent (less :data:`DISPATCH_ALLOWANCE`)."""
        if self._gap():
            return True
        elapsed = time.monotonic() - self.started
        return bool(self.start_to_close) and elapsed >= self.start_to_close - DISPATCH_ALLOWANCE

    def _gap(self) -> bool:
        """Whether a gap between heartbeats, until now, outlasted the heartbeat timeout."""
        if self.heartbeat_timeout and time.monotonic() - self.beaten > self.heartbeat_timeout:
            self.heartbeat_missed = True
        return self.heartbeat_missed


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


def failed_step_usage(details: Sequence[Any]) -> Usage:
    """What a planning activity that failed for good cost, from the details its failure
    carries (an error: the last attempt's final account) or the last heartbeat's (a timeout):
    one unreported response when the account is not final, or missing (a worker of an older
    release)."""
    recorded = _recorded(details)
    if recorded is None:
        return Usage.not_reported()
    usage, _, final = recorded
    return usage if final else usage + Usage.not_reported()


def _recorded(details: Sequence[Any]) -> tuple[Usage, int, bool] | None:
    """The usage, attempt and finality the details hold (None: none, or not ours)."""
    last = details[-1] if details else None
    usage = usage_in(last)
    if usage is None:
        return None
    assert isinstance(last, dict)
    attempt, final = last.get("attempt"), last.get("final")
    if type(attempt) is not int or attempt < 0 or type(final) is not bool:
        return None
    return usage, attempt, final


def _seconds(duration: timedelta | None) -> float:
    return duration.total_seconds() if duration else 0.0
