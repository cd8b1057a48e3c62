"""Property tests over random small designs, valid and invalid.

A design is generated as a plan (plain data), then built with the DSL twice: once with
callable bodies and once with ``with`` blocks. Whatever the plan, evaluation either returns a
tree or raises ``DesignErrors`` (never anything else), and both body forms give the same tree
or the same errors. Plans built only from valid choices always validate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentgen import dsl
from agentgen.dsl.dump import dump
from agentgen.dsl.errors import DesignErrors
from agentgen.dsl.expr import RegistryExpr, RootExpr, ToolsetExpr

Form = Literal["callable", "with"]

VALID_NAMES = ["records", "search", "lookup", "analyze", "billing", "notes"]
ANY_NAMES = [*VALID_NAMES, "", "Bad Name", "class", "x-y"]


@dataclass
class ToolPlan:
    name: str
    description: str | None


@dataclass
class ToolsetPlan:
    name: str | None
    tools: list[ToolPlan]
    registry: int | None = None  # index of a registry: FromRegistry(registry, name)


@dataclass
class UsePlan:
    kind: Literal["toolset", "registry", "inline"]
    index: int = 0
    inline: ToolsetPlan | None = None
    deferred: list[tuple[str, ...]] = field(default_factory=list)
    version: str | None = None
    subset: list[str] = field(default_factory=list)


@dataclass
class AgentPlan:
    name: str
    uses: list[UsePlan]


@dataclass
class ServicePlan:
    name: str
    agents: list[AgentPlan]


@dataclass
class Plan:
    registries: list[tuple[str, str | None]]
    toolsets: list[ToolsetPlan]
    services: list[ServicePlan]
    stray_deferred: bool = False


def build(plan: Plan, form: Form) -> None:
    """Run the plan's DSL calls; ``form`` chooses how bodies are given."""

    def scope(func: Any, *args: Any, body: Any) -> Any:
        """Call ``func(*args)`` with ``body`` as its trailing callable or its with block."""
        if form == "callable":
            return func(*args, body)
        expr = func(*args)
        with expr:
            body()
        return expr

    registries: list[RegistryExpr] = []
    for name, url in plan.registries:

        def registry_body(url: str | None = url) -> None:
            if url is not None:
                dsl.URL(url)

        registries.append(scope(dsl.Registry, name, body=registry_body))

    def tools_body(tools: list[ToolPlan]) -> Any:
        def body() -> None:
            for tool in tools:
                if tool.description is None:
                    dsl.Tool(tool.name)
                else:
                    dsl.Tool(tool.name, tool.description)

        return body

    toolsets: list[ToolsetExpr] = []
    for ts in plan.toolsets:
        if ts.registry is not None and registries:
            registry = registries[ts.registry % len(registries)]
            toolsets.append(dsl.Toolset(dsl.FromRegistry(registry, ts.name or "")))
        else:
            toolsets.append(scope(dsl.Toolset, ts.name or "", body=tools_body(ts.tools)))

    def use_body(use: UsePlan) -> Any:
        def body() -> None:
            if use.inline is not None:
                tools_body(use.inline.tools)()
            for name in use.subset:
                dsl.Tool(name)
            for names in use.deferred:
                dsl.Deferred(*names)
            if use.version is not None:
                dsl.Version(use.version)

        return body

    def agent_body(agent: AgentPlan) -> Any:
        def body() -> None:
            for use in agent.uses:
                target: Any
                if use.kind == "inline":
                    target = use.inline.name if use.inline and use.inline.name else ""
                elif use.kind == "registry":
                    target = registries[use.index % len(registries)] if registries else None
                else:
                    target = toolsets[use.index % len(toolsets)] if toolsets else None
                scope(dsl.Use, target, body=use_body(use))

        return body

    for service in plan.services:

        def service_body(service: ServicePlan = service) -> None:
            for agent in service.agents:
                scope(dsl.Agent, agent.name, "An agent.", body=agent_body(agent))

        scope(dsl.Service, service.name, body=service_body)
    if plan.stray_deferred:
        dsl.Deferred()


def outcome(plan: Plan, form: Form) -> tuple[str, Any]:
    try:
        root = dsl.evaluate(lambda: build(plan, form), file="design.py")
    except DesignErrors as exc:
        # Messages that cite other lines differ between the forms only by those numbers.
        return "errors", [re.sub(r"\d+", "N", f"{e.where}: {e.message}") for e in exc.errors]
    return "ok", dump(root)


# --------------------------------------------------------------------------- strategies

