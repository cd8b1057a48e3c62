"""Many runs in one event loop: concurrent calls of a round, cancellation at each await of a
run, and failures of unusual kinds raised by the application's code.

Nothing here waits on a clock: every interleaving is forced with events, and a deadline is
expired by moving it (``asyncio.Timeout.reschedule``) once the run is where the test wants it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from agentgen.runtime.agents.executors import ToolContext
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.app import Runtime
from agentgen.runtime.contracts.cache import ContractCache
from agentgen.runtime.engines.memory import InMemoryEngine
from agentgen.runtime.failures import UNPRINTABLE
from agentgen.runtime.messages import Message, ToolCallPart, ToolResultPart
from agentgen.runtime.registry.client import CallOutcome, CallRef, ResolvedToolset, ToolCallMeta
from agentgen.runtime.runs import catalog
from agentgen.runtime.runs.catalog import RegistryReadError
from agentgen.runtime.runs.loop import _together
from agentgen.runtime.runs.requests import RunOutcome
from agentgen.runtime.runs.steps import ConfirmationRequest
from agentgen.runtime.telemetry.config import Telemetry
from examples.records.gen.assistant.toolsets.records import executor as records_executor
from examples.records.gen.assistant.toolsets.records import specs as records_specs
from examples.records.gen.assistant.toolsets.records import types
from tests.otel import recorder
from tests.runtime.agents import (
    ScriptedPlanner,
    Sources,
    answer,
    calls,
    echo_handler,
    provider_toolset,
    records_definition,
)
from tests.runtime.fake_registry import FakeRegistry
from tests.runtime.test_saved_contracts import payments

THREE = calls(
    ("records.lookup", {"id": "r1"}),
    ("records.search", {"query": "q"}),
    ("records.analyze", {"ids": ["r1"]}),
)


class Unprintable(Exception):
    """An exception whose message cannot be read: ``str()`` of it raises."""

    def __str__(self) -> str:
        raise RuntimeError("__str__ of Unprintable failed")


class Interrupt(BaseException):
    """A BaseException that is neither a cancellation nor an Exception."""


class Gate:
    """Each tool waits on its own event; ``started`` says who is waiting; ``cancelled`` and
    ``finished`` who was cancelled and who returned."""

    def __init__(self, *tools: str) -> None:
        self.open = {tool: asyncio.Event() for tool in tools}
        self.waiting = {tool: asyncio.Event() for tool in tools}
        self.cancelled: list[str] = []
        self.finished: list[str] = []

    async def pass_(self, tool: str) -> None:
        self.waiting[tool].set()
        try:
            await self.open[tool].wait()
        except asyncio.CancelledError:
            self.cancelled.append(tool)
            raise
        self.finished.append(tool)

    async def all_waiting(self) -> None:
        for event in self.waiting.values():
            await event.wait()


class GatedRecords:
    """A records executor whose tools wait at a gate; ``fail`` raises in place of a tool."""

    def __init__(self, gate: Gate, fail: dict[str, BaseException] | None = None) -> None:
        self.gate = gate
        self.fail = fail or {}

    async def _tool(self, tool: str) -> None:
        await self.gate.pass_(tool)
        if tool in self.fail:
            raise self.fail[tool]

    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        await self._tool("lookup")
        return types.Record(id=args.id, title="T", body="B")

    async def search(self, args: types.SearchArgs, context: ToolContext) -> types.SearchResult:
        await self._tool("search")
        return types.SearchResult(ids=["r1"])

    async def analyze(self, args: types.AnalyzeArgs, context: ToolContext) -> types.Analysis:
        await self._tool("analyze")
        return types.Analysis(summary="ok")


def gated_runtime(
    executor: GatedRecords, turns: list[Message], **runtime: Any
) -> tuple[Runtime, ScriptedPlanner]:
    rt = Runtime(**runtime)
    planner = ScriptedPlanner(turns)
    rt.register_agent(
        records_definition(),
        planner=planner,
        executors={records_specs.TOOLSET: records_executor.bind(executor)},
    )
    return rt, planner


def results(outcome: RunOutcome, index: int = 2) -> list[ToolResultPart]:
    parts = outcome.transcript[index].parts
    assert all(isinstance(part, ToolResultPart) for part in parts)
    return list(parts)  # type: ignore[arg-type]


def error_of(part: ToolResultPart) -> dict[str, Any]:
    assert part.is_error, part
    error: dict[str, Any] = json.loads(part.content)["error"]
    return error


def run_of(span: ReadableSpan) -> object:
    return (span.attributes or {}).get("agentgen.run.id")


# --------------------------------------------------------------------------- one round


async def test_results_keep_the_call_order_whatever_order_the_calls_finish_in() -> None:
    gate = Gate("lookup", "search", "analyze")
    rt, _ = gated_runtime(GatedRecords(gate), [THREE, answer()])
    run = asyncio.create_task(rt.client("test.agent").run("go"))
    await gate.all_waiting()  # the three run at once
    for tool in ("analyze", "search", "lookup"):  # and finish last to first
        gate.open[tool].set()
        await asyncio.sleep(0)
    outcome = await run
    assert gate.finished == ["analyze", "search", "lookup"]
    assert [part.call_id for part in results(outcome)] == [
        "c0_records.lookup",
        "c1_records.search",
        "c2_records.analyze",
    ]
    assert not any(part.is_error for part in results(outcome))


async def test_a_base_exception_of_one_call_cancels_the_other_calls_and_propagates() -> None:
    gate = Gate("lookup", "search", "analyze")
    rt, _ = gated_runtime(GatedRecords(gate, fail={"search": Interrupt()}), [THREE, answer()])
    run = asyncio.create_task(rt.client("test.agent").run("go"))
    await gate.all_waiting()
    gate.open["search"].set()
    with pytest.raises(Interrupt):
        await run
    # Ended with the run, not left running unobserved (asyncio.gather alone leaves them).
    assert sorted(gate.cancelled) == ["analyze", "lookup"]


async def test_a_tool_error_of_one_call_leaves_the_other_results() -> None:
    gate = Gate("lookup", "search", "analyze")
    rt, _ = gated_runtime(GatedRecords(gate, fail={"lookup": ValueError("no")}), [THREE, answer()])
    for event in gate.open.values():
        event.set()
    outcome = await rt.client("test.agent").run("go")
    first, *others = results(outcome)
    assert error_of(first)["kind"] == "tool_failed"
    assert [part.is_error for part in others] == [False, False]


# --------------------------------------------------------------------------- many runs


class Barrier:
    """Opens once ``parties`` have arrived: everything that waits here is in flight at once."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.open = asyncio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived == self.parties:
            self.open.set()
        await self.open.wait()


