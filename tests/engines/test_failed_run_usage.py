"""A run that fails still says what it cost: the exception its client gets carries the usage
billed until the failure (``run_usage``), with the meaning of ``RunOutcome.usage`` (its child
runs' included, failed ones too, and the responses of the failed step), on both engines and with
the same figures for the same scripted run. On Temporal the figures cross the workflow's failure
to the client (a cancelled one in its memo); where the engine cannot know (a durable run
terminated by the server) there is none, rather than a made-up count."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import (
    CancelWorkflowInput,
    Client,
    FetchWorkflowHistoryEventsInput,
    Interceptor,
    OutboundInterceptor,
    WorkflowExecutionStatus,
    WorkflowHistoryEventAsyncIterator,
)
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from agentgen.runtime import (
    IncompleteAnswerError,
    ModelError,
    ModelTimeoutError,
    RunError,
    Usage,
    run_usage,
)
from agentgen.runtime.adapters.errors import EmptyReplyError
from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.agents.planning import PlanInput, Planner, PlanResult, PlanResumeInput
from agentgen.runtime.app import Runtime
from agentgen.runtime.engines.temporal import RunCancelledError, TemporalEngine, replay
from agentgen.runtime.messages import Message, TextPart
from agentgen.runtime.model_client import ModelRequest, ModelResponse
from agentgen.runtime.runs.requests import RunRequest
from tests.engines.conftest import FAST, Harness
from tests.engines.test_interruptions import Effects
from tests.runtime import sink_agents as sink
from tests.runtime.agents import answer, calls, register

pytestmark = pytest.mark.asyncio(loop_scope="session")

#: What a response of the parent's model costs, a child's, and the billed rounds of a model
#: call that then failed (``ModelError.usage``).
PARENT, CHILD, ROUNDS = Usage(1, 1), Usage(10, 5), Usage(100, 50)

HISTORIES = Path(__file__).parent / "histories"

#: A scripted reply that never comes.
HANG = "hang"

Step = Usage | BaseException | str


class Scripted:
    """A model client that plays ``script``: a ``Usage`` is a reply that reported it, an
    exception is raised (as a failed call raises it), ``HANG`` never answers."""

    def __init__(self, *script: Step) -> None:
        self.script = list(script)
        self.started = asyncio.Event()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        if step == HANG:
            self.started.set()
            await asyncio.Event().wait()
        assert isinstance(step, Usage)
        return ModelResponse(Message("assistant", (TextPart("draft"),)), step)


def _billed(usage: Usage, exc: ModelError) -> ModelError:
    """``exc``, after rounds that cost ``usage`` (as an adapter's search rounds before it)."""
    exc.usage = usage
    return exc


class Triage:
    """The parent: asks its model once to start (then calls the expert), twice to resume, then
    answers; or, as ``ends`` says, ``gives_up`` (its own RunError after the replies) or
    ``calls_again`` (tool calls in the final-answer-only activity the budget left)."""

    def __init__(self, ends: str = "") -> None:
        self.ends = ends

    async def plan_start(self, input: PlanInput) -> PlanResult:
        await input.agent.model("parent").complete(ModelRequest("m", tuple(input.messages)))
        return PlanResult(calls(("ask_expert.ask", {"question": "q"})))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        model = input.agent.model("parent")
        await model.complete(ModelRequest("m", tuple(input.messages)))
        await model.complete(ModelRequest("m", tuple(input.messages)))
        if self.ends == "gives_up":
            raise RunError("the triage gave up")
        if self.ends == "calls_again":
            return PlanResult(calls(("ask_expert.ask", {"question": "q"}), prefix="again"))
        return PlanResult(answer("relayed"))


class Expert:
    """The child: asks its model once, then answers, or fails with ``fails``."""

    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.run_ids: list[str] = []

    async def plan_start(self, input: PlanInput) -> PlanResult:
        self.run_ids.append(input.run.run_id)
        await input.agent.model("child").complete(ModelRequest("m", tuple(input.messages)))
        if self.fails:
            raise RunError("the expert gave up")
        return PlanResult(answer("done"), final_value={"answer": "42"})

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        raise AssertionError("the expert answers in one step")


def _runtime(
    harness: Harness,
    parent: Sequence[Step],
    *,
    ends: str = "",
    child: Sequence[Step] = (CHILD,),
    child_fails: bool = False,
    expert: Planner | None = None,
    **kwargs: Any,
) -> tuple[Runtime, Scripted]:
    rt = harness.runtime(**kwargs)
    model = Scripted(*parent)
    rt.register_model("parent", model)
    rt.register_model("child", Scripted(*child))
    rt.register_agent(sink.expert_definition(), planner=expert or Expert(child_fails), executors={})
    rt.register_agent(sink.triage_definition(), planner=Triage(ends), executors={})
    return rt, model


async def _failure(harness: Harness, rt: Runtime) -> BaseException:
    async with harness.serving(rt):
        with pytest.raises(BaseException) as raised:
            await rt.client("helpdesk.triage").run("ask")
    return raised.value


REQUEST = RunRequest("helpdesk.triage", (Message.user("ask"),))

#: The parent's first reply, the child's, and the parent's second.
BEFORE = PARENT + CHILD + PARENT


@pytest.mark.parametrize(
    ("parent", "ends", "policy", "error", "words", "expected"),
    [
        pytest.param(
            [PARENT, PARENT, _billed(ROUNDS, ModelError("provider refused the request"))],
            "",
            RunPolicy(),
            ModelError,
            "provider refused the request",
            BEFORE + ROUNDS,
            id="model_error_after_billed_rounds",
        ),
        pytest.param(
            [PARENT, PARENT, _billed(ROUNDS, IncompleteAnswerError("cut at max_tokens"))],
            "",
            RunPolicy(),
            IncompleteAnswerError,
            "cut at max_tokens",
            BEFORE + ROUNDS,
            id="incomplete_answer",
        ),
        pytest.param(
            [PARENT, PARENT, EmptyReplyError("the reply is empty")],
            "",
            RunPolicy(),
            EmptyReplyError,
            "the reply is empty",
            BEFORE,
            id="empty_reply_without_usage",
        ),
        pytest.param(
            [PARENT, PARENT, HANG],
            "",
            RunPolicy(model_timeout=0.5),
            ModelTimeoutError,
            "model_timeout of 0.5 seconds",
            BEFORE,
            id="model_timeout",
        ),
        pytest.param(
            [PARENT, PARENT, PARENT],
            "gives_up",
            RunPolicy(),
            RunError,
            "the triage gave up",
            BEFORE + PARENT,
            id="planner_run_error",
        ),
        pytest.param(
            [PARENT, Usage.not_reported(), PARENT],
            "gives_up",
            RunPolicy(),
            RunError,
            "the triage gave up",
            PARENT + CHILD + PARENT + Usage.not_reported(),
            id="a_reply_without_usage",
        ),
        pytest.param(
            [PARENT, PARENT, PARENT],
            "calls_again",
            RunPolicy(max_tool_calls=1),
            RunError,
            "tool calls in a final-answer-only activity",
            BEFORE + PARENT,
            id="tool_call_limit",
        ),
    ],
)
async def test_a_failed_run_says_what_it_cost(
    harness: Harness,
    parent: list[Step],
    ends: str,
    policy: RunPolicy,
    error: type[Exception],
    words: str,
    expected: Usage,
) -> None:
    """The failure keeps its type and words, and carries every response billed until then:
    the parent's, its child run's, and those of the step that failed."""
    rt, _ = _runtime(harness, parent, ends=ends, policy=policy)
    failure = await _failure(harness, rt)
    assert type(failure) is error
    assert words in str(failure)
    assert run_usage(failure) == expected
    assert run_usage(failure) == failure.run_usage  # type: ignore[attr-defined]
    assert run_usage(failure).complete is expected.complete  # type: ignore[union-attr]


async def test_a_failed_child_run_counts_in_its_failed_parent_s_usage(harness: Harness) -> None:
    rt, _ = _runtime(
        harness,
        [PARENT, PARENT, PARENT],
        ends="gives_up",
        child=[CHILD],
        child_fails=True,
    )
    failure = await _failure(harness, rt)
    assert isinstance(failure, RunError) and "the triage gave up" in str(failure)
    assert failure.run_usage == BEFORE + PARENT


async def test_a_run_that_fails_on_its_first_step_cost_its_billed_rounds(
    harness: Harness,
) -> None:
    rt, _ = _runtime(harness, [_billed(ROUNDS, ModelError("refused"))])
    failure = await _failure(harness, rt)
    assert type(failure) is ModelError
    assert run_usage(failure) == ROUNDS


async def test_a_run_refused_before_any_model_call_cost_nothing(harness: Harness) -> None:
    """Missing labels fail the run's first step before its planner runs: nothing was billed,
    and the failure says so (not that it does not know)."""
    definition = replace(sink.triage_definition(), required_labels=("tenant",))
    rt = harness.runtime()
    rt.register_model("parent", Scripted())
    rt.register_model("child", Scripted())
    rt.register_agent(sink.expert_definition(), planner=Expert(), executors={})
    rt.register_agent(definition, planner=Triage(), executors={})
    failure = await _failure(harness, rt)
    assert isinstance(failure, RunError) and "tenant" in str(failure)
    assert run_usage(failure) == Usage()


async def test_a_durable_run_s_failure_says_what_it_cost_when_waited_for_later(
    durable: Harness,
) -> None:
    """``engine.result`` for a run started without waiting raises the same failure, with the
    same usage, as ``run`` would have."""
    rt, _ = _runtime(durable, [PARENT, PARENT, _billed(ROUNDS, ModelError("refused"))])
    engine = durable.engine(rt)
    async with durable.serving(rt):
        run_id = await engine.start(rt, REQUEST)
        with pytest.raises(ModelError) as raised:
            await engine.result(rt, run_id)
    assert run_usage(raised.value) == BEFORE + ROUNDS


async def test_a_cancelled_in_memory_run_says_what_it_cost() -> None:
    """``asyncio.timeout`` cancels an in-memory run: its ``TimeoutError`` comes from the run's
    cancellation, which carries what the run cost until then (the step in flight's replies
    included)."""
    harness = Harness("memory")
    rt, model = _runtime(harness, [PARENT, PARENT, HANG])
    running = asyncio.create_task(_timed(rt))
    failure = await asyncio.wait_for(running, 30)
    assert isinstance(failure, TimeoutError)
    assert run_usage(failure) == BEFORE
    assert model.started.is_set()


async def test_a_cancelled_in_memory_run_counts_its_child_run_cancelled_with_it() -> None:
    harness = Harness("memory")
    rt, _ = _runtime(harness, [PARENT], child=[CHILD, HANG], expert=_Hanging())
    failure = await asyncio.wait_for(_timed(rt), 30)
    assert isinstance(failure, TimeoutError)
    # The parent's reply, and the child's reply before it hung.
    assert run_usage(failure) == PARENT + CHILD


class _Hanging:
    """A child that asks its model twice in its first step (the second never answers)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def plan_start(self, input: PlanInput) -> PlanResult:
        model = input.agent.model("child")
        await model.complete(ModelRequest("m", tuple(input.messages)))
        self.started.set()
        await model.complete(ModelRequest("m", tuple(input.messages)))
        raise AssertionError("the second reply never comes")

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        raise AssertionError("never resumed")


async def _timed(rt: Runtime) -> BaseException:
    try:
        async with asyncio.timeout(0.5):
            await rt.client("helpdesk.triage").run("ask")
    except BaseException as exc:
        return exc
    raise AssertionError("the run should have been cancelled")


async def test_a_cancelled_durable_run_says_what_it_is_known_to_have_cost(
    durable: Harness,
) -> None:
    """A cancelled workflow records what it cost in its memo, and the client's
    ``RunCancelledError`` carries it: the steps that answered, and the planning step cancelled
    in flight as one unreported response (its replies so far are on a worker the workflow does
    not wait for), so the count is a lower bound, never one that looks complete."""
    rt, model = _runtime(durable, [PARENT, PARENT, HANG])
    engine = durable.engine(rt)
    async with durable.serving(rt):
        run_id = await engine.start(rt, REQUEST)
        await asyncio.wait_for(model.started.wait(), 30)
        await engine.cancel(run_id)
        with pytest.raises(RunCancelledError) as raised:
            await engine.result(rt, run_id)
    assert run_usage(raised.value) == PARENT + CHILD + Usage.not_reported()
    # The memo is a command of the cancelled workflow: its history replays with it.
    assert durable.env is not None
    history = await durable.env.client.get_workflow_handle(run_id).fetch_history()
    await replay([history.to_json()])


async def test_a_cancelled_durable_run_counts_its_child_run_cancelled_with_it(
    durable: Harness,
) -> None:
    hanging = _Hanging()
    rt, _ = _runtime(durable, [PARENT], child=[CHILD, HANG], expert=hanging)
    engine = durable.engine(rt)
    async with durable.serving(rt):
        running = asyncio.create_task(rt.client("helpdesk.triage").run("ask", run_id="cancelled"))
        await asyncio.wait_for(hanging.started.wait(), 30)
        await engine.cancel("cancelled")
        with pytest.raises(RunCancelledError) as raised:
            await asyncio.wait_for(running, 30)
    # The parent's reply, and the child run cancelled in flight (what it got is not known).
    assert run_usage(raised.value) == PARENT + Usage.not_reported()


class _AsksThenSearches:
    """Asks its model once, then calls the search (which never ends)."""

    async def plan_start(self, input: PlanInput) -> PlanResult:
        await input.agent.model("parent").complete(ModelRequest("m", tuple(input.messages)))
        return PlanResult(calls(("records.search", {"query": "x"})))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        raise AssertionError("the run is cancelled while its search runs")


async def test_a_run_whose_caller_gave_up_says_what_it_cost_on_both_engines(
    harness: Harness,
) -> None:
    """On Temporal, the cancelled caller's ``CancelledError`` used to carry no usage: the engine
    asked the server to cancel the run and raised at once, before the workflow recorded what
    it cost. It now waits (a bounded while)
    for the cancelled workflow to end, and the figures are those of the in-memory engine."""
    rt = harness.runtime()
    rt.register_model("parent", Scripted(PARENT))
    executor = Effects(seconds=60)
    register(rt, _AsksThenSearches(), executor=executor)  # type: ignore[arg-type]
    async with harness.serving(rt):
        running = asyncio.create_task(rt.client("test.agent").run("go"))
        await asyncio.wait_for(executor.started.wait(), 30)
        running.cancel()
        with pytest.raises(asyncio.CancelledError) as raised:
            await running
    assert run_usage(raised.value) == PARENT


async def test_a_caller_gives_up_waiting_for_the_usage_of_a_run_no_worker_takes(
    durable: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait for a cancelled run's usage is bounded (``USAGE_WAIT``): with no worker to
    take the cancellation, the caller's cancellation goes on without usage."""
    from agentgen.runtime.engines.temporal import client

    monkeypatch.setattr(client, "USAGE_WAIT", 0.2)
    rt = durable.runtime()
    register(rt, _AsksThenSearches())  # type: ignore[arg-type]
    assert durable.env is not None
    handle = durable.env.client.get_workflow_handle("unserved")
    running = asyncio.create_task(rt.client("test.agent").run("go", run_id="unserved"))
    while True:  # until the workflow exists (no worker polls its queue)
        try:
            await handle.describe()
            break
        except RPCError:
            await asyncio.sleep(0.02)
    running.cancel()
    with pytest.raises(asyncio.CancelledError) as raised:
        await asyncio.wait_for(running, 30)
    assert run_usage(raised.value) is None
    await handle.terminate("test over")


class _RefusesCancels(Interceptor):
    """A client whose cancellation requests fail, as when the server cannot be reached for a
    moment (the SDK's own client interceptor seam); ``waiting`` is set once a caller of this
    client waits for a run's result (its workflow started)."""

    def __init__(self) -> None:
        self.waiting = asyncio.Event()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Refusing(next, self.waiting)


class _Refusing(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, waiting: asyncio.Event) -> None:
        super().__init__(next)
        self.waiting = waiting

    async def cancel_workflow(self, input: CancelWorkflowInput) -> None:
        raise RPCError("the server could not be reached", RPCStatusCode.UNAVAILABLE, b"")

    def fetch_workflow_history_events(
        self, input: FetchWorkflowHistoryEventsInput
    ) -> WorkflowHistoryEventAsyncIterator:
        self.waiting.set()
        return super().fetch_workflow_history_events(input)


async def test_a_caller_whose_cancellation_never_reached_the_run_does_not_wait_for_its_usage(
    durable: Harness, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """When the request cancelling the run failed, the run goes on and records no usage: the
    caller's cancellation used to wait ``USAGE_WAIT`` for it all the same. It now goes on at
    once (here the wait is an hour: the test would time out), saying the usage is unknown."""
    from agentgen.runtime.engines.temporal import client

    monkeypatch.setattr(client, "USAGE_WAIT", 3600.0)
    assert durable.env is not None
    config = durable.env.client.config()
    refusing = _RefusesCancels()
    config["interceptors"] = [*config.get("interceptors", ()), refusing]
    engine = TemporalEngine(
        client=Client(**config), task_queue=f"test-{uuid.uuid4().hex}", settings=FAST
    )
    rt = Runtime(engine=engine)
    register(rt, _AsksThenSearches())  # type: ignore[arg-type]
    running = asyncio.create_task(rt.client("test.agent").run("go", run_id="not-withdrawn"))
    # Until the caller waits for the run's result (no worker polls its queue): it started.
    await asyncio.wait_for(refusing.waiting.wait(), 30)
    with caplog.at_level(logging.WARNING, logger="agentgen.run"):
        running.cancel()
        with pytest.raises(asyncio.CancelledError) as raised:
            await asyncio.wait_for(running, 30)
    assert run_usage(raised.value) is None
    # Named by its type and status: its message is words the application did not opt in to.
    assert "cancelling the run on Temporal failed (RPCError (UNAVAILABLE)); it goes on" in (
        caplog.text
    )
    assert "could not be reached" not in caplog.text
    handle = durable.env.client.get_workflow_handle("not-withdrawn")
    description = await handle.describe()  # it goes on, as the warning says
    assert description.status == WorkflowExecutionStatus.RUNNING
    await handle.terminate("test over")


async def test_a_terminated_durable_run_does_not_make_its_usage_up(durable: Harness) -> None:
    rt, model = _runtime(durable, [PARENT, PARENT, HANG])
    engine = durable.engine(rt)
    assert durable.env is not None
    async with durable.serving(rt):
        run_id = await engine.start(rt, REQUEST)
        await asyncio.wait_for(model.started.wait(), 30)
        await durable.env.client.get_workflow_handle(run_id).terminate("test")
        with pytest.raises(RunError) as raised:
            await engine.result(rt, run_id)
    assert "Terminated" in str(raised.value)
    assert run_usage(raised.value) is None


async def test_a_run_cancelled_before_the_release_that_records_its_usage_replays() -> None:
    """The history of a run cancelled on the workflow code before the memo replays on today's
    code: the memo is written behind ``workflow.patched`` (without it, the replay diverges).

    Recorded once, by a worker running the workflow module of the commit before the memo
    (d5b9533) on the scenario of ``test_a_cancelled_durable_run_says_what_it_is_known_to_have_
    cost``: one child run, then the planning step in flight cancelled."""
    history = HISTORIES / "cancelled" / "0.1.0-run.json"
    text = history.read_text()
    assert '"EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED"' in text
    await replay([text])


class _LooksUp:
    """Asks its model, then looks a record up; again each turn (until its model hangs)."""

    async def plan_start(self, input: PlanInput) -> PlanResult:
        return await self._turn(input)

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        return await self._turn(input)

    async def _turn(self, input: PlanInput | PlanResumeInput) -> PlanResult:
        await input.agent.model("parent").complete(ModelRequest("m", tuple(input.messages)))
        turn = len(input.messages)
        return PlanResult(calls(("records.lookup", {"id": str(turn)}), prefix=f"t{turn}_"))


async def test_a_cancelled_run_that_continued_as_new_says_what_it_cost(
    temporal: WorkflowEnvironment,
) -> None:
    """A cancelled run records its usage in the memo of its latest execution: one that
    continued as new must be read there, not on the execution its start request created
    (the start's handle follows the run; pinned to that first execution, it would read no
    memo, and the caller of ``run`` would get no usage, as if the run had been terminated)."""
    # Low enough to continue at least once before the model hangs (each continuation costs a
    # second: Temporal starts at most one execution of a workflow ID per second).
    harness = Harness("temporal", temporal, replace(FAST, continue_as_new_after_events=30))
    rt = harness.runtime()
    model = Scripted(PARENT, PARENT, PARENT, PARENT, HANG)
    rt.register_model("parent", model)
    register(rt, _LooksUp())  # type: ignore[arg-type]
    run_id = f"continued-{uuid.uuid4().hex}"
    async with harness.serving(rt):
        running = asyncio.create_task(rt.client("test.agent").run("go", run_id=run_id))
        await asyncio.wait_for(model.started.wait(), 60)
        await harness.engine(rt).cancel(run_id)
        with pytest.raises(RunCancelledError) as raised:
            await asyncio.wait_for(running, 30)
    history = await temporal.client.get_workflow_handle(run_id).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert started.continued_execution_run_id  # the run went on in a new execution
    assert run_usage(raised.value) == PARENT + PARENT + PARENT + PARENT + Usage.not_reported()
