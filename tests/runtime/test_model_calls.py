"""Model calls under the run policy (in memory): ``model_timeout`` cancels a call that hangs and
fails the run by name, and a run's outcome sums what its model calls reported, saying when a
response reported nothing (``Usage.unreported``) instead of counting it as 0 tokens."""

from __future__ import annotations

import asyncio
import contextlib
import math

import pytest

from agentgen.runtime import ModelTimeoutError, RunError, Usage, run_usage
from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput, RunContext
from agentgen.runtime.app import Runtime
from agentgen.runtime.messages import Message, TextPart
from agentgen.runtime.model_client import (
    USAGE_METADATA_KEY,
    ModelError,
    ModelRequest,
    ModelResponse,
)
from agentgen.runtime.runs.model_calls import UsageMeter
from agentgen.runtime.runs.plan_step import plan
from agentgen.runtime.runs.policy import merge
from agentgen.runtime.runs.steps import PlanTask
from agentgen.runtime.testing import Answer, Call, ScriptedModel
from agentgen.runtime.trace import events
from tests.runtime.agents import records_definition, register


class Hanging:
    """A model client whose answer never comes (an event nobody sets)."""

    def __init__(self) -> None:
        self.never = asyncio.Event()
        self.started = 0
        self.cancelled = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.started += 1
        try:
            await self.never.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("the event is never set")


def _runtime(
    model: object, *, policy: RunPolicy | None = None, agent_policy: RunPolicy | None = None
) -> Runtime:
    rt = Runtime(policy=policy)
    rt.register_model("slow", model)  # type: ignore[arg-type]
    definition = records_definition(specs=(), policy=agent_policy or RunPolicy())
    rt.register_agent(definition, planner=ModelPlanner("slow", model="slow-1"), executors={})
    return rt


async def test_a_model_call_longer_than_the_policy_is_cancelled_and_fails_the_run() -> None:
    model = Hanging()
    rt = _runtime(model)
    with pytest.raises(ModelTimeoutError) as caught:
        await rt.client("test.agent").run(
            "go", run_id="run-7", policy=RunPolicy(model_timeout=0.05)
        )
    message = str(caught.value)
    for said in ("'test.agent'", "run-7", "'slow-1'", "registered as 'slow'", "0.05 seconds"):
        assert said in message
    assert "RunPolicy(model_timeout=...)" in message
    assert isinstance(caught.value, RunError)
    assert (model.started, model.cancelled) == (1, 1)


async def test_the_strictest_of_the_agent_runtime_and_run_policies_applies() -> None:
    assert (
        merge(RunPolicy(model_timeout=5), RunPolicy(), RunPolicy(model_timeout=0.5)).model_timeout
        == 0.5
    )
    assert merge(RunPolicy(), RunPolicy()).model_timeout is None
    # The agent's own policy bounds the run although the run asks for nothing.
    model = Hanging()
    rt = _runtime(
        model, policy=RunPolicy(model_timeout=60), agent_policy=RunPolicy(model_timeout=0.05)
    )
    with pytest.raises(ModelTimeoutError, match="0.05 seconds"):
        await rt.client("test.agent").run("go")
    assert model.cancelled == 1


async def test_a_planner_of_its_own_is_bounded_too() -> None:
    model = Hanging()

    class Direct:
        async def plan_start(self, input: PlanInput) -> PlanResult:
            client = input.agent.model("slow")
            response = await client.complete(ModelRequest("direct", tuple(input.messages)))
            return PlanResult(response.message)

        async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
            raise AssertionError("one activity")

    rt = Runtime()
    rt.register_model("slow", model)
    rt.register_agent(records_definition(specs=()), planner=Direct(), executors={})
    with pytest.raises(ModelTimeoutError, match="model 'direct' through the client registered"):
        await rt.client("test.agent").run("go", policy=RunPolicy(model_timeout=0.05))
    assert model.cancelled == 1


async def test_a_client_that_swallows_the_cancellation_still_fails_the_run() -> None:
    class Stubborn:
        async def complete(self, request: ModelRequest) -> ModelResponse:
            with contextlib.suppress(asyncio.CancelledError):  # answers late instead
                await asyncio.Event().wait()
            return ModelResponse(Message("assistant", (TextPart("late"),)), Usage(1, 1))

    rt = _runtime(Stubborn())
    with pytest.raises(ModelTimeoutError):
        await rt.client("test.agent").run("go", policy=RunPolicy(model_timeout=0.05))


