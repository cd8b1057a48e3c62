"""Model calls on Temporal: the run policy's ``model_timeout`` fails the run once (the planning
activity is not retried, so the model is not asked again against a new catalog), a timeout the
planning activity's own would preempt is refused before the run starts, and the outcome's usage
(unreported responses included) crosses the workflow's payloads, retried planning attempts'
model calls included."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from agentgen.runtime import ModelTimeoutError, RunError, Usage
from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.messages import Message, TextPart, ToolCallPart
from agentgen.runtime.model_client import ModelRequest, ModelResponse
from tests.engines.conftest import FAST, Harness
from tests.engines.test_durable import attempts, events
from tests.runtime.agents import records_definition, register
from tests.runtime.test_model_calls import Hanging

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_a_model_timeout_fails_the_durable_run_without_a_retry(durable: Harness) -> None:
    model = Hanging()
    rt = durable.runtime()
    rt.register_model("slow", model)
    rt.register_agent(records_definition(specs=()), planner=ModelPlanner("slow"), executors={})
    async with durable.serving(rt):
        with pytest.raises(ModelTimeoutError) as caught:
            await rt.client("test.agent").run(
                "go", run_id="model-timeout", policy=RunPolicy(model_timeout=0.3)
            )
    message = str(caught.value)
    assert "'test.agent' (run model-timeout)" in message
    assert "registered as 'slow'" in message and "0.3 seconds" in message
    assert (model.started, model.cancelled) == (1, 1)
    assert durable.env is not None
    assert attempts(await events(durable.env, "model-timeout")) == [1]


async def test_a_model_timeout_the_planning_timeout_would_preempt_is_refused(
    durable: Harness,
) -> None:
    model = Hanging()
    rt = durable.runtime()
    rt.register_model("slow", model)
    definition = records_definition(specs=(), policy=RunPolicy(model_timeout=600))
    rt.register_agent(definition, planner=ModelPlanner("slow"), executors={})
    assert durable.settings.planning_timeout == 600
    async with durable.serving(rt):
        with pytest.raises(RunError) as caught:
            await rt.client("test.agent").run("go", run_id="preempted-timeout")
        assert "is not shorter than TemporalSettings.planning_timeout (600 seconds)" in str(
            caught.value
        )
        assert not isinstance(caught.value, ModelTimeoutError)
        # Refused before the workflow started: there is no run of that ID.
        assert durable.env is not None
        with pytest.raises(Exception, match="not found"):
            await durable.env.client.get_workflow_handle("preempted-timeout").describe()
    assert model.started == 0


class Billed:
    """A tool call whose response reports its usage, then an answer whose response does not."""

    def __init__(self) -> None:
        self.replies = [
            ModelResponse(
                Message("assistant", (ToolCallPart("c1", "records.lookup", '{"id": "r1"}'),)),
                Usage(10, 5),
            ),
            ModelResponse(Message("assistant", (TextPart("done"),))),
        ]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return self.replies.pop(0)


async def test_the_runs_usage_crosses_the_durable_engine(harness: Harness) -> None:
    rt = harness.runtime()
    rt.register_model("billed", Billed())
    register(rt, ModelPlanner("billed"))  # type: ignore[arg-type]
    async with harness.serving(rt):
        outcome = await rt.client("test.agent").run("go")
    assert outcome.final_text == "done"
    assert outcome.usage == Usage(10, 5, unreported=1)
    assert not outcome.usage.complete


class FailsOnce:
    """Bills every response; the second call fails as a provider's connection reset would (a
    transient failure: Temporal retries the planning activity)."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.calls == 2:
            raise ConnectionError("connection reset by the provider")
        return ModelResponse(Message("assistant", (TextPart("draft"),)), Usage(10, 5))


class DraftThenAnswer:
    """A planner of its own that asks its model twice per planning step (a draft, then the
    answer)."""

    async def plan_start(self, input: PlanInput) -> PlanResult:
        model = input.agent.model("billed")
        for _ in range(2):
            await model.complete(ModelRequest("m", tuple(input.messages)))
        return PlanResult(Message("assistant", (TextPart("done"),)))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        raise AssertionError("the run has no tool calls to resume from")


async def test_a_retried_planning_attempt_s_model_calls_are_in_the_run_s_usage(
    durable: Harness,
) -> None:
    """Attempt 1 got one billed response and then failed; attempt 2 got two: the outcome
    counts the three (carried in the activity's heartbeat details), exactly."""
    model = FailsOnce()
    rt = durable.runtime()
    rt.register_model("billed", model)
    rt.register_agent(records_definition(specs=()), planner=DraftThenAnswer(), executors={})
    async with durable.serving(rt):
        outcome = await rt.client("test.agent").run("go", run_id="retried-usage")
    assert durable.env is not None
    assert attempts(await events(durable.env, "retried-usage")) == [2]  # its last attempt
    assert model.calls == 4  # one answered, one failed, then two answered
    assert outcome.usage == Usage(30, 15)
    assert outcome.usage.complete


class BilledThenStuckOnce:
    """A planner whose first attempt gets a billed response and then never finishes (Temporal
    ends it at the planning timeout and retries); the second attempt answers."""

    def __init__(self) -> None:
        self.started = 0

    async def plan_start(self, input: PlanInput) -> PlanResult:
        self.started += 1
        await input.agent.model("billed").complete(ModelRequest("m", tuple(input.messages)))
        if self.started == 1:
            await asyncio.Event().wait()
        return PlanResult(Message("assistant", (TextPart("done"),)))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        raise AssertionError("the run has no tool calls to resume from")


class AlwaysBilled:
    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(Message("assistant", (TextPart("draft"),)), Usage(10, 5))


async def test_an_attempt_ended_by_a_timeout_makes_the_usage_a_lower_bound(
    durable: Harness,
) -> None:
    """An attempt that never sent its final account (timed out, or its worker lost) may have
    had responses its last heartbeat did not carry: it counts one unreported response, so the
    outcome never looks complete while a cost may be missing."""
    planner = BilledThenStuckOnce()
    rt = Harness("temporal", durable.env, replace(FAST, planning_timeout=1.0)).runtime()
    rt.register_model("billed", AlwaysBilled())
    rt.register_agent(records_definition(specs=()), planner=planner, executors={})
    async with durable.serving(rt):
        outcome = await rt.client("test.agent").run("go", run_id="timed-out-usage")
    assert planner.started == 2
    assert outcome.usage.unreported == 1 and not outcome.usage.complete
    # The second attempt's response, and the first's if its heartbeat got through.
    assert outcome.usage.input_tokens in (10, 20)
