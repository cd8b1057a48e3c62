"""The planner seam: applications decide what a run does next.

The runtime calls ``plan_start`` once per run and ``plan_resume`` after each round of tool
results. ``input.agent.advertised_tool_definitions()`` is this planning activity's catalog after
run-policy filtering; a planner passes it, the messages and a model to a model client and returns
the assistant message: its tool calls are executed, a message without calls ends the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from agentgen.runtime.messages import Message, ToolResultPart
from agentgen.runtime.model_client import AdvertisedTools, ModelClient, ToolDefinition
from agentgen.runtime.wire_fields import ADDED

__all__ = ["PlanInput", "PlanResult", "PlanResumeInput", "Planner", "PlannerContext", "RunContext"]


class PlannerContext(Protocol):
    """The agent as one planning activity sees it."""

    @property
    def agent_id(self) -> str: ...

    def advertised_tool_definitions(self) -> list[ToolDefinition]: ...

    def advertised_tools(self) -> AdvertisedTools:
        """The same definitions as an immutable sequence that keeps what model adapters
        derive from it (pass it as ``ModelRequest.tools``)."""
        ...

    def model(self, model_id: str) -> ModelClient: ...


@dataclass(frozen=True)
class RunContext:
    """Who a run is. ``labels`` is a read-only copy of the run's trusted labels: planners,
    tools and registry admissions of the run all read this one value, so nothing the run
    hands it to can change what later calls receive (and a durable engine, which carries it
    between activities, could not keep such a change anyway)."""

    run_id: str
    agent_id: str
    labels: Mapping[str, str] = field(default_factory=dict)
    parent_run_id: str | None = None
    #: Set when the run answers a parent's agent-as-tool call: the JSON Schema its final
    #: answer (``PlanResult.final_value``) must match.
    result_schema_json: str | None = None
    #: How many registry calls the run is nested in (``RunRequest.call_depth``).
    call_depth: int = field(default=0, metadata=ADDED)

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))


@dataclass(frozen=True)
class PlanInput:
    messages: Sequence[Message]
    agent: PlannerContext
    run: RunContext
    #: A final-answer-only activity (the run's tool-call budget or failure limit is spent;
    #: a run whose budget is 0 starts with one): ask for an answer without tool calls, as
    #: ``ModelPlanner`` does with tool choice ``none``. No registry was read: the catalog
    #: describes only the compiled tools (so that the conversation's calls stay explained),
    #: and a reply with tool calls fails the run.
    finalize: bool = field(default=False, kw_only=True)


@dataclass(frozen=True)
class PlanResumeInput(PlanInput):
    tool_results: Sequence[ToolResultPart] = ()


@dataclass(frozen=True)
class PlanResult:
    """The assistant's message. Without tool calls it is the final answer; ``final_value``
    is the structured result when the run answers a parent's agent-as-tool call."""

    message: Message
    final_value: Any = None


class Planner(Protocol):
    async def plan_start(self, input: PlanInput) -> PlanResult: ...

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult: ...