async def test_the_clients_own_timeout_is_not_taken_for_the_policys() -> None:
    class Quick:
        async def complete(self, request: ModelRequest) -> ModelResponse:
            raise TimeoutError("the SDK's read timeout")

    rt = _runtime(Quick())
    with pytest.raises(TimeoutError, match="the SDK's read timeout") as caught:
        await rt.client("test.agent").run("go", policy=RunPolicy(model_timeout=30))
    assert not isinstance(caught.value, ModelTimeoutError)


async def test_calls_within_the_limit_are_unchanged() -> None:
    model = ScriptedModel([Answer("fine")])
    rt = _runtime(model)
    outcome = await rt.client("test.agent").run("go", policy=RunPolicy(model_timeout=30))
    assert outcome.final_text == "fine"


async def test_a_child_run_that_times_out_is_its_parents_agent_failed_tool_error() -> None:
    import importlib
    import json

    from agentgen.runtime.messages import ToolResultPart
    from tests.runtime.agents import ScriptedPlanner, answer, calls

    sink = importlib.import_module("tests.runtime.sink_agents")
    model = Hanging()
    # The runtime's policy bounds every run, child runs included (a run's own policy does not
    # pass to its children, as for every RunPolicy field).
    rt = Runtime(policy=RunPolicy(model_timeout=0.05))
    rt.register_model("expert", model)
    rt.register_agent(sink.expert_definition(), planner=ModelPlanner("expert"), executors={})
    planner = ScriptedPlanner([calls(("ask_expert.ask", {"question": "q"})), answer("relayed")])
    rt.register_agent(sink.triage_definition(), planner=planner, executors={})
    outcome = await rt.client("helpdesk.triage").run("ask")
    assert outcome.final_text == "relayed"
    result = outcome.transcript[2].parts[0]
    assert isinstance(result, ToolResultPart) and result.is_error
    error = json.loads(result.content)["error"]
    assert error["kind"] == "agent_failed"
    (child,) = outcome.child_runs
    assert error["message"].startswith(
        f"agent helpdesk.expert (child run {child}) failed: ModelTimeoutError: agent "
        f"'helpdesk.expert' (run {child})"
    )
    assert model.cancelled == 1


@pytest.mark.parametrize(
    ("value", "error"),
    [
        *((value, ValueError) for value in (0, -1, 0.0, math.nan, math.inf, 0.0009, 1e-10)),
        *((value, TypeError) for value in (True, "5", [5])),
    ],
)
def test_model_timeout_must_be_positive_finite_seconds(
    value: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match="model_timeout must be None or a positive, finite"):
        RunPolicy(model_timeout=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [None, 1, 0.25, 86400, 0.001])
def test_model_timeout_takes_seconds(value: float | None) -> None:
    assert RunPolicy(model_timeout=value).model_timeout == value


async def test_an_engine_limit_at_or_under_the_model_timeout_is_refused() -> None:
    rt = _runtime(ScriptedModel([Answer("asked once")]))
    task = PlanTask(
        RunContext(run_id="run-3", agent_id="test.agent"),
        RunPolicy(model_timeout=30),
        (Message("user", (TextPart("go"),)),),
    )
    with pytest.raises(RunError) as caught:
        await plan(rt, task, limit=("TemporalSettings.planning_timeout", 30.0))
    message = str(caught.value)
    assert "'test.agent' (run run-3)" in message
    assert "model_timeout of 30 seconds is not shorter than" in message
    assert "TemporalSettings.planning_timeout (30 seconds)" in message
    planned = await plan(rt, task, limit=("TemporalSettings.planning_timeout", 31.0))
    assert planned.message.text == "asked once"


# --- usage ------------------------------------------------------------------------------------


class Silent:
    """A client whose responses say nothing about usage (``ModelResponse``'s default)."""

    def __init__(self, *replies: Message) -> None:
        self.replies = list(replies)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(self.replies.pop(0))