class LookupPlanner:
    """Holds nothing between activities (one planner serves every run of its agent): looks up
    the record the user names, then answers with the ID the tool returned."""

    def __init__(self, tool: str) -> None:
        self.tool = tool

    async def plan_start(self, input: PlanInput) -> PlanResult:
        text = input.messages[0].text
        call = ToolCallPart("c1", self.tool, json.dumps({"id": text}))
        return PlanResult(Message("assistant", (call,)))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        (result,) = input.tool_results
        return PlanResult(answer(f"{input.run.run_id}:{json.loads(result.content)['id']}"))


class BarrierRecords(GatedRecords):
    def __init__(self, barrier: Barrier) -> None:
        super().__init__(Gate())
        self.barrier = barrier

    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        await self.barrier.wait()
        return types.Record(id=args.id, title="T", body="B")


class BarrierRegistry(FakeRegistry):
    """Resolves, and answers calls, only once every run is waiting for it."""

    def __init__(self, runs: int) -> None:
        super().__init__()
        self.reads = Barrier(runs)

    async def resolve_toolset(self, name: str) -> ResolvedToolset:
        await self.reads.wait()
        return await super().resolve_toolset(name)


async def test_many_concurrent_runs_of_two_agents_share_a_runtime_and_keep_their_own_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """200 runs at once, half of an agent with a compiled executor, half of one that reads a
    registry toolset: every registry read, tool call and provider call of them is in flight
    at the same time. Each run's transcript holds its own call and result only, and the
    toolset's three tools are compiled once (the first reads meet in the contract cache: each
    tool compiles without giving the loop a turn, so a second reader finds it compiled)."""
    each = 100
    cache = ContractCache()
    monkeypatch.setattr(catalog, "default_cache", lambda: cache)
    registry = BarrierRegistry(each)
    calls_in_flight = Barrier(each)

    async def provider(tool: str, payload: Any, meta: ToolCallMeta) -> Any:
        await calls_in_flight.wait()
        return {"id": payload["id"], "title": "remote", "body": meta.run_id}

    registry.publish(provider_toolset(), provider)
    rt = Runtime()
    rt.register_registry("company", registry, registry)
    rt.register_agent(
        records_definition(),
        planner=LookupPlanner("records.lookup"),
        executors={records_specs.TOOLSET: records_executor.bind(BarrierRecords(Barrier(each)))},
    )
    sources = Sources(toolsets=[("company", "records", "", False)])
    rt.register_agent(
        records_definition(id="test.dyn", specs=(), deferred_tool_ids=()).with_registry_tools(
            sources
        ),
        planner=LookupPlanner("records.lookup"),
        executors={},
    )
    runs = [
        (agent, f"{agent}-{index}") for index in range(each) for agent in ("test.agent", "test.dyn")
    ]
    outcomes = await asyncio.gather(
        *(rt.client(agent).run(f"record-{run_id}", run_id=run_id) for agent, run_id in runs)
    )
    for (agent, run_id), outcome in zip(runs, outcomes, strict=True):
        assert (outcome.agent_id, outcome.run_id) == (agent, run_id)
        assert outcome.final_text == f"{run_id}:record-{run_id}"
        (call,) = outcome.accepted_calls
        assert call.call.arguments == json.dumps({"id": f"record-{run_id}"})
        (result,) = results(outcome)
        if agent == "test.dyn":
            assert json.loads(result.content)["body"] == run_id  # its own provider call
    assert (cache.compiles, len(registry.calls)) == (3, each)


