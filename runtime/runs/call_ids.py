"""Tool-call IDs are unique within a run, and each is one short line of visible text.

A repeated or empty ID is refused before anything of the turn that holds it runs: running it
could run a call twice, or answer it with another call's result. So is an ID longer than
:data:`MAX_CALL_ID_LENGTH` or holding a control or format character: IDs come from models and
planners, and reach logs (a newline would forge a log line), traces and registries (which take
at most 256 characters). So is a call to a tool named that way: no tool ID is, and the
name, made up by a model, would otherwise come back to it in full in the call's error (a
200 KB name was echoed twice in a 400 KB tool result). The planning step checks the
conversation a run starts from; the run loop checks every reply of the planner. The IDs seen so
far are part of a run's state, so a durable run that continues as a new execution keeps them.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping

from agentgen.runtime.messages import ToolCallPart
from agentgen.runtime.runs.requests import ToolCallIdError
from agentgen.runtime.visible import quoted

__all__ = ["MAX_CALL_ID_LENGTH", "claim_call_ids"]

#: Longest tool-call ID accepted (what a registry's call metadata holds); providers' IDs are a
#: few dozen ASCII characters.
MAX_CALL_ID_LENGTH = 256


def claim_call_ids(
    seen: MutableMapping[str, str], agent_id: str, calls: Iterable[ToolCallPart], where: str
) -> None:
    """Record the calls' IDs in ``seen`` (ID → where it was used); :class:`ToolCallIdError` if
    one is empty, already used, too long or not a line of visible text, or if the tool a call
    names is too long or not a line of visible text (no tool ID is: the model made it up)."""
    for call in calls:
        if not _one_short_line(call.tool_id):
            # Refused like a call ID: as an unknown tool, the name would come back to the model
            # in full in its not_permitted error, and reach logs and traces.
            raise ToolCallIdError(
                f"agent {agent_id!r}: {where} holds a call (call ID {quoted(call.call_id)}) to "
                f"a tool named {quoted(call.tool_id)}, which is not one line of visible text "
                f"of at most {MAX_CALL_ID_LENGTH} characters, and so no tool of any agent; "
                "nothing of that turn was run"
            )
        if not call.call_id:
            raise ToolCallIdError(
                f"agent {agent_id!r}: {where} holds a call to {call.tool_id!r} with an empty "
                "call ID; nothing of that turn was run"
            )
        if not _one_short_line(call.call_id):
            raise ToolCallIdError(
                f"agent {agent_id!r}: {where} holds a call to {call.tool_id!r} whose call ID "
                f"{quoted(call.call_id)} is not one line of visible text of at most "
                f"{MAX_CALL_ID_LENGTH} characters; nothing of that turn was run"
            )
        earlier = seen.get(call.call_id)
        if earlier is not None:
            raise ToolCallIdError(
                f"agent {agent_id!r}: {where} repeats tool call ID {call.call_id!r}, already "
                f"used by {earlier}; call IDs must be unique within a run, and nothing of "
                "that turn was run"
            )
        seen[call.call_id] = f"{where} ({call.tool_id})"


def _one_short_line(text: str) -> bool:
    return len(text) <= MAX_CALL_ID_LENGTH and text.isprintable()
