"""Which service owns each toolset's generated package and registration name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agentgen.dsl.expr import AgentExpr, ExternalMCPSource, RootExpr, ServiceExpr, ToolsetExpr
from agentgen.dsl.names import q

__all__ = ["Ownership", "assign_owners", "toolset_kind"]


@dataclass(frozen=True)
class Ownership:
    #: Owning service by ``id()`` of the toolset expression.
    owners: Mapping[int, ServiceExpr]
    #: Toolsets nothing is generated for (not used or exported by any service).
    warnings: tuple[str, ...]

    def owner(self, toolset: ToolsetExpr) -> ServiceExpr | None:
        return self.owners.get(id(toolset))


def assign_owners(root: RootExpr) -> Ownership:
    """The defining agent's (or service's) service for toolsets declared in place; else the
    first service that exports it; else the first service whose agents use it. Reordering
    services never moves a toolset away from the service that exports it."""
    owners: dict[int, ServiceExpr] = {}
    for toolset in root.toolsets:
        parent = toolset.parent
        if isinstance(parent, AgentExpr):
            owners[id(toolset)] = parent.service
        elif isinstance(parent, ServiceExpr):
            owners[id(toolset)] = parent
    exported = [(s, e.toolset) for s in root.services for e in s.exports]
    used = [
        (service, use.target)
        for service in root.services
        for agent in service.agents
        for use in agent.uses
    ]
    for service, target in [*exported, *used]:
        if isinstance(target, ToolsetExpr) and not target.is_registry:
            owners.setdefault(id(target), service)
    warnings = tuple(
        f"{toolset.loc.short()}: toolset {q(toolset.name)} is not used or exported by any "
        "service; nothing is generated for it"
        for toolset in root.toolsets
        if id(toolset) not in owners and not toolset.is_registry
    )
    return Ownership(owners, warnings)


def toolset_kind(toolset: ToolsetExpr) -> str:
    """``mcp`` (an external MCP server's tools), ``agent`` (an agent exported as tools) or
    ``local`` (tools the application implements)."""
    if isinstance(toolset.source, ExternalMCPSource):
        return "mcp"
    if toolset.owner == "agent-export" and isinstance(toolset.parent, AgentExpr):
        return "agent"
    return "local"