async def test_a_round_closed_while_it_waits_awaits_nothing() -> None:
    """A durable engine that evicts a workflow it replayed closes the run's coroutine where it
    waits (GeneratorExit): ending the round must then await nothing (a coroutine that awaits
    while it is closed raises RuntimeError, reported as an unraisable exception)."""

    async def call() -> None:
        await asyncio.Event().wait()

    round_ = _together([call(), call()])
    waiting = round_.send(None)  # runs the round up to its wait for the calls
    assert isinstance(waiting, asyncio.Future) and not waiting.done()
    round_.close()  # raised RuntimeError("coroutine ignored GeneratorExit")
    waiting.cancel()  # what the engine does with the tasks of the workflow it evicted
    while not waiting.done():  # the calls are cancelled at their next turn
        await asyncio.sleep(0)
    assert waiting.cancelled() or isinstance(waiting.exception(), asyncio.CancelledError)


# --------------------------------------------------------------------------- cancellation


async def test_cancelling_a_run_cancels_every_tool_in_flight_and_ends_its_spans() -> None:
    spans = recorder()
    gate = Gate("lookup", "search", "analyze")
    rt, _ = gated_runtime(GatedRecords(gate), [THREE, answer()])
    run = asyncio.create_task(rt.client("test.agent").run("go", run_id="cancelled-run"))
    await gate.all_waiting()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert sorted(gate.cancelled) == ["analyze", "lookup", "search"]
    names = sorted(s.name for s in spans.agentgen_spans() if run_of(s) == "cancelled-run")
    # Every span the run opened ended (an exported span is an ended one).
    assert names.count("execute_tool records.lookup") == 1
    assert "invoke_agent test.agent" in names and "plan test.agent" in names


