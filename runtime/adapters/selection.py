"""Which of a request's tools are shown up front, which are left to search, and whether the
model may search at all.

The rules are the same for every provider, so they live here once: a forced tool
(``ToolChoice(mode="tool")``) is always sent with its full definition, even when deferred, and
forcing a tool or choosing ``none`` disables discovery. What each provider then does with the
deferred tools (withhold them, flag them, or refuse the request) is the adapter's business.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import filterfalse
from operator import attrgetter

from agentgen.runtime.model_client import (
    AdvertisedTools,
    ModelError,
    ModelRequest,
    ToolChoice,
    ToolDefinition,
)

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
    #: Every tool of the request by ID.
    by_id: Mapping[str, ToolDefinition] = field(default_factory=dict)

    @property
    def all(self) -> tuple[ToolDefinition, ...]:
        """Every tool the request permits (eager first)."""
        return self.eager + self.deferred

    def is_deferred(self, tool_id: str) -> bool:
        """Whether ``tool_id`` is one of the tools left to search."""
        tool = self.by_id.get(tool_id)
        return tool is not None and tool.deferred and tool is not self.forced


_ID = attrgetter("id")
_DEFERRED = attrgetter("deferred")


@dataclass(frozen=True)
class _Split:
    """What every request over the same definitions shares."""

    by_id: Mapping[str, ToolDefinition]
    eager: tuple[ToolDefinition, ...]
    deferred: tuple[ToolDefinition, ...]
    #: The first ID listed twice, if any.
    repeated: str | None


def _split(tools: Sequence[ToolDefinition]) -> _Split:
    # Catalogs hold thousands of deferred tools: each step is one pass at C speed.
    by_id = dict(zip(map(_ID, tools), tools, strict=True))
    repeated = None
    if len(by_id) != len(tools):
        seen: set[str] = set()
        for tool in tools:
            if tool.id in seen:
                repeated = tool.id
                break
            seen.add(tool.id)
    eager = tuple(filterfalse(_DEFERRED, tools))
    return _Split(by_id, eager, tuple(filter(_DEFERRED, tools)), repeated)


def select_tools(provider: str, request: ModelRequest) -> ToolSelection:
    """Split ``request.tools``; fail on duplicate IDs or a tool choice that names no tool.

    For :class:`~agentgen.runtime.model_client.AdvertisedTools` the split is computed once and
    shared by every request over them, so a request's cost does not grow with its catalog.
    """
    tools = request.tools
    split = tools.derived(_split, _split) if isinstance(tools, AdvertisedTools) else _split(tools)
    if split.repeated is not None:
        raise ModelError(
            f"{provider}: the request for model {request.model!r} lists tool "
            f"{split.repeated!r} twice; each tool may be advertised once"
        )
    by_id = split.by_id
    choice = request.tool_choice
    forced: ToolDefinition | None = None
    if choice.mode == "tool":
        forced = by_id.get(choice.name) if choice.name is not None else None
        if forced is None:
            raise ModelError(
                f"{provider}: tool choice forces tool {choice.name!r}, which is not among the "
                f"tools of this request for model {request.model!r}; force one of "
                f"{sorted(by_id)} or change the run policy"
            )
    elif choice.mode == "any" and not tools:
        raise ModelError(
            f"{provider}: tool choice 'any' requires at least one tool, but the request for "
            f"model {request.model!r} has none"
        )
    if forced is None:
        eager, deferred = split.eager, split.deferred
    else:
        eager = tuple(tool for tool in tools if not tool.deferred or tool is forced)
        deferred = tuple(tool for tool in tools if tool.deferred and tool is not forced)
    discovery = bool(deferred) and choice.mode in ("auto", "any")
    return ToolSelection(eager, deferred, discovery, forced, choice, by_id)
