"""Durable runs whose steps, child runs or callers are stopped by something other than their own
failure: a worker shut down, an operator pausing an activity, a timeout, a cancelled child run,
a cancelled caller. What the model reads then, and what goes on."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import PauseActivityRequest, UnpauseActivityRequest
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from agentgen.runtime.app import Runtime
from agentgen.runtime.engines.memory import InMemoryEngine
from agentgen.runtime.engines.temporal import (
    RunCancelledError,
    TemporalEngine,
    TemporalSettings,
    build_worker,
)
from agentgen.runtime.messages import Message, ToolResultPart
from agentgen.runtime.registry.client import CallOutcome, CallRef, ToolCallMeta
from agentgen.runtime.runs.requests import RunError, RunOutcome, RunRequest
from examples.records.gen.assistant.toolsets.records import types
from tests.engines.conftest import Harness
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

#: Heartbeats every ~0.33 s: a stopped activity hears of it at once, a lost worker is noticed
#: within a second.
QUICK = TemporalSettings(
    heartbeat_timeout=1, retry_initial_interval=0.05, retry_maximum_interval=0.2
)


class Effects(Records):
    """A records executor whose search has an effect that takes ``seconds``."""

    def __init__(self, seconds: float = 5) -> None:
        super().__init__()
        self.seconds = seconds
        self.events: list[str] = []
        self.started = asyncio.Event()

    async def search(self, args: Any, context: Any) -> Any:
        self.events.append("search started")
        self.started.set()
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.events.append("search cancelled")
            raise
        self.events.append("search finished")
        return types.SearchResult(ids=["r1"])

    async def lookup(self, args: Any, context: Any) -> Any:
        self.events.append("lookup ran")
        return types.Record(id=args.id, title="T", body="B")


class SlowAdmissions(FakeRegistry):
    """A registry that takes ``seconds`` to admit a call."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.asked = asyncio.Event()

    async def call_resolved_tool(
        self,
        *,
        toolset: str,
        tool: str,
        payload_json: str,
        meta: ToolCallMeta,
        expected_registration_token: str,
    ) -> CallRef:
        self.asked.set()
        await asyncio.sleep(self.seconds)
        return await super().call_resolved_tool(
            toolset=toolset,
            tool=tool,
            payload_json=payload_json,
            meta=meta,
            expected_registration_token=expected_registration_token,
        )


@dataclass
class RegistrySettings:
    name: str = "company"
    timeout: float = 10.0


def _remote(rt: Runtime, registry: FakeRegistry, timeout: float = 10.0) -> None:
    """The test agent reads the registry's ``remote`` toolset and calls it once."""
    registry.publish(provider_toolset("remote", None), echo_handler)
    rt.register_registry("company", registry, registry, settings=RegistrySettings(timeout=timeout))
    definition = records_definition(specs=()).with_registry_tools(
        Sources(toolsets=[("company", "remote", "", False)])
    )
    register(rt, ScriptedPlanner([calls(("remote.lookup", {"id": "r1"})), answer()]), definition)


def _error(outcome: RunOutcome, message: int = 2) -> dict[str, Any]:
    part = outcome.transcript[message].parts[0]
    content = getattr(part, "content", None)
    assert isinstance(content, str), part
    error: dict[str, Any] = json.loads(content)["error"]
    return error


@asynccontextmanager
async def _worker(env: WorkflowEnvironment, rt: Runtime) -> AsyncIterator[None]:
    queue = rt.engine.task_queue  # type: ignore[attr-defined]
    sticky = timedelta(seconds=1)
    async with build_worker(env.client, rt, queue, sticky_queue_schedule_to_start_timeout=sticky):
        yield


def _pay() -> ScriptedPlanner:
    return ScriptedPlanner([calls(("records.search", {"query": "pay"})), answer()])


# --- a worker that shuts down ---------------------------------------------------------------


async def _shut_down_midway(
    env: WorkflowEnvironment, rt: Runtime, started: asyncio.Event
) -> RunOutcome:
    """Run the test agent; once ``started`` is set, stop its worker gracefully (as on
    SIGTERM) and let another one carry on."""
    worker = _worker(env, rt)
    await worker.__aenter__()
    running = asyncio.create_task(rt.client("test.agent").run("go"))
    await started.wait()
    await worker.__aexit__(None, None, None)
    async with _worker(env, rt):
        return await asyncio.wait_for(running, 60)