async def test_a_deadline_around_a_run_cancels_its_tools_and_raises_timeout_error() -> None:
    gate = Gate("lookup", "search", "analyze")
    rt, _ = gated_runtime(GatedRecords(gate), [THREE, answer()])
    loop = asyncio.get_running_loop()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(None) as deadline:
            run = asyncio.ensure_future(rt.client("test.agent").run("go"))
            await gate.all_waiting()
            deadline.reschedule(loop.time())  # expires now: the run is cancelled
            await run
    assert sorted(gate.cancelled) == ["analyze", "lookup", "search"]


class WaitingPlanner:
    """Waits in its model call until cancelled."""

    def __init__(self) -> None:
        self.waiting = asyncio.Event()
        self.cancelled = 0

    async def plan_start(self, input: PlanInput) -> PlanResult:
        self.waiting.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("not reached")

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        return await self.plan_start(input)


async def test_cancelling_a_run_in_its_model_call_propagates() -> None:
    rt = Runtime()
    planner = WaitingPlanner()
    rt.register_agent(
        records_definition(),
        planner=planner,
        executors={records_specs.TOOLSET: records_executor.bind(GatedRecords(Gate()))},
    )
    run = asyncio.create_task(rt.client("test.agent").run("go"))
    await planner.waiting.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert planner.cancelled == 1


def payments_runtime(registry: FakeRegistry, turns: list[Message], **runtime: Any) -> Runtime:
    rt = Runtime(**runtime)
    rt.register_registry("company", registry, registry)
    sources = Sources(toolsets=[("company", "payments", "", False)])
    definition = records_definition(id="test.dyn", specs=(), deferred_tool_ids=())
    rt.register_agent(
        definition.with_registry_tools(sources), planner=ScriptedPlanner(turns), executors={}
    )
    return rt


class Stalling(FakeRegistry):
    """A registry whose reads, admissions or result waits (``stall``) wait until cancelled."""

    def __init__(self, stall: str) -> None:
        super().__init__()
        self.stall = stall
        self.waiting = asyncio.Event()
        self.cancelled: list[str] = []

    async def _stall(self, what: str) -> None:
        if what == self.stall:
            self.waiting.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.append(what)
                raise

    async def resolve_toolset(self, name: str) -> ResolvedToolset:
        await self._stall("resolve")
        return await super().resolve_toolset(name)

    async def call_resolved_tool(self, **kwargs: Any) -> CallRef:
        await self._stall("call")
        return await super().call_resolved_tool(**kwargs)

    async def await_result(self, ref: CallRef) -> CallOutcome:
        await self._stall("result")
        return await super().await_result(ref)


@pytest.mark.parametrize("stall", ["resolve", "call", "result"])
async def test_cancelling_a_run_in_a_registry_request_propagates(stall: str) -> None:
    """Neither a registry_unavailable nor an outcome_unknown result: the run was cancelled."""
    registry = Stalling(stall)
    registry.publish(payments(), echo_handler)
    rt = payments_runtime(registry, [calls(("payments.list", {"amount": 1})), answer()])
    run = asyncio.create_task(rt.client("test.dyn").run("go"))
    await registry.waiting.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert registry.cancelled == [stall]


async def test_cancelling_a_run_in_its_confirmer_propagates() -> None:
    asked = asyncio.Event()
    cancelled: list[str] = []

    async def confirm(request: ConfirmationRequest) -> bool:
        asked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(request.tool_id)
            raise
        return True

    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    rt = payments_runtime(
        registry, [calls(("payments.pay", {"amount": 1})), answer()], confirm=confirm
    )
    # payments.pay requires the label: a run without it is never offered the tool.
    run = asyncio.create_task(rt.client("test.dyn").run("go", labels={"tenant": "t"}))
    await asked.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert cancelled == ["payments.pay"]
    assert registry.calls == []  # never admitted


