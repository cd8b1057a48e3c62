"""How tools run: the context a call gets, and the executor seams applications implement.

Generated toolset packages define a typed ``Protocol`` per toolset (one async method per tool)
and a ``bind`` function that adapts an implementation to :class:`ToolsetExecutor`, the untyped
seam the runtime dispatches through after it decoded and validated the payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

__all__ = ["ToolContext", "ToolsetExecutor", "UnknownToolError"]


@dataclass(frozen=True)
class ToolContext:
    """What a tool call knows about where it runs. ``labels`` is a read-only copy of the run's
    trusted labels (never supplied by the model)."""

    run_id: str
    agent_id: str
    tool_id: str
    tool_call_id: str
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))


class ToolsetExecutor(Protocol):
    """Runs the tools of one toolset. ``payload`` is already decoded and validated (a generated
    model, or a JSON value for schema-typed tools); the return value is encoded and validated
    against the tool's result contract by the runtime."""

    async def execute(self, tool_id: str, payload: Any, context: ToolContext) -> Any: ...


class UnknownToolError(LookupError):
    """An executor was asked for a tool it does not implement."""