async def test_a_tool_stopped_by_a_worker_shutting_down_answers_outcome_unknown(
    temporal: WorkflowEnvironment,
) -> None:
    # It was an internal_error ("WorkerShutdown: Worker is shutting down..."): the model was
    # not told that the effect may have occurred.
    rt = Harness("temporal", temporal, QUICK).runtime()
    executor = Effects()
    register(rt, _pay(), executor=executor)
    outcome = await _shut_down_midway(temporal, rt, executor.started)
    assert executor.events == ["search started", "search cancelled"]
    error = _error(outcome)
    assert error["kind"] == "outcome_unknown"
    assert error["message"] == (
        "records.search: the worker running it shut down before it finished; the outcome is "
        "unknown: do not retry or issue a replacement call, because the effect may have occurred"
    )
    assert outcome.final_text == "done"


async def test_an_admission_stopped_by_a_worker_shutting_down_answers_outcome_unknown(
    temporal: WorkflowEnvironment,
) -> None:
    rt = Harness("temporal", temporal, QUICK).runtime()
    registry = SlowAdmissions(seconds=5)
    _remote(rt, registry)
    outcome = await _shut_down_midway(temporal, rt, registry.asked)
    error = _error(outcome)
    assert error["kind"] == "outcome_unknown"
    assert error["message"].startswith(
        "remote.lookup: asking the registry to admit it was stopped: the worker running it shut "
        "down before it finished; the outcome is unknown: do not retry"
    )
    assert registry.calls == []  # it was never admitted, and nobody asked again


# --- an operator pausing a step -------------------------------------------------------------


async def test_a_tool_paused_while_it_ran_is_not_run_again_when_unpaused(
    temporal: WorkflowEnvironment,
) -> None:
    # Temporal gives a paused activity another attempt once unpaused, its one attempt
    # notwithstanding: the tool ran twice, with two effects.
    rt = Harness("temporal", temporal, QUICK).runtime()
    executor = Effects()
    register(rt, _pay(), executor=executor)
    async with _worker(temporal, rt):
        running = asyncio.create_task(rt.client("test.agent").run("go", run_id="paused-tool"))
        await executor.started.wait()
        handle = temporal.client.get_workflow_handle("paused-tool")
        (pending,) = (await handle.describe()).raw_description.pending_activities
        assert pending.activity_type.name == "agentgen.execute"
        execution = WorkflowExecution(workflow_id="paused-tool")
        service = temporal.client.workflow_service
        await service.pause_activity(
            PauseActivityRequest(namespace="default", execution=execution, id=pending.activity_id)
        )
        while "search cancelled" not in executor.events:
            await asyncio.sleep(0.05)
        await service.unpause_activity(
            UnpauseActivityRequest(namespace="default", execution=execution, id=pending.activity_id)
        )
        outcome = await asyncio.wait_for(running, 60)
    assert executor.events == ["search started", "search cancelled"]
    error = _error(outcome)
    assert error["kind"] == "outcome_unknown"
    assert error["message"].startswith(
        "records.search: it was stopped while it ran (an operator paused it, or reset it) and is "
        "not run again; the outcome is unknown"
    )


# --- timeouts -------------------------------------------------------------------------------


class Slow(Records):
    async def search(self, args: Any, context: Any) -> Any:
        await asyncio.sleep(30)
        return types.SearchResult(ids=[])


async def test_a_tool_past_its_timeout_reads_as_in_memory_not_as_a_lost_worker(
    temporal: WorkflowEnvironment,
) -> None:
    # It read "the worker running it was lost": the worker was fine, the tool slow.
    def script() -> ScriptedPlanner:
        return ScriptedPlanner([calls(("records.search", {"query": "x"})), answer()])

    in_memory = Runtime(engine=InMemoryEngine(tool_timeout=2))
    register(in_memory, script(), executor=Slow())
    memory_error = _error(await in_memory.client("test.agent").run("go"))

    settings = TemporalSettings(
        tool_timeout=2, heartbeat_timeout=1, retry_initial_interval=0.05, retry_maximum_interval=0.2
    )
    rt = Harness("temporal", temporal, settings).runtime()
    register(rt, script(), executor=Slow())
    async with _worker(temporal, rt):
        durable_error = _error(await rt.client("test.agent").run("go"))
    assert durable_error == memory_error
    assert durable_error["kind"] == "outcome_unknown"
    assert durable_error["message"].startswith(
        "records.search did not finish within 2 s (the engine's tool_timeout) and was cancelled"
    )