# --------------------------------------------------------------------------- unusual failures


async def test_an_executor_error_whose_message_cannot_be_read_is_its_tool_error() -> None:
    gate = Gate("lookup")
    gate.open["lookup"].set()
    turn = calls(("records.lookup", {"id": "r1"}))
    rt, _ = gated_runtime(GatedRecords(gate, fail={"lookup": Unprintable()}), [turn, answer()])
    (part,) = results(await rt.client("test.agent").run("go"))
    error = error_of(part)
    assert error["kind"] == "tool_failed"
    assert error["message"] == f"records.lookup failed: Unprintable: {UNPRINTABLE}"


async def test_an_exception_group_of_an_executor_is_its_tool_error() -> None:
    """What a TaskGroup inside a tool raises is an Exception like any other."""
    raised = ExceptionGroup("unhandled errors in a TaskGroup", [ValueError("no such record")])
    gate = Gate("lookup")
    gate.open["lookup"].set()
    turn = calls(("records.lookup", {"id": "r1"}))
    rt, _ = gated_runtime(GatedRecords(gate, fail={"lookup": raised}), [turn, answer()])
    (part,) = results(await rt.client("test.agent").run("go"))
    error = error_of(part)
    assert error["kind"] == "tool_failed"
    assert error["message"] == (
        "records.lookup failed: ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)"
    )


async def test_a_confirmer_error_whose_message_cannot_be_read_is_no_decision() -> None:
    async def confirm(request: ConfirmationRequest) -> bool:
        raise Unprintable()

    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    rt = payments_runtime(
        registry, [calls(("payments.pay", {"amount": 1})), answer()], confirm=confirm
    )
    (part,) = results(await rt.client("test.dyn").run("go", labels={"tenant": "t"}))
    error = error_of(part)
    assert error["kind"] == "confirmation_failed"
    assert f"Unprintable: {UNPRINTABLE}" in error["message"]
    assert registry.calls == []


class UnprintableResolve(FakeRegistry):
    async def resolve_toolset(self, name: str) -> ResolvedToolset:
        raise Unprintable()


async def test_a_registry_client_error_whose_message_cannot_be_read_is_a_read_error() -> None:
    registry = UnprintableResolve()
    rt = payments_runtime(registry, [answer()])
    with pytest.raises(RegistryReadError, match="Unprintable: <exception str"):
        await rt.client("test.dyn").run("go")


class UnprintablePlanner:
    async def plan_start(self, input: PlanInput) -> PlanResult:
        raise Unprintable()

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        raise Unprintable()


@pytest.mark.parametrize("capture", [True, False])
async def test_a_planner_error_whose_message_cannot_be_read_fails_the_run_as_itself(
    capture: bool,
) -> None:
    """The run's spans record it (by its type) rather than raising the formatting's error
    (its message is read only when payloads are captured)."""
    spans = recorder()
    spans.exporter.clear()
    rt = Runtime(telemetry=Telemetry(capture_payloads=capture))
    rt.register_agent(
        records_definition(),
        planner=UnprintablePlanner(),
        executors={records_specs.TOOLSET: records_executor.bind(GatedRecords(Gate()))},
    )
    with pytest.raises(Unprintable):
        await rt.client("test.agent").run("go", run_id="unprintable-run")
    (run,) = [
        s
        for s in spans.agentgen_spans()
        if s.name == "invoke_agent test.agent" and run_of(s) == "unprintable-run"
    ]
    (event,) = [e for e in run.events if e.name == "exception"]
    if capture:
        assert (event.attributes or {})["exception.message"] == UNPRINTABLE
        assert run.status.description == f"Unprintable: {UNPRINTABLE}"
    else:
        assert "exception.message" not in (event.attributes or {})
        assert run.status.description == "Unprintable"


# --------------------------------------------------------------------------- tool timeouts


