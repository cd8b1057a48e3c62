"""Tool results that report why a call did not produce its tool's answer.

Every failure of one call (refused, invalid arguments, denied, the tool or the registry
failed) becomes a tool result the model can read, never an exception that ends the run: the
other calls of the round keep their results. Shared by the planning step (refusals), the
execution steps, and the run loop, which composes them the same way on every engine.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentgen.runtime.contracts.codecs import FieldIssue
from agentgen.runtime.messages import ToolCallPart, ToolResultPart

__all__ = ["outcome_of", "outcome_unknown", "timed_out", "tool_error"]


def tool_error(
    call: ToolCallPart, kind: str, message: str, issues: Sequence[FieldIssue] = ()
) -> ToolResultPart:
    error: dict[str, Any] = {"kind": kind, "message": message}
    if issues:
        error["issues"] = [{"path": i.path, "message": i.message} for i in issues]
    return ToolResultPart(
        call.call_id, call.tool_id, json.dumps({"error": error}, ensure_ascii=False), True
    )


def outcome_unknown(call: ToolCallPart, what_happened: str) -> ToolResultPart:
    """A call that may have had its effect but whose answer was lost (``what_happened`` says
    how, naming the tool): the model is told not to retry it, on every engine in the same
    words."""
    return tool_error(
        call,
        "outcome_unknown",
        f"{what_happened}; the outcome is unknown: do not retry or issue a replacement call, "
        "because the effect may have occurred",
    )


def timed_out(call: ToolCallPart, tool_id: str, seconds: float) -> ToolResultPart:
    """A tool that ran longer than its engine's ``tool_timeout`` and was cancelled."""
    return outcome_unknown(
        call,
        f"{tool_id} did not finish within {seconds:g} s (the engine's tool_timeout) and was "
        "cancelled",
    )


def outcome_of(part: ToolResultPart) -> str:
    """How a call ended, as telemetry and logs name it: ``ok``, ``denied`` (a confirmation
    said no), or the kind of the tool error the model was told (``tool_failed``,
    ``not_permitted``, ...)."""
    if not part.is_error:
        return "ok"
    try:
        value = json.loads(part.content)
    except ValueError:
        return "error"
    if isinstance(value, dict):
        error = value.get("error")
        if isinstance(error, dict) and isinstance(error.get("kind"), str):
            return str(error["kind"])
        if "denied" in value:
            return "denied"
    return "error"