class SlowResults(FakeRegistry):
    """A registry whose calls' outcomes take 30 s."""

    async def await_result(self, ref: CallRef) -> CallOutcome:
        await asyncio.sleep(30)
        return await super().await_result(ref)


async def test_a_registry_call_past_its_timeout_reads_as_in_memory(
    temporal: WorkflowEnvironment,
) -> None:
    # The wait was repeated (5 attempts of tool_timeout each), then answered internal_error
    # ("TimeoutError: activity StartToClose timeout").
    in_memory = Runtime(engine=InMemoryEngine(tool_timeout=2))
    _remote(in_memory, SlowResults(), timeout=1)
    memory_error = _error(await in_memory.client("test.agent").run("go"))

    settings = TemporalSettings(
        tool_timeout=2, heartbeat_timeout=1, retry_initial_interval=0.05, retry_maximum_interval=0.2
    )
    rt = Harness("temporal", temporal, settings).runtime()
    _remote(rt, SlowResults(), timeout=1)
    async with _worker(temporal, rt):
        durable_error = await asyncio.wait_for(rt.client("test.agent").run("go"), 30)
    assert _error(durable_error) == memory_error
    assert memory_error["kind"] == "outcome_unknown"
    assert memory_error["message"].startswith(
        "remote.lookup did not finish within 2 s (the engine's tool_timeout) and was cancelled"
    )


async def test_an_admission_has_the_time_its_registry_declares(
    temporal: WorkflowEnvironment,
) -> None:
    # The admission ran under step_timeout whatever the registry's Timeout: cut after 2 s,
    # it answered "the worker asking the registry to admit it was lost" and nothing was
    # admitted. In memory it succeeds.
    settings = TemporalSettings(
        step_timeout=2, heartbeat_timeout=1, retry_initial_interval=0.05, retry_maximum_interval=0.2
    )
    rt = Harness("temporal", temporal, settings).runtime()
    registry = SlowAdmissions(seconds=4)
    _remote(rt, registry, timeout=10)
    async with _worker(temporal, rt):
        outcome = await rt.client("test.agent").run("go")
    part = outcome.transcript[2].parts[0]
    assert not getattr(part, "is_error", True)
    assert json.loads(getattr(part, "content", "")) == {
        "id": "r1",
        "title": "remote",
        "body": "remote body",
    }
    assert len(registry.calls) == 1


async def test_a_registry_timeout_the_engine_would_preempt_is_refused_before_the_run_starts(
    temporal: WorkflowEnvironment,
) -> None:
    settings = TemporalSettings(tool_timeout=5)
    rt = Harness("temporal", temporal, settings).runtime()
    registry = FakeRegistry()
    registry.publish(provider_toolset(), echo_handler)
    rt.register_registry("company", registry, registry, settings=RegistrySettings(timeout=5))
    # The registry is read by the agent that the run's agent calls as a tool.
    expert = dataclasses.replace(expert_definition(), registries=("company",))
    rt.register_agent(expert, planner=ScriptedPlanner([answer()]), executors={})
    rt.register_agent(triage_definition(), planner=ScriptedPlanner([answer()]), executors={})
    with pytest.raises(RunError) as refused:  # no worker serves: nothing may start
        await asyncio.wait_for(rt.client("helpdesk.triage").run("go", run_id="preempted"), 10)
    assert str(refused.value) == (
        "agent 'helpdesk.expert' (run preempted): registry 'company' has a Timeout of 5 seconds, "
        "not shorter than TemporalSettings.tool_timeout (5 seconds), the longest the engine lets "
        "a call admission take: the engine would end an admission before the registry's Timeout "
        "did. Raise TemporalSettings.tool_timeout, or declare a shorter Timeout for the registry "
        "in the design"
    )
    assert registry.resolves == []  # nothing started