class Hung(GatedRecords):
    """``search`` never returns (until cancelled); the other tools answer at once."""

    def __init__(self) -> None:
        gate = Gate("search")
        super().__init__(gate)
        self.gate = gate

    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        return types.Record(id=args.id, title="T", body="B")

    async def analyze(self, args: types.AnalyzeArgs, context: ToolContext) -> types.Analysis:
        return types.Analysis(summary="ok")


async def test_the_engine_tool_timeout_ends_a_hung_call_of_a_parallel_round() -> None:
    """The hung call is cancelled and answers outcome_unknown; the others of its round keep
    their results and the run goes on to its answer. (The tool never returns: the outcome
    does not depend on how long the timeout is.)"""
    executor = Hung()
    rt, planner = gated_runtime(
        executor, [THREE, answer("after")], engine=InMemoryEngine(tool_timeout=0.01)
    )
    outcome = await rt.client("test.agent").run("go")
    lookup, search, analyze = results(outcome)
    assert not lookup.is_error and not analyze.is_error
    error = error_of(search)
    assert error["kind"] == "outcome_unknown"
    assert error["message"].startswith(
        "records.search did not finish within 0.01 s (the engine's tool_timeout) and was cancelled"
    )
    assert executor.gate.cancelled == ["search"]
    assert outcome.final_text == "after"
    resumed = planner.inputs[1]
    assert isinstance(resumed, PlanResumeInput)
    assert [part.call_id for part in resumed.tool_results] == [
        "c0_records.lookup",
        "c1_records.search",
        "c2_records.analyze",
    ]


class Aborting(Hung):
    """``search`` reports its own cancellation as a failure of its own (as a client library
    reporting "request aborted" does)."""

    async def search(self, args: types.SearchArgs, context: ToolContext) -> types.SearchResult:
        try:
            return await super().search(args, context)
        except asyncio.CancelledError:
            raise ConnectionError("request aborted") from None


async def test_a_tool_that_turns_its_cancellation_into_a_failure_still_answers_unknown() -> None:
    # The tool's "request aborted" was reported as tool_failed: the model was told the call
    # failed (and could be retried) although the deadline had cut it at an unknown point.
    executor = Aborting()
    rt, _ = gated_runtime(
        executor, [THREE, answer("after")], engine=InMemoryEngine(tool_timeout=0.01)
    )
    _, search, _ = results(await rt.client("test.agent").run("go"))
    assert error_of(search)["kind"] == "outcome_unknown"
    assert executor.gate.cancelled == ["search"]


async def test_the_engine_tool_timeout_bounds_the_wait_for_a_registry_outcome() -> None:
    registry = Stalling("result")
    registry.publish(payments(), echo_handler)
    rt = payments_runtime(
        registry,
        [calls(("payments.list", {"amount": 1})), answer()],
        engine=InMemoryEngine(tool_timeout=0.01),
    )
    (part,) = results(await rt.client("test.dyn").run("go"))
    assert error_of(part)["kind"] == "outcome_unknown"
    assert registry.cancelled == ["result"]


@pytest.mark.parametrize(
    ("timeout", "error"),
    [
        *((value, ValueError) for value in (0, -1, float("inf"), float("nan"), 0.0005, 1e-7)),
        # Not a number at all: a wrong type, as every public constructor says it.
        (True, TypeError),
        ("5", TypeError),
    ],
)
def test_a_tool_timeout_is_positive_seconds_of_at_least_1_ms(
    timeout: Any, error: type[Exception]
) -> None:
    # Under 1 ms is refused as RunPolicy.model_timeout and the DSL's durations refuse it.
    with pytest.raises(
        error,
        match=r"tool timeout is a positive, finite number of seconds, at least 0\.001 \(1 ms\)",
    ):
        InMemoryEngine(tool_timeout=timeout)


def test_a_tool_timeout_of_1_ms_is_taken() -> None:
    assert InMemoryEngine(tool_timeout=0.001).tool_timeout == 0.001
