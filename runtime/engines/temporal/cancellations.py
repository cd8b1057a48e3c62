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
attempt's own clock separates them (:meth:`.Attempt.timed_out`): it knows when it started, its
start-to-close timeout, and when it last heartbeated.
"""

from __future__ import annotations

from temporalio import activity

from agentgen.runtime.engines.temporal.attempts import Attempt

__all__ = [
    "ACTIVITY_HEARTBEAT_FAILED",
    "ACTIVITY_INTERRUPTED",
    "ACTIVITY_PAUSED",
    "ACTIVITY_RESET",
    "ACTIVITY_TIMEOUT",
    "WORKER_SHUTDOWN",
    "cancellation_failure",
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


def cancellation_failure(attempt: Attempt) -> str | None:
    """``None`` when the cancellation of ``attempt`` is a withdrawal (its run was cancelled,
    or ended without waiting for it) or the activity was not cancelled (its own code cancelled
    a task of its own), else the failure's kind."""
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
        (details.not_found and attempt.timed_out(), ACTIVITY_TIMEOUT),
    )
    for flagged, kind in reasons:
        if flagged:
            return kind
    if details.cancel_requested or details.not_found:
        return None
    return ACTIVITY_INTERRUPTED