names = st.sampled_from(ANY_NAMES)
descriptions = st.one_of(st.none(), st.sampled_from(["Does a thing.", ""]))
tool_plans = st.builds(ToolPlan, names, descriptions)
toolset_plans = st.builds(
    ToolsetPlan,
    st.one_of(st.none(), names),
    st.lists(tool_plans, max_size=3),
    st.one_of(st.none(), st.integers(0, 2)),
)
deferred_calls = st.lists(st.lists(names, max_size=2).map(tuple), max_size=3)
use_plans = st.builds(
    UsePlan,
    st.sampled_from(["toolset", "registry", "inline"]),
    st.integers(0, 5),
    st.one_of(st.none(), toolset_plans),
    deferred_calls,
    st.one_of(st.none(), st.sampled_from(["1.0", "", " 2"])),
    st.lists(names, max_size=2),
)
agent_plans = st.builds(AgentPlan, names, st.lists(use_plans, max_size=3))
service_plans = st.builds(ServicePlan, names, st.lists(agent_plans, max_size=2))
any_plans = st.builds(
    Plan,
    st.lists(
        st.tuples(names, st.one_of(st.none(), st.sampled_from(["https://r.example", "nope"]))),
        max_size=2,
    ),
    st.lists(toolset_plans, max_size=3),
    st.lists(service_plans, max_size=2),
    st.booleans(),
)


@st.composite
def valid_plans(draw: st.DrawFn) -> Plan:
    """Plans that break no rule: unique names, known Deferred names, no mixed selections."""
    registry_names = draw(st.lists(st.sampled_from(VALID_NAMES), unique=True, max_size=2))
    registries = [(name, "https://registry.example") for name in registry_names]
    toolset_names = draw(st.lists(st.sampled_from(VALID_NAMES), unique=True, max_size=4))
    toolsets: list[ToolsetPlan] = []
    for index, name in enumerate(toolset_names):
        if registries and index % 2 == 1:
            toolsets.append(ToolsetPlan(name, [], registry=index))
            continue
        tool_names = draw(st.lists(st.sampled_from(VALID_NAMES), unique=True, min_size=1))
        toolsets.append(ToolsetPlan(name, [ToolPlan(t, "Does a thing.") for t in tool_names]))
    services: list[ServicePlan] = []
    for service_name in draw(st.lists(st.sampled_from(VALID_NAMES), unique=True, max_size=2)):
        agents: list[AgentPlan] = []
        for agent_name in draw(st.lists(st.sampled_from(VALID_NAMES), unique=True, max_size=2)):
            indexes = draw(st.lists(st.integers(0, max(len(toolsets) - 1, 0)), unique=True))
            uses: list[UsePlan] = []
            for index in indexes if toolsets else []:
                plan = toolsets[index]
                if plan.registry is not None:
                    deferred = [()] * draw(st.integers(0, 2))
                    uses.append(
                        UsePlan(
                            "toolset",
                            index,
                            deferred=deferred,
                            version=draw(st.one_of(st.none(), st.just("1.2.3"))),
                        )
                    )
                    continue
                tool_names = [t.name for t in plan.tools]
                if draw(st.booleans()):
                    uses.append(UsePlan("toolset", index, deferred=[()] * draw(st.integers(0, 2))))
                else:
                    chosen = draw(st.lists(st.sampled_from(tool_names), unique=True))
                    split = draw(st.integers(0, len(chosen)))
                    calls = [tuple(chosen[:split]), tuple(chosen[split:])]
                    uses.append(UsePlan("toolset", index, deferred=[c for c in calls if c]))
            agents.append(AgentPlan(agent_name, uses))
        services.append(ServicePlan(service_name, agents))
    return Plan(registries, toolsets, services)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_plans)
def test_any_design_validates_or_reports_design_errors_only(plan: Plan) -> None:
    with_callables = outcome(plan, "callable")
    with_blocks = outcome(plan, "with")
    event(with_callables[0])
    assert with_callables == with_blocks


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_plans())
def test_valid_designs_validate(plan: Plan) -> None:
    root = dsl.evaluate(lambda: build(plan, "callable"), file="design.py")
    assert isinstance(root, RootExpr)
    assert len(root.toolsets) == len(plan.toolsets)
    for agent in root.agents():
        for use in agent.uses:
            if isinstance(use.target, ToolsetExpr) and not use.target.is_registry:
                names = [t.name for t in use.target.tools]
                assert set(use.resolved_deferred) <= set(names)
                assert use.resolved_deferred == sorted(use.resolved_deferred)
                if use.defers_all:
                    assert sorted(names) == use.resolved_deferred
            else:
                assert use.resolved_deferred == []
    assert outcome(plan, "with") == outcome(plan, "callable")