async def test_the_outcome_sums_the_runs_usage() -> None:
    rt = Runtime()
    model = ScriptedModel(
        [[Call("records.lookup", {"id": "r1"})], Answer("done")], usage=Usage(10, 5)
    )
    rt.register_model("m", model)
    register(rt, planner=ModelPlanner("m"))  # type: ignore[arg-type]
    outcome = await rt.client("test.agent").run("go")
    assert outcome.usage == Usage(20, 10)
    assert outcome.usage.complete


async def test_a_response_without_usage_is_counted_as_unreported_not_as_zero() -> None:
    rt = _runtime(Silent(Message("assistant", (TextPart("fine"),))))
    outcome = await rt.client("test.agent").run("go")
    assert outcome.usage == Usage(0, 0, unreported=1)
    assert not outcome.usage.complete
    assert outcome.transcript[-1].metadata[USAGE_METADATA_KEY] == {
        "model": "slow-1",
        "input_tokens": 0,
        "output_tokens": 0,
        "unreported_responses": 1,
    }
    [total] = [event for event in events(outcome) if event.kind == "usage"]
    assert total.text == (
        "at least 0 input + 0 output tokens, the sum of 1 model response (not reported); "
        "1 provider response reported no usage, and what it cost is not counted"
    )


async def test_a_genuine_zero_is_reported() -> None:
    class Zero:
        async def complete(self, request: ModelRequest) -> ModelResponse:
            return ModelResponse(Message("assistant", (TextPart("free"),)), Usage(0, 0))

    outcome = await _runtime(Zero()).client("test.agent").run("go")
    assert outcome.usage == Usage(0, 0) and outcome.usage.complete
    assert "unreported_responses" not in outcome.transcript[-1].metadata[USAGE_METADATA_KEY]
    [total] = [event for event in events(outcome) if event.kind == "usage"]
    assert total.text == "0 input + 0 output tokens, the sum of 1 model response (0 + 0)"


def test_usage_adds_up_across_responses_and_keeps_the_unreported_ones() -> None:
    total = Usage(10, 5) + Usage.not_reported() + Usage(1, 2, unreported=2)
    assert total == Usage(11, 7, unreported=3)
    assert Usage() + Usage(3, 4) == Usage(3, 4)
    assert Usage(3, 4).complete and not Usage.not_reported().complete


def _reply(usage: dict[str, object]) -> Message:
    return Message("assistant", (TextPart("x"),), {USAGE_METADATA_KEY: usage})


def test_the_trace_says_the_totals_are_a_lower_bound() -> None:
    reported = _reply({"model": "m", "input_tokens": 10, "output_tokens": 5})
    silent = _reply(
        {"model": "m", "input_tokens": 0, "output_tokens": 0, "unreported_responses": 1}
    )
    partly = _reply(
        {"model": "m", "input_tokens": 3, "output_tokens": 4, "unreported_responses": 2}
    )
    [one] = [e for e in events([reported, silent]) if e.kind == "usage"]
    assert one.text == (
        "at least 10 input + 5 output tokens, the sum of 2 model responses (10 + 5, not "
        "reported); 1 provider response reported no usage, and what it cost is not counted"
    )
    [three] = [e for e in events([reported, silent, partly]) if e.kind == "usage"]
    assert three.text == (
        "at least 13 input + 9 output tokens, the sum of 3 model responses (10 + 5, not "
        "reported, 3 + 4 and 2 not reported); 3 provider responses reported no usage, and "
        "what they cost is not counted"
    )
    assert [u.unreported for u in three.usage] == [0, 1, 2]


@pytest.mark.parametrize("key", ["input_tokens", "output_tokens"])
@pytest.mark.parametrize("count", [-5, True, 1.0, "1", None])
def test_a_malformed_token_count_is_named(key: str, count: object) -> None:
    # -5 and true were shown as "-5 input + 1 output tokens".
    from agentgen.runtime.trace import TraceError

    broken = _reply({"model": "m", "input_tokens": 1, "output_tokens": 1, key: count})
    with pytest.raises(TraceError, match="message 0 .assistant.: 'agentgen.usage' is malformed"):
        events([broken])