# --- child runs -----------------------------------------------------------------------------


class Thinking:
    """A planner that never answers (a long model call), until it is cancelled."""

    def __init__(self) -> None:
        self.cancelled = 0

    async def plan_start(self, input: Any) -> Any:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    plan_resume = plan_start


def _helpdesk(rt: Runtime, expert: Thinking) -> None:
    """Triage asks the expert (a child run that thinks for ever), then answers."""
    ask = calls(("ask_expert.ask", {"question": "q"}))
    rt.register_agent(
        triage_definition(), planner=ScriptedPlanner([ask, answer("went on")]), executors={}
    )
    rt.register_agent(expert_definition(), planner=expert, executors={})


async def _child(engine: TemporalEngine, run_id: str) -> str:
    """The child run ``run_id`` started, once the server has it (the parent names it first)."""
    client = await engine.client()
    for _ in range(500):
        status = await engine._status(run_id)
        if status is not None and status.children:
            try:
                await client.get_workflow_handle(status.children[0]).describe()
            except RPCError:
                pass
            else:
                return status.children[0]
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id!r} started no child run")


async def _status(env: WorkflowEnvironment, run_id: str) -> WorkflowExecutionStatus | None:
    return (await env.client.get_workflow_handle(run_id).describe()).status


async def test_cancelling_a_child_run_fails_its_call_and_the_parent_goes_on(
    durable: Harness,
) -> None:
    # The parent was cancelled with it (RunCancelledError; its workflow FAILED).
    rt = durable.runtime()
    expert = Thinking()
    _helpdesk(rt, expert)
    engine = durable.engine(rt)
    assert durable.env is not None
    async with durable.serving(rt):
        run_id = await engine.start(rt, RunRequest("helpdesk.triage", (Message.user("go"),)))
        child = await _child(engine, run_id)
        await engine.cancel(child)
        outcome = await asyncio.wait_for(engine.result(rt, run_id), 30)
    assert outcome.final_text == "went on"
    assert list(outcome.child_runs) == [child]  # it ran: the outcome leads to it
    error = _error(outcome)
    assert error == {
        "kind": "agent_failed",
        "message": (
            f"agent helpdesk.expert (child run {child}) failed: RunCancelledError: run "
            f"{child!r} was cancelled"
        ),
    }
    assert await _status(durable.env, child) == WorkflowExecutionStatus.CANCELED
    assert await _status(durable.env, run_id) == WorkflowExecutionStatus.COMPLETED


async def test_cancelling_a_parent_run_still_cancels_it_and_its_child(durable: Harness) -> None:
    rt = durable.runtime()
    _helpdesk(rt, Thinking())
    engine = durable.engine(rt)
    assert durable.env is not None
    async with durable.serving(rt):
        run_id = await engine.start(rt, RunRequest("helpdesk.triage", (Message.user("go"),)))
        child = await _child(engine, run_id)
        await engine.cancel(run_id)
        with pytest.raises(RunCancelledError, match=f"run {run_id!r} was cancelled"):
            await asyncio.wait_for(engine.result(rt, run_id), 30)
        for _ in range(500):
            if await _status(durable.env, child) != WorkflowExecutionStatus.RUNNING:
                break
            await asyncio.sleep(0.02)
    # Cancelled, or terminated by its parent's close policy when the parent ended first.
    stopped = {WorkflowExecutionStatus.CANCELED, WorkflowExecutionStatus.TERMINATED}
    assert await _status(durable.env, child) in stopped
    assert await _status(durable.env, run_id) == WorkflowExecutionStatus.CANCELED


# --- the caller -----------------------------------------------------------------------------


def _two_rounds(rt: Runtime, executor: Effects) -> None:
    """A search (``executor.seconds`` long), then a lookup, then the answer."""
    planner = ScriptedPlanner(
        [
            calls(("records.search", {"query": "x"})),
            calls(("records.lookup", {"id": "r1"}), prefix="d"),
            answer(),
        ]
    )
    register(rt, planner, executor=executor)


