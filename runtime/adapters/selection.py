"""Which of a request's tools are shown up front, which are left to search, and whether the
model may search at all.

The rules are the same for every provider, so they live here once: a forced tool
(``ToolChoice(mode="tool")``) is always sent with its full definition, even when deferred, and
forcing a tool or choosing ``none`` disables discovery. What each provider then does with the
deferred tools (withhold them, flag them, or refuse the request) is the adapter's business.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentgen.runtime.model_client import ModelError, ModelRequest, ToolChoice, ToolDefinition

__all__ = ["ToolSelection", "select_tools"]


@dataclass(frozen=True)
class ToolSelection:
    """The request's tools split by how they reach the model, in request order."""

    #: Sent with their full definitions up front (the forced tool included, even if deferred).
    eager: tuple[ToolDefinition, ...]
    #: Deferred tools other than a forced one: reachable only through search.
    deferred: tuple[ToolDefinition, ...]
    #: True when the model may search for deferred tools in this request.
    discovery: bool
    #: The tool ``ToolChoice(mode="tool")`` names, if any.
    forced: ToolDefinition | None
    choice: ToolChoice

    @property
    def all(self) -> tuple[ToolDefinition, ...]:
        """Every tool the request permits (eager first)."""
        return self.eager + self.deferred


def select_tools(provider: str, request: ModelRequest) -> ToolSelection:
    """Split ``request.tools``; fail on duplicate IDs or a tool choice that names no tool."""
    seen: set[str] = set()
    for tool in request.tools:
        if tool.id in seen:
            raise ModelError(
                f"{provider}: the request for model {request.model!r} lists tool {tool.id!r} "
                "twice; each tool may be advertised once"
            )
        seen.add(tool.id)
    choice = request.tool_choice
    forced: ToolDefinition | None = None
    if choice.mode == "tool":
        forced = next((tool for tool in request.tools if tool.id == choice.name), None)
        if forced is None:
            raise ModelError(
                f"{provider}: tool choice forces tool {choice.name!r}, which is not among the "
                f"tools of this request for model {request.model!r}; force one of "
                f"{sorted(seen)} or change the run policy"
            )
    elif choice.mode == "any" and not request.tools:
        raise ModelError(
            f"{provider}: tool choice 'any' requires at least one tool, but the request for "
            f"model {request.model!r} has none"
        )
    eager = tuple(tool for tool in request.tools if not tool.deferred or tool is forced)
    deferred = tuple(tool for tool in request.tools if tool.deferred and tool is not forced)
    discovery = bool(deferred) and choice.mode in ("auto", "any")
    return ToolSelection(eager, deferred, discovery, forced, choice)
