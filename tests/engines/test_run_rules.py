"""What a run allows and how it ends, the same on both engines: registry tools' required labels,
tag clauses, the tool-call budget (refused calls included), failed child runs named in their
parent's outcome, and labels no planner can change."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from agentgen.runtime.agents.definition import RunPolicy, TagClause
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.app import Runtime
from agentgen.runtime.messages import Message, ToolCallPart
from agentgen.runtime.registry.client import ToolCallMeta
from agentgen.runtime.runs.loop import REFUSED_CALLS_IN_A_ROW
from agentgen.runtime.runs.requests import RunError
from examples.records.gen.assistant.toolsets.records import specs as records_specs
from tests.engines.conftest import Harness
from tests.engines.test_scenarios import error_of
from tests.runtime.agents import (
    Records,
    ScriptedPlanner,
    Sources,
    answer,
    calls,
    echo_handler,
    provider_toolset,
    records_definition,
    register,
)
from tests.runtime.fake_registry import FakeRegistry
from tests.runtime.sink_agents import expert_definition, triage_definition

pytestmark = pytest.mark.asyncio(loop_scope="session")


def tenant_toolset() -> Any:
    """The records tools as registry toolset ``remote``; its lookup requires label ``tenant``."""
    toolset = provider_toolset("remote", None)
    tools = [
        tool.model_copy(
            update={
                "consumer_contract": tool.consumer_contract.model_copy(
                    update={"required_labels": ["tenant"]}
                )
            }
        )
        if tool.name == "remote.lookup"
        else tool
        for tool in toolset.tools
    ]
    return toolset.model_copy(update={"tools": tools})


async def test_a_registry_tool_is_withheld_from_a_run_without_its_required_labels(
    harness: Harness,
) -> None:
    seen: list[tuple[str, dict[str, str]]] = []

    async def handler(tool: str, payload: Any, meta: ToolCallMeta) -> Any:
        seen.append((tool, dict(meta.labels)))
        return {"id": payload["id"], "title": "tenant data", "body": "..."}

    registry = FakeRegistry()
    registry.publish(tenant_toolset(), handler)
    rt = harness.runtime()
    rt.register_registry("company", registry, registry)
    lookup = ("remote.lookup", {"id": "r1"})
    planner = ScriptedPlanner([calls(lookup), answer(), calls(lookup, prefix="d"), answer()])
    definition = records_definition(specs=()).with_registry_tools(
        Sources(toolsets=[("company", "remote", "", False)])
    )
    register(rt, planner, definition)
    async with harness.serving(rt):
        refused = await rt.client("test.agent").run("go", labels={"tenant": ""})
        allowed = await rt.client("test.agent").run("go", labels={"tenant": "acme", "user": "u1"})

    # Not offered, refused when called anyway (naming the tool and the label), never admitted.
    assert [d.id for d in planner.seen[0]] == ["remote.search", "remote.analyze"]
    error = error_of(refused.transcript[2].parts[0])
    assert error["kind"] == "not_permitted"
    assert (
        "'remote.lookup' requires run labels this run does not have: tenant" in (error["message"])
    )
    assert refused.tool_calls == 0
    # A run with the label gets the tool, and its provider exactly the labels it requires.
    assert [d.id for d in planner.seen[2]] == ["remote.lookup", "remote.search", "remote.analyze"]
    assert seen == [("remote.lookup", {"tenant": "acme"})]
    assert json.loads(allowed.transcript[2].parts[0].content)["title"] == "tenant data"  # type: ignore[union-attr]
    assert [call[0] for call in registry.calls] == ["remote.lookup"]


def tagged_definition() -> Any:
    tags = {"records.lookup": ("read",), "records.search": ("read",), "records.analyze": ("admin",)}
    specs = tuple(replace(s, tags=tags[s.id]) for s in records_specs.SPECS)
    return records_definition(specs=specs)


async def test_a_tag_clause_given_a_list_denies_its_tags(harness: Harness) -> None:
    rt = harness.runtime()
    planner = ScriptedPlanner([calls(("records.analyze", {"ids": ["r1"]})), answer()])
    executor = register(rt, planner, tagged_definition())
    policy = RunPolicy(tag_clauses=(TagClause(denied_any=["admin"]),))  # type: ignore[arg-type]
    async with harness.serving(rt):
        outcome = await rt.client("test.agent").run("go", policy=policy)
    assert [d.id for d in planner.seen[0]] == ["records.lookup", "records.search"]
    assert error_of(outcome.transcript[2].parts[0])["kind"] == "not_permitted"
    assert executor.calls == []


class Answering(ScriptedPlanner):
    """Calls ``tool`` (a tool it may not call) until its activity is final-answer-only, then
    answers, as a planner honouring ``finalize`` does."""

    def __init__(self, tool: str = "records.delete") -> None:
        super().__init__([])
        self.tool = tool

    def _next(self, input: PlanInput) -> PlanResult:
        self.inputs.append(input)
        self.seen.append(input.agent.advertised_tool_definitions())
        if input.finalize:
            return PlanResult(answer("final"))
        call = ToolCallPart(f"c{len(self.inputs)}", self.tool, "{}")
        return PlanResult(Message("assistant", (call,)))


async def test_refused_calls_use_the_tool_call_budget(harness: Harness) -> None:
    rt = harness.runtime()
    planner = Answering()
    register(rt, planner)
    async with harness.serving(rt):
        outcome = await rt.client("test.agent").run("go", policy=RunPolicy(max_tool_calls=2))
    assert [i.finalize for i in planner.inputs] == [False, False, True]
    assert outcome.final_text == "final" and outcome.tool_calls == 0
    kinds = [error_of(m.parts[0])["kind"] for m in outcome.transcript if m.role == "tool"]
    assert kinds == ["not_permitted", "not_permitted"]


async def test_a_run_without_limits_ends_after_refused_calls_in_a_row(harness: Harness) -> None:
    rt = harness.runtime()
    planner = Answering()
    register(rt, planner)
    async with harness.serving(rt):
        outcome = await rt.client("test.agent").run("go")
    assert len(planner.inputs) == REFUSED_CALLS_IN_A_ROW + 1
    assert [i.finalize for i in planner.inputs][-2:] == [False, True]
    assert outcome.final_text == "final"


async def test_a_run_with_a_budget_of_0_starts_final_answer_only(harness: Harness) -> None:
    registry = FakeRegistry()
    registry.publish(provider_toolset("remote"), echo_handler)
    rt = harness.runtime()
    rt.register_registry("company", registry, registry)
    planner = Answering()
    sources = Sources(toolsets=[("company", "remote", "", False)])
    register(rt, planner, records_definition().with_registry_tools(sources))
    async with harness.serving(rt):
        outcome = await rt.client("test.agent").run("go", policy=RunPolicy(max_tool_calls=0))
    (only,) = planner.inputs
    assert only.finalize and not isinstance(only, PlanResumeInput)
    # It reads no registry and describes only the compiled tools.
    assert registry.resolves == []
    assert [d.id for d in planner.seen[0]] == [s.id for s in records_specs.SPECS]
    assert [m.role for m in outcome.transcript] == ["user", "assistant"]
    assert outcome.final_text == "final"


async def test_calls_in_a_first_activity_that_is_final_answer_only_fail_the_run(
    harness: Harness,
) -> None:
    rt = harness.runtime()
    executor = register(rt, ScriptedPlanner([calls(("records.lookup", {"id": "1"}))]))
    async with harness.serving(rt):
        with pytest.raises(RunError, match="final-answer-only activity"):
            await rt.client("test.agent").run("go", policy=RunPolicy(max_tool_calls=0))
    assert executor.calls == []


class FailingExpert:
    """A child run's planner that fails its run, after saying which run it was."""

    def __init__(self) -> None:
        self.run_ids: list[str] = []

    async def plan_start(self, input: PlanInput) -> PlanResult:
        self.run_ids.append(input.run.run_id)
        raise RunError("the expert's model is misconfigured")

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        raise AssertionError("never resumed")


