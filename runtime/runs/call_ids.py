"""Tool-call IDs are unique within a run.

A repeated or empty ID is refused before anything of the turn that holds it runs: running it
could run a call twice, or answer it with another call's result. The planning step checks the
conversation a run starts from; the run loop checks every reply of the planner. The IDs seen so
far are part of a run's state, so a durable run that continues as a new execution keeps them.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping

from agentgen.runtime.messages import ToolCallPart
from agentgen.runtime.runs.requests import ToolCallIdError

__all__ = ["claim_call_ids"]


def claim_call_ids(
    seen: MutableMapping[str, str], agent_id: str, calls: Iterable[ToolCallPart], where: str
) -> None:
    """Record the calls' IDs in ``seen`` (ID → where it was used); :class:`ToolCallIdError` if
    one is empty or already used."""
    for call in calls:
        if not call.call_id:
            raise ToolCallIdError(
                f"agent {agent_id!r}: {where} holds a call to {call.tool_id!r} with an empty "
                "call ID; nothing of that turn was run"
            )
        earlier = seen.get(call.call_id)
        if earlier is not None:
            raise ToolCallIdError(
                f"agent {agent_id!r}: {where} repeats tool call ID {call.call_id!r}, already "
                f"used by {earlier}; call IDs must be unique within a run, and nothing of "
                "that turn was run"
            )
        seen[call.call_id] = f"{where} ({call.tool_id})"
