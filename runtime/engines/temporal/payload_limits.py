"""Temporal's payload size limit, checked before Temporal meets it.

The server refuses any payload over its blob size limit (``limit.blobSize.error``, 2 MiB by
default), and what happens then is the worst kind of failure: a planning activity whose answer
the SDK cannot upload is retried (asking the model again, at the model's price), and a workflow
that cannot schedule its next planning activity because the transcript grew past the limit
fails its workflow task again and again, so the run hangs. A durable run checks its values
against :attr:`TemporalSettings.max_payload_bytes` (workflow side: what it sends to activities,
child runs and its continuation) and the worker's limit (activity side: what an activity
answers), and fails with :class:`PayloadTooLargeError`, which names the value and what to do.
"""

from __future__ import annotations

from typing import Any

from temporalio.converter import PayloadConverter

from agentgen.runtime.agents.planning import RunContext
from agentgen.runtime.engines.temporal.converter import measured_payload
from agentgen.runtime.runs.requests import RunError

__all__ = ["DEFAULT_MAX_PAYLOAD_BYTES", "PayloadTooLargeError", "check_payload"]

#: Temporal's default ``limit.blobSize.error``.
DEFAULT_MAX_PAYLOAD_BYTES = 2 * 1024 * 1024


class PayloadTooLargeError(RunError):
    """A durable run's value is larger than Temporal accepts as one payload."""


def check_payload(
    converter: PayloadConverter, value: Any, limit: int, what: str, run: RunContext
) -> None:
    """Raise :class:`PayloadTooLargeError` when ``value``, converted as Temporal will send it,
    is larger than ``limit`` bytes; ``what`` names it for the message, in run ``run``."""
    try:
        payload = measured_payload(value)  # the runtime's types: kept for the send that follows
        if payload is None:
            payload = converter.to_payloads([value])[0]
    except (TypeError, ValueError, RecursionError) as exc:  # a value JSON cannot hold
        raise RunError(
            f"{what} of agent {run.agent_id!r} (run {run.run_id!r}) cannot be written as a "
            f"Temporal payload ({exc}): what crosses between workers must be JSON values"
        ) from None
    size = payload.ByteSize()
    if size > limit:
        raise PayloadTooLargeError(
            f"{what} of agent {run.agent_id!r} (run {run.run_id!r}) is {size} bytes as a "
            f"Temporal payload, over the limit of {limit} bytes "
            "(TemporalSettings.max_payload_bytes; Temporal's default limit.blobSize.error is "
            "2 MiB): keep tool results and answers smaller, compact long transcripts "
            "(agentgen.runtime.transcript.compact), or raise the server's limit and this "
            "setting together"
        )
