"""Agents for runtime tests, built from the examples' generated packages."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentgen.runtime.agents.definition import AgentDefinition, RegistryCatalog, RunPolicy
from agentgen.runtime.agents.executors import ToolContext
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.app import Runtime
from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.messages import Message, TextPart, ToolCallPart
from agentgen.runtime.model_client import ToolDefinition
from agentgen.runtime.registry.client import ToolCallMeta
from examples.records.gen.assistant.toolsets.records import declarations as records_declarations
from examples.records.gen.assistant.toolsets.records import executor as records_executor
from examples.records.gen.assistant.toolsets.records import specs as records_specs
from examples.records.gen.assistant.toolsets.records import types
from tests.runtime.fake_registry import FakeRegistry


class Records:
    """A records executor that remembers its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, ToolContext]] = []

    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        self.calls.append(("lookup", args, context))
        return types.Record(id=args.id, title="T", body="B")

    async def search(self, args: types.SearchArgs, context: ToolContext) -> types.SearchResult:
        self.calls.append(("search", args, context))
        return types.SearchResult(ids=["r1"])

    async def analyze(self, args: types.AnalyzeArgs, context: ToolContext) -> types.Analysis:
        self.calls.append(("analyze", args, context))
        return types.Analysis(summary="ok")


@dataclass
class ScriptedPlanner:
    """Returns one planned message per activity and records what each activity advertised."""

    turns: list[Message]
    seen: list[list[ToolDefinition]] = field(default_factory=list)
    inputs: list[PlanInput] = field(default_factory=list)

    async def plan_start(self, input: PlanInput) -> PlanResult:
        return self._next(input)

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        return self._next(input)

    def _next(self, input: PlanInput) -> PlanResult:
        self.inputs.append(input)
        self.seen.append(input.agent.advertised_tool_definitions())
        if not self.turns:
            return PlanResult(Message("assistant", (TextPart("done"),)))
        return PlanResult(self.turns.pop(0))


def calls(*calls: tuple[str, dict[str, Any]], prefix: str = "c") -> Message:
    """An assistant turn calling tools; call IDs are ``<prefix><index>_<tool>`` (give later
    turns calling the same tool another prefix: IDs are unique within a run)."""
    return Message(
        "assistant",
        tuple(
            ToolCallPart(f"{prefix}{i}_{tool}", tool, json.dumps(args))
            for i, (tool, args) in enumerate(calls)
        ),
    )


def answer(text: str = "done") -> Message:
    return Message("assistant", (TextPart(text),))


def records_definition(**changes: Any) -> AgentDefinition:
    base = AgentDefinition(
        id="test.agent",
        description="A test agent.",
        specs=records_specs.SPECS,
        deferred_tool_ids=("records.analyze", "records.search"),
    )
    return replace(base, **changes)


def register(
    rt: Runtime,
    planner: ScriptedPlanner,
    definition: AgentDefinition | None = None,
    executor: Records | None = None,
) -> Records:
    executor = executor or Records()
    rt.register_agent(
        definition or records_definition(),
        planner=planner,
        executors={records_specs.TOOLSET: records_executor.bind(executor)},
    )
    return executor


def provider_toolset(
    name: str = "records", version: str | None = "1.0.0", **changes: Any
) -> ToolsetDeclaration:
    """A provider's declaration of the records tools under registry name ``name``."""
    tools = records_declarations.tool_schemas()
    if name != "records":
        for tool in tools:
            tool.name = tool.name.replace("records.", f"{name}.", 1)
    declaration = ToolsetDeclaration(name=name, version=version, tools=tools)
    return declaration.model_copy(update=changes)


async def echo_handler(tool: str, payload: Any, meta: ToolCallMeta) -> Any:
    if tool.endswith(".search"):
        return {"ids": [f"from {tool}"]}
    if tool.endswith(".lookup"):
        return {"id": payload["id"], "title": "remote", "body": "remote body"}
    return {"summary": f"{tool} {json.dumps(payload)}"}


@dataclass
class Sources:
    """A hand-written RegistryTools (as an application would attach with with_registry_tools)."""

    toolsets: Sequence[tuple[str, str, str, bool]] = ()
    registries: Sequence[tuple[str, bool]] = ()
    resolved: int = 0

    async def resolve(self, catalog: RegistryCatalog) -> None:
        self.resolved += 1
        for registry, name, version, deferred in self.toolsets:
            await catalog.include_toolset(registry, name, version, deferred)
        for registry, deferred in self.registries:
            await catalog.include_registry(registry, deferred)

    def allows(self, registry: str, toolset: str, version: str) -> bool:
        if any(r == registry for r, _ in self.registries):
            return True
        return any(
            r == registry and n == toolset and (not v or v == version)
            for r, n, v, _ in self.toolsets
        )


def registry_runtime(
    registry: FakeRegistry | None = None, **kwargs: Any
) -> tuple[Runtime, FakeRegistry]:
    registry = registry or FakeRegistry()
    rt = Runtime(**kwargs)
    rt.register_registry("company", registry, registry)
    return rt, registry


NO_POLICY = RunPolicy()


def register_registry_reader(
    rt: Runtime, handler: Any = echo_handler, agent_id: str = "test.nested"
) -> FakeRegistry:
    """Register on ``rt`` an agent that calls ``records.search`` once through the ``company``
    registry (a fake serving the records toolset with ``handler``), then answers: the run the
    call-depth tests start inside ``serving_registry_call``."""
    registry = FakeRegistry()
    registry.publish(provider_toolset(), handler)
    rt.register_registry("company", registry, registry)
    planner = ScriptedPlanner([calls(("records.search", {"query": "q"})), answer()])
    definition = records_definition(id=agent_id, specs=(), deferred_tool_ids=())
    sources = Sources(toolsets=[("company", "records", "", False)])
    rt.register_agent(definition.with_registry_tools(sources), planner=planner, executors={})
    return registry
