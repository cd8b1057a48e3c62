"""A run's usage counts its child runs' (agents exposed as tools), on both engines: a child that
answered, and a child that failed, whose responses were billed all the same. Where a durable
child run ended without saying what it cost (terminated, or its planning activity timed out),
the parent's usage is a lower bound (``unreported``), never a count that looks complete."""

from __future__ import annotations

import asyncio
import importlib
import json
from dataclasses import replace
from typing import Any

import pytest

from agentgen.runtime import Usage
from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.app import Runtime
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import ModelRequest, ModelResponse
from agentgen.runtime.runs.requests import RunError, RunOutcome
from tests.engines.conftest import FAST, Harness
from tests.runtime.agents import ScriptedPlanner, answer, calls

pytestmark = pytest.mark.asyncio(loop_scope="session")

sink = importlib.import_module("tests.runtime.sink_agents")

#: What each response of the parent's model and of the child's cost.
PARENT, CHILD = Usage(1, 1), Usage(10, 5)


class Billed:
    """Every response reports ``usage``; a reply ``hang`` (its number, from 1) never comes."""

    def __init__(self, usage: Usage, hang: int = 0) -> None:
        self.usage = usage
        self.hang = hang
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.calls == self.hang:
            await asyncio.Event().wait()
        return ModelResponse(Message("assistant", (TextPart("draft"),)), self.usage)


class Triage(ScriptedPlanner):
    """The parent: asks its model before each scripted reply (asks the expert, then answers)."""

    def __init__(self) -> None:
        super().__init__([calls(("ask_expert.ask", {"question": "q"})), answer("relayed")])

    async def plan_start(self, input: PlanInput) -> PlanResult:
        await input.agent.model("parent").complete(ModelRequest("m", tuple(input.messages)))
        return await super().plan_start(input)

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        await input.agent.model("parent").complete(ModelRequest("m", tuple(input.messages)))
        return await super().plan_resume(input)


class Expert:
    """The child: asks its model once per step. Its first reply calls a tool it does not have
    (refused: the run goes on), its second answers, or fails as ``fails`` says: ``gives_up``
    raises an error of its own after the model answered, ``model_timeout`` is a second model
    call that never answers (the runtime's model timeout fails the run), ``hangs`` never
    returns (the engine ends it)."""

    def __init__(self, fails: str = "") -> None:
        self.fails = fails
        self.run_ids: list[str] = []
        self.started = asyncio.Event()

    async def plan_start(self, input: PlanInput) -> PlanResult:
        self.run_ids.append(input.run.run_id)
        await input.agent.model("child").complete(ModelRequest("m", tuple(input.messages)))
        return PlanResult(Message("assistant", (ToolCallPart("x1", "no.such_tool", "{}"),)))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        model = input.agent.model("child")
        await model.complete(ModelRequest("m", tuple(input.messages)))
        if self.fails == "gives_up":
            raise RunError("the expert gave up")
        if self.fails == "model_timeout":
            await model.complete(ModelRequest("m", tuple(input.messages)))
        if self.fails == "hangs":
            self.started.set()
            await asyncio.Event().wait()
        value = {"answer": "42"}
        return PlanResult(Message("assistant", (TextPart("done"),)), final_value=value)


def _runtime(harness: Harness, expert: Expert, child_model: Billed, **kwargs: Any) -> Runtime:
    rt = harness.runtime(**kwargs)
    rt.register_model("parent", Billed(PARENT))
    rt.register_model("child", child_model)
    rt.register_agent(sink.expert_definition(), planner=expert, executors={})
    rt.register_agent(sink.triage_definition(), planner=Triage(), executors={})
    return rt


def _agent_tool_result(outcome: RunOutcome) -> dict[str, Any]:
    result = outcome.transcript[2].parts[0]
    assert isinstance(result, ToolResultPart)
    parsed: dict[str, Any] = json.loads(result.content)
    return parsed


async def test_a_child_run_s_usage_is_in_its_parent_s(harness: Harness) -> None:
    rt = _runtime(harness, Expert(), Billed(CHILD))
    async with harness.serving(rt):
        outcome = await rt.client("helpdesk.triage").run("ask")
    assert _agent_tool_result(outcome) == {"answer": "42"}
    # The parent's two responses and the child's two.
    assert outcome.usage == Usage(22, 12)
    assert outcome.usage.complete


@pytest.mark.parametrize("fails", ["gives_up", "model_timeout"])
async def test_a_failed_child_run_s_usage_is_in_its_parent_s(harness: Harness, fails: str) -> None:
    """The child's first step answered, its second got a billed response and failed: both
    responses are counted, exactly (on Temporal, the failures carry them to the parent)."""
    model = Billed(CHILD, hang=3)
    rt = _runtime(harness, Expert(fails), model, policy=RunPolicy(model_timeout=0.5))
    async with harness.serving(rt):
        outcome = await rt.client("helpdesk.triage").run("ask")
    error = _agent_tool_result(outcome)["error"]
    assert error["kind"] == "agent_failed"
    expected = "RunError: the expert gave up" if fails == "gives_up" else "ModelTimeoutError"
    assert expected in error["message"]
    assert outcome.final_text == "relayed"
    assert outcome.usage == Usage(22, 12)
    assert outcome.usage.complete


async def test_a_terminated_child_run_makes_its_parent_s_usage_a_lower_bound(
    durable: Harness,
) -> None:
    """A child workflow terminated while it ran says nothing of what it cost: the parent's
    usage counts one unreported response for it."""
    expert = Expert("hangs")
    harness = replace(durable, settings=replace(FAST, heartbeat_timeout=0.5))
    rt = _runtime(harness, expert, Billed(CHILD))
    assert durable.env is not None
    async with harness.serving(rt):
        running = asyncio.create_task(rt.client("helpdesk.triage").run("ask"))
        await asyncio.wait_for(expert.started.wait(), 30)
        await durable.env.client.get_workflow_handle(expert.run_ids[0]).terminate("test")
        outcome = await asyncio.wait_for(running, 30)
    error = _agent_tool_result(outcome)["error"]
    assert error["kind"] == "agent_failed" and "Terminated" in error["message"]
    # The parent's own two responses; the child's are unknown.
    assert outcome.usage == Usage(2, 2, unreported=1)
    assert not outcome.usage.complete


async def test_a_child_run_whose_planning_timed_out_makes_its_parent_s_usage_a_lower_bound(
    durable: Harness,
) -> None:
    """The child's planning activity timed out (no retry left): its last heartbeat's usage
    counts, and one unreported response for what it may have missed."""
    expert = Expert("hangs")
    settings = replace(FAST, planning_timeout=1.5, heartbeat_timeout=0.3, retry_maximum_attempts=1)
    harness = replace(durable, settings=settings)
    rt = _runtime(harness, expert, Billed(CHILD))
    async with harness.serving(rt):
        outcome = await rt.client("helpdesk.triage").run("ask")
    error = _agent_tool_result(outcome)["error"]
    assert error["kind"] == "agent_failed" and "TimeoutError" in error["message"]
    # The parent's two responses, the child's first step's, and its second step's (its
    # heartbeats carried it), but what the timed-out attempt did afterwards is not known.
    assert outcome.usage == Usage(22, 12, unreported=1)
    assert not outcome.usage.complete