async def test_a_caller_that_gives_up_on_run_cancels_the_run_as_in_memory(
    harness: Harness,
) -> None:
    # On Temporal the run went on: its search finished and its lookup ran, for nobody.
    rt = harness.runtime()
    executor = Effects(seconds=1.5)
    _two_rounds(rt, executor)
    async with harness.serving(rt):
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.8):
                await rt.client("test.agent").run("go", run_id=f"gave-up-{harness.kind}")
        await asyncio.sleep(2.5)  # the search's time, and more
    assert "lookup ran" not in executor.events
    assert executor.events[0] == "search started"
    if harness.env is not None:
        status = await _status(harness.env, "gave-up-temporal")
        assert status == WorkflowExecutionStatus.CANCELED
        with pytest.raises(RunCancelledError):
            await harness.engine(rt).result(rt, "gave-up-temporal")
    else:
        assert executor.events == ["search started", "search cancelled"]


class _Ended(Effects):
    """Effects whose search says when it ended, finished or cancelled."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.ended = asyncio.Event()

    async def search(self, args: Any, context: Any) -> Any:
        try:
            return await super().search(args, context)
        finally:
            self.ended.set()


async def test_a_cancelled_caller_s_running_tool_is_cancelled_promptly(
    durable: Harness,
) -> None:
    """A running tool hears of its run's cancellation in the answer to its next heartbeat. With
    the default heartbeat timeout (30 s), heartbeats went out every 10 s and the SDK held them
    back to one per 24 s: a search of 15 s finished (for nobody) before the cancellation reached
    it. Heartbeats now go out every third of the heartbeat timeout, at most every 10 s, and the
    worker's throttle (1 s) sends each at once. The search lasts 40 s, so the one heartbeat it
    needs (~10 s in) reaches it with room to spare on a loaded machine."""
    assert durable.settings.heartbeat_timeout == 30  # the default
    rt = durable.runtime()
    executor = _Ended(seconds=40)
    _two_rounds(rt, executor)
    async with durable.serving(rt):
        running = asyncio.create_task(rt.client("test.agent").run("go"))
        await asyncio.wait_for(executor.started.wait(), 30)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        await asyncio.wait_for(executor.ended.wait(), 30)
    assert executor.events == ["search started", "search cancelled"]


async def test_the_heartbeat_interval_must_be_positive_seconds(durable: Harness) -> None:
    rt = durable.runtime()
    _two_rounds(rt, Effects())
    assert durable.env is not None
    for wrong in (0, -1.0, float("nan"), float("inf"), True, 1e15):
        with pytest.raises(
            ValueError, match=f"heartbeat_interval must be positive seconds, not {wrong!r}"
        ):
            build_worker(durable.env.client, rt, "q", heartbeat_interval=wrong)
    worker = build_worker(durable.env.client, rt, "q", heartbeat_interval=0.5)
    assert worker.config()["max_heartbeat_throttle_interval"] == timedelta(seconds=0.5)
    # Without an interval, or with a longer one, heartbeats are paced by the activities and
    # sent at once: the SDK's throttle is 1 s.
    for queue, given in (("q-none", {}), ("q-5", {"heartbeat_interval": 5.0})):
        worker = build_worker(durable.env.client, rt, queue, **given)
        assert worker.config()["max_heartbeat_throttle_interval"] == timedelta(seconds=1)
        assert worker.config()["default_heartbeat_throttle_interval"] == timedelta(seconds=1)


async def test_giving_up_on_the_result_of_a_started_run_leaves_it_running(
    durable: Harness,
) -> None:
    rt = durable.runtime()
    executor = Effects(seconds=1.5)
    _two_rounds(rt, executor)
    engine = durable.engine(rt)
    request = RunRequest("test.agent", (Message.user("go"),), run_id="detached")
    async with durable.serving(rt):
        await engine.start(rt, request)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.8):
                await engine.result(rt, "detached")
        outcome = await asyncio.wait_for(engine.result(rt, "detached"), 30)
    assert executor.events == ["search started", "search finished", "lookup ran"]
    assert outcome.final_text == "done"
    assert isinstance(outcome.transcript[4].parts[0], ToolResultPart)