async def test_a_failed_child_run_is_named_in_its_parent_s_outcome(harness: Harness) -> None:
    rt = harness.runtime()
    expert = FailingExpert()
    triage = ScriptedPlanner([calls(("ask_expert.ask", {"question": "q"})), answer("relayed")])
    rt.register_agent(triage_definition(), planner=triage, executors={})
    rt.register_agent(expert_definition(), planner=expert, executors={})
    async with harness.serving(rt):
        outcome = await rt.client("helpdesk.triage").run("go")
    (child,) = expert.run_ids
    assert outcome.child_runs == (child,)
    error = error_of(outcome.transcript[2].parts[0])
    assert error["kind"] == "agent_failed"
    assert error["message"] == (
        f"agent helpdesk.expert (child run {child}) failed: "
        "RunError: the expert's model is misconfigured"
    )
    assert outcome.final_text == "relayed"
    if harness.env is not None:
        described = await harness.env.client.get_workflow_handle(child).describe()
        assert described.status is not None and described.status.name == "FAILED"


class Relabelling(ScriptedPlanner):
    """A planner that tries to change the run's labels (a helper "normalising" them)."""

    def __init__(self, turns: list[Message]) -> None:
        super().__init__(turns)
        self.refused: list[bool] = []

    def _next(self, input: PlanInput) -> PlanResult:
        try:
            input.run.labels["tenant"] = "someone-else"  # type: ignore[index]
        except TypeError:
            self.refused.append(True)
        else:
            self.refused.append(False)
        return super()._next(input)


async def test_no_planner_can_change_the_run_s_labels(harness: Harness) -> None:
    rt = harness.runtime()
    planner = Relabelling([calls(("records.lookup", {"id": "r1"})), answer()])
    executor = register(rt, planner, executor=Records())
    async with harness.serving(rt):
        await rt.client("test.agent").run("go", labels={"tenant": "acme"})
    assert planner.refused == [True, True]
    assert [dict(context.labels) for _, _, context in executor.calls] == [{"tenant": "acme"}]


async def test_refusals_between_accepted_calls_do_not_end_a_run() -> None:
    """Only refused calls in a row count towards the bound: one that ran starts it again."""
    rt = Runtime()
    turns = []
    for i in range(2):
        turns += [calls(("records.delete", {}), prefix=f"x{i}_{n}") for n in range(9)]
        turns.append(calls(("records.lookup", {"id": "r1"}), prefix=f"ok{i}"))
    planner = ScriptedPlanner([*turns, answer("by itself")])
    register(rt, planner)
    outcome = await rt.client("test.agent").run("go")
    assert not any(i.finalize for i in planner.inputs)
    assert outcome.final_text == "by itself" and outcome.tool_calls == 2
    assert [m.role for m in outcome.transcript].count("tool") == 20
