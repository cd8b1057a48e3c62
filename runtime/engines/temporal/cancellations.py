"""Why Temporal cancelled an activity, for telemetry.

The Temporal SDK ends an activity by cancelling its task whatever the reason: its workflow
asked (the run was cancelled by its client), the server gave up on it (start-to-close timeout,
heartbeats missed), its heartbeat could not be sent, its worker is shutting down, or it was
paused or reset. Only a cancellation its run asked for is a withdrawal; the others are the
activity failing, and its spans and duration metrics must say so, with the kind as their
``error.type`` (the run fails with the timeout meanwhile).

``activity.cancellation_details()`` tells most of them apart, but not the commonest: a server
that timed an activity out answers its next heartbeat with "not found", the same answer as
once its workflow closed, which is how a cancelled run usually reaches an activity still
running (the workflow does not wait for its activities to acknowledge a cancellation). The
attempt's own clock separates them: it knows when it started, its start-to-close timeout,
and when it last heartbeated.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from temporalio import activity

__all__ = [
    "ACTIVITY_HEARTBEAT_FAILED",
    "ACTIVITY_INTERRUPTED",
    "ACTIVITY_PAUSED",
    "ACTIVITY_RESET",
    "ACTIVITY_TIMEOUT",
    "WORKER_SHUTDOWN",
    "Attempt",
]

#: The server timed the activity out (start-to-close, or its heartbeats stopped reaching it).
ACTIVITY_TIMEOUT = "activity_timeout"
#: The SDK could not send the activity's heartbeat (its details failed to encode).
ACTIVITY_HEARTBEAT_FAILED = "activity_heartbeat_failed"
#: The worker running the activity is shutting down.
WORKER_SHUTDOWN = "worker_shutdown"
#: The activity was paused (``temporal activity pause``).
ACTIVITY_PAUSED = "activity_paused"
#: The activity was reset (``temporal activity reset``).
ACTIVITY_RESET = "activity_reset"
#: Cancelled for a reason the SDK did not name (none of the above, nor requested).
ACTIVITY_INTERRUPTED = "activity_interrupted"

#: How much earlier than its start-to-close timeout an attempt that the server no longer knows
#: counts as timed out: the server's clock starts when it hands the task out, a little before
#: the attempt's own.
_DISPATCH_ALLOWANCE = 0.25


class Attempt:
    """One attempt of an activity, on the worker: it heartbeats, and says why it is being
    cancelled when that is a failure (:meth:`cancellation_failure`)."""

    def __init__(self) -> None:
        info = activity.info()
        self.started = self.beaten = time.monotonic()
        self.start_to_close = _seconds(info.start_to_close_timeout)
        self.heartbeat_timeout = _seconds(info.heartbeat_timeout)
        self.heartbeat_missed = False

    def heartbeat(self, *details: Any) -> None:
        """Heartbeat ``details``, noting a gap longer than the heartbeat timeout (the event loop
        was blocked): the server has given up on the attempt by then."""
        now = time.monotonic()
        if self.heartbeat_timeout and now - self.beaten > self.heartbeat_timeout:
            self.heartbeat_missed = True
        self.beaten = now
        activity.heartbeat(*details)

    def cancellation_failure(self) -> str | None:
        """``None`` when the cancellation is a withdrawal (its run was cancelled, or ended
        without waiting for it) or the activity was not cancelled (its own code cancelled a
        task of its own), else the failure's kind."""
        if not activity.in_activity() or not activity.is_cancelled():
            return None
        details = activity.cancellation_details()
        if details is None:
            # The SDK cancels without details only when a heartbeat fails to go out.
            return ACTIVITY_HEARTBEAT_FAILED
        reasons = (
            (details.timed_out, ACTIVITY_TIMEOUT),
            (details.worker_shutdown, WORKER_SHUTDOWN),
            (details.paused, ACTIVITY_PAUSED),
            (details.reset, ACTIVITY_RESET),
            (details.not_found and self._timed_out(), ACTIVITY_TIMEOUT),
        )
        for flagged, kind in reasons:
            if flagged:
                return kind
        if details.cancel_requested or details.not_found:
            return None
        return ACTIVITY_INTERRUPTED

    def _timed_out(self) -> bool:
        now = time.monotonic()
        if self.heartbeat_timeout and now - self.beaten > self.heartbeat_timeout:
            self.heartbeat_missed = True
        if self.heartbeat_missed:
            return True
        elapsed = now - self.started
        return bool(self.start_to_close) and elapsed >= self.start_to_close - _DISPATCH_ALLOWANCE


def _seconds(duration: timedelta | None) -> float:
    return duration.total_seconds() if duration else 0.0
