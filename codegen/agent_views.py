"""What an agent's catalog looks like, read from the generation model.

``agentgen explain`` and ``agentgen search`` show teams what each agent loads immediately and
what it finds by search, with the same search documents the generated packages carry.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from agentgen.codegen.generation_model import (
    AgentModel,
    GenerationModel,
    RegistryRead,
    ToolModel,
    ToolsetModel,
)
from agentgen.codegen.policy_rules import tool_policy
from agentgen.runtime.runs.policy import ToolPolicy

Source = Literal["local", "agent", "mcp", "registry"]


@dataclass(frozen=True)
class ToolView:
    tool: ToolModel
    toolset: ToolsetModel
    deferred: bool

    @property
    def source(self) -> Source:
        return {"local": "local", "agent": "agent", "mcp": "mcp"}[self.toolset.kind]  # type: ignore[return-value]


@dataclass(frozen=True)
class AgentView:
    agent: AgentModel
    tools: tuple[ToolView, ...]
    registry_reads: tuple[RegistryRead, ...]

    @property
    def deferred(self) -> tuple[ToolView, ...]:
        return tuple(t for t in self.tools if t.deferred)

    @property
    def immediate(self) -> tuple[ToolView, ...]:
        return tuple(t for t in self.tools if not t.deferred)

    @cached_property
    def policy(self) -> ToolPolicy:
        """The agent's own run policy, as the runtime's predicate (a runtime or run policy may
        hide more)."""
        return tool_policy(self.agent.policy.tag_clauses)

    def hidden(self, tool: ToolModel) -> bool:
        """True when the agent's run policy keeps ``tool`` from the model (and refuses calls)."""
        return not self.policy.allows(tool.id, tool.tags)


class UnknownAgentError(LookupError):
    """No agent of the design has the requested ID; the message lists the agents."""


def agent_views(model: GenerationModel) -> list[AgentView]:
    views: list[AgentView] = []
    for service in model.services:
        for agent in service.agents:
            deferred = set(agent.deferred_ids)
            tools = tuple(
                ToolView(tool, used.toolset, tool.id in deferred)
                for used in agent.uses
                for tool in used.tools
            )
            views.append(AgentView(agent, tools, agent.registry_reads))
    return views


def select(model: GenerationModel, agent_id: str | None) -> list[AgentView]:
    """Every agent, or the one named by its ID (``service.agent``) or, if unambiguous, name."""
    views = agent_views(model)
    if agent_id is None:
        return views
    found = [v for v in views if agent_id in (v.agent.id, v.agent.name)]
    if len(found) == 1:
        return found
    known = ", ".join(v.agent.id for v in views) or "none"
    if not found:
        raise UnknownAgentError(f"the design has no agent {agent_id!r} (agents: {known})")
    raise UnknownAgentError(f"agent name {agent_id!r} is ambiguous; use its ID (agents: {known})")