@pytest.mark.parametrize("count", [-1, "1", 1.0, None])
def test_a_malformed_unreported_count_is_named(count: object) -> None:
    from agentgen.runtime.trace import TraceError

    broken = _reply(
        {"model": "m", "input_tokens": 1, "output_tokens": 1, "unreported_responses": count}
    )
    with pytest.raises(TraceError, match="message 0 .assistant.: 'agentgen.usage' is malformed"):
        events([broken])


async def test_a_client_that_turns_the_cancellation_into_its_own_error_still_times_out() -> None:
    # An SDK may report its cancelled request as "request aborted": that error hid that the
    # policy's limit had fired.
    from agentgen.runtime.model_client import ModelError

    class Aborting:
        async def complete(self, request: ModelRequest) -> ModelResponse:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                raise ModelError("request aborted") from None
            raise AssertionError("the event is never set")

    rt = _runtime(Aborting())
    with pytest.raises(ModelTimeoutError, match="model_timeout of 0.05 seconds") as caught:
        await rt.client("test.agent").run("go", policy=RunPolicy(model_timeout=0.05))
    assert str(caught.value.__cause__) == "request aborted"


async def test_what_a_timed_out_call_was_billed_for_counts_in_the_failed_runs_usage() -> None:
    """A call cut at model_timeout that says what it had received (a ModelError's usage: its
    earlier search rounds), or answers late anyway, was billed for it: the failed run's usage
    counts it, as it counts a failed call's without a timeout (it was dropped)."""

    class Aborting:
        async def complete(self, request: ModelRequest) -> ModelResponse:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                error = ModelError("request aborted after two search rounds")
                error.usage = Usage(1200, 40)
                raise error from None
            raise AssertionError("the event is never set")

    class Late:
        async def complete(self, request: ModelRequest) -> ModelResponse:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
            return ModelResponse(Message("assistant", (TextPart("late"),)), Usage(300, 7))

    for model, billed in ((Aborting(), Usage(1200, 40)), (Late(), Usage(300, 7))):
        rt = _runtime(model)
        with pytest.raises(ModelTimeoutError) as caught:
            await rt.client("test.agent").run("go", policy=RunPolicy(model_timeout=0.05))
        assert run_usage(caught.value) == billed


async def test_a_client_answering_something_else_than_a_model_response_is_named() -> None:
    from agentgen.runtime.model_client import ModelError

    class Loose:
        async def complete(self, request: ModelRequest) -> object:
            return {"text": "hi"}

    rt = _runtime(Loose())
    with pytest.raises(ModelError) as caught:
        await rt.client("test.agent").run("go", run_id="run-9")
    message = str(caught.value)
    for said in ("'test.agent'", "run-9", "registered as 'slow'", "returned dict", "ModelResponse"):
        assert said in message


async def test_a_planner_reaches_the_rest_of_its_registered_client() -> None:
    class Rich(ScriptedModel):
        family = "scripted"

    seen: list[str] = []

    class Direct:
        async def plan_start(self, input: PlanInput) -> PlanResult:
            client = input.agent.model("slow")
            seen.append(client.family)  # type: ignore[attr-defined]
            response = await client.complete(ModelRequest("m", tuple(input.messages)))
            return PlanResult(response.message)

        async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
            raise AssertionError("one activity")

    rt = Runtime()
    rt.register_model("slow", Rich([Answer("fine")]))
    rt.register_agent(records_definition(specs=()), planner=Direct(), executors={})
    outcome = await rt.client("test.agent").run("go", policy=RunPolicy(model_timeout=30))
    assert (seen, outcome.final_text) == (["scripted"], "fine")


class FailsAfterBilling:
    """A client whose call fails after responses it was billed for (an adapter's search
    rounds), saying what they cost on the error."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        error = ModelError("the third search round used the whole budget")
        error.usage = Usage(300, 1000)
        raise error


async def test_what_a_failed_call_was_billed_is_counted() -> None:
    rt = _runtime(FailsAfterBilling())
    meter = UsageMeter(Usage(5, 5))  # an earlier attempt's
    task = PlanTask(
        RunContext(run_id="run-9", agent_id="test.agent"),
        RunPolicy(),
        (Message("user", (TextPart("go"),)),),
    )
    with pytest.raises(ModelError, match="whole budget"):
        await plan(rt, task, meter=meter)
    assert meter.usage == Usage(305, 1005)
