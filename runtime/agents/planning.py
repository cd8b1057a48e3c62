"""The planner seam: applications decide what a run does next.

The runtime calls ``plan_start`` once per run and ``plan_resume`` after each round of tool
results. ``input.agent.advertised_tool_definitions()`` is this planning activity's catalog after
run-policy filtering; a planner passes it, the messages and a model to a model client and returns
the assistant message: its tool calls are executed, a message without calls ends the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentgen.runtime.messages import Message, ToolResultPart
from agentgen.runtime.model_client import AdvertisedTools, ModelClient, ToolDefinition

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
    run_id: str
    agent_id: str
    labels: Mapping[str, str] = field(default_factory=dict)
    parent_run_id: str | None = None
    #: Set when the run answers a parent's agent-as-tool call: the JSON Schema its final
    #: answer (``PlanResult.final_value``) must match.
    result_schema_json: str | None = None


@dataclass(frozen=True)
class PlanInput:
    messages: Sequence[Message]
    agent: PlannerContext
    run: RunContext


@dataclass(frozen=True)
class PlanResumeInput(PlanInput):
    tool_results: Sequence[ToolResultPart] = ()
    #: A final-answer-only activity: no tools are advertised and no registry is read.
    finalize: bool = False


@dataclass(frozen=True)
class PlanResult:
    """The assistant's message. Without tool calls it is the final answer; ``final_value``
    is the structured result when the run answers a parent's agent-as-tool call."""

    message: Message
    final_value: Any = None


class Planner(Protocol):
    async def plan_start(self, input: PlanInput) -> PlanResult: ...

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult: ...
