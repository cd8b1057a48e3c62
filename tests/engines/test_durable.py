"""What only a durable engine does: retries, continue-as-new, replay, waiting confirmations,
cancellation, and lost workers (in process; ``test_crash.py`` kills worker processes)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
    WorkflowHistory,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.app import RegistrationError, Runtime
from agentgen.runtime.engines.temporal import (
    NamespaceNotFoundError,
    RunCancelledError,
    TemporalEngine,
    TemporalSettings,
    build_worker,
    replay,
    time_skipping_server_path,
)
from agentgen.runtime.engines.temporal.wire import Decide
from agentgen.runtime.engines.temporal.workflow import DECIDE_UPDATE
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import ModelRequest, ModelResponse
from agentgen.runtime.registry.client import ResolvedToolset
from agentgen.runtime.runs.confirmation import ConfirmationRequest
from agentgen.runtime.runs.requests import RunError, RunRequest, ToolCallIdError
from agentgen.runtime.testing import Answer, ScriptedModel
from tests.engines.conftest import Harness
from tests.engines.test_scenarios import confirmed_records
from tests.runtime import sink_agents as sink
from tests.runtime.agents import (
    Records,
    ScriptedPlanner,
    answer,
    calls,
    echo_handler,
    provider_toolset,
    records_definition,
    register,
)
from tests.runtime.fake_registry import FakeRegistry

pytestmark = pytest.mark.asyncio(loop_scope="session")


class Flaky:
    """A model whose first ``failures`` requests fail the way a network does."""

    def __init__(self, failures: int, then: Callable[[ModelRequest], Awaitable[ModelResponse]]):
        self.failures = failures
        self.then = then
        self.requests = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests += 1
        if self.requests <= self.failures:
            raise ConnectionResetError("provider closed the connection")
        return await self.then(request)


async def _answer(request: ModelRequest) -> ModelResponse:
    return ModelResponse(Message("assistant", (TextPart("fine"),)))


async def events(env: WorkflowEnvironment, run_id: str, run: str | None = None) -> list[Any]:
    handle = env.client.get_workflow_handle(run_id, run_id=run)
    history: WorkflowHistory = await handle.fetch_history()
    return list(history.events)


def attempts(history: list[Any]) -> list[int]:
    return [
        e.activity_task_started_event_attributes.attempt
        for e in history
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]


async def test_transient_model_failures_are_retried(durable: Harness) -> None:
    model = Flaky(2, _answer)
    rt = durable.runtime()
    rt.register_model("m", model)
    rt.register_agent(records_definition(specs=()), planner=ModelPlanner("m"), executors={})
    async with durable.serving(rt):
        outcome = await rt.client("test.agent").run("go", run_id="flaky-model")
    assert outcome.final_text == "fine"
    assert model.requests == 3
    assert durable.env is not None
    assert attempts(await events(durable.env, "flaky-model")) == [3]


async def test_a_registry_that_does_not_answer_is_read_again(durable: Harness) -> None:
    class Unreachable(FakeRegistry):
        async def resolve_toolset(self, name: str) -> ResolvedToolset:
            if len(self.resolves) < 2:
                self.resolves.append(name)
                raise ConnectionRefusedError("registry down")
            return await super().resolve_toolset(name)

    registry = Unreachable()
    registry.publish(provider_toolset(), echo_handler)
    rt = durable.runtime()
    rt.register_registry("company", registry, registry)
    from examples.company.gen.assistant.agents import reader

    model = ScriptedModel([Answer("nothing to do")])
    rt.register_model("scripted", model)
    reader.register_reader_agent(rt, reader.ReaderAgentConfig(planner=ModelPlanner("scripted")))
    async with durable.serving(rt):
        outcome = await reader.new_client(rt).run("go")
    assert outcome.final_text == "nothing to do"
    assert registry.resolves == ["records"] * 3
    assert len(model.requests) == 1


async def test_continue_as_new_keeps_the_transcript_and_saved_contracts(
    temporal: WorkflowEnvironment,
) -> None:
    # Low enough to continue once or twice (Temporal starts at most one execution of a
    # workflow ID per second, so every continuation costs a second).
    settings = TemporalSettings(continue_as_new_after_events=30)
    harness = Harness("temporal", temporal, settings)
    registry = FakeRegistry()
    token = registry.publish(provider_toolset(), echo_handler)
    rt = harness.runtime()
    rt.register_registry("company", registry, registry)
    from tests.runtime.agents import Sources

    definition = records_definition(id="test.long", specs=(), deferred_tool_ids=())
    sources = Sources(toolsets=[("company", "records", "", False)])
    turns = [calls(("records.lookup", {"id": str(i)}), prefix=f"t{i}_") for i in range(4)]
    planner = ScriptedPlanner([*turns, answer("all looked up")])
    rt.register_agent(definition.with_registry_tools(sources), planner=planner, executors={})
    async with harness.serving(rt):
        outcome = await rt.client("test.long").run("look", run_id="long-run")
    assert outcome.final_text == "all looked up"
    assert outcome.tool_calls == 4
    assert len(outcome.transcript) == 10
    assert [json.loads(m.parts[0].content)["id"] for m in outcome.transcript[2::2][:4]] == [  # type: ignore[union-attr]
        "0",
        "1",
        "2",
        "3",
    ]
    assert [a.call.call_id for a in outcome.accepted_calls] == [
        f"t{i}_0_records.lookup" for i in range(4)
    ]
    assert all(a.binding and a.binding.registration_token == token for a in outcome.accepted_calls)
    # The run went on in new executions: each one's first event names the one before.
    executions, run = 1, None
    while True:
        started = (await events(temporal, "long-run", run))[0]
        previous = started.workflow_execution_started_event_attributes.continued_execution_run_id
        if not previous:
            break
        executions, run = executions + 1, previous
    assert executions >= 2
    closing = (await events(temporal, "long-run", run))[-1].event_type
    assert closing == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
    # The run's call IDs survive the new execution: a repeated one is still refused.
    planner.turns[:] = [
        calls(("records.lookup", {"id": "a"}), prefix="x"),
        calls(("records.lookup", {"id": "b"}), prefix="y"),
        calls(("records.lookup", {"id": "c"}), prefix="x"),
    ]
    async with harness.serving(rt):
        with pytest.raises(ToolCallIdError, match="repeats tool call ID 'x0_records.lookup'"):
            await rt.client("test.long").run("again")


async def test_histories_replay_on_the_workflow_code(durable: Harness) -> None:
    """The workflow is deterministic: its own history replays without a divergence (the
    SDK's replayer runs it in the sandbox, against the recorded activity results)."""
    import importlib

    sink = importlib.import_module("tests.runtime.sink_agents")
    from tests.runtime.test_run_loop import ExpertPlanner

    async def confirm(request: ConfirmationRequest) -> bool:
        return True

    rt = durable.runtime(confirm=confirm)
    rt.register_agent(sink.expert_definition(), planner=ExpertPlanner(), executors={})
    planner = ScriptedPlanner(
        [
            calls(("ask_expert.ask", {"question": "life"})),
            calls(("records.search", {"query": "q"}), ("records.lookup", {"id": "1"}), prefix="r"),
            answer("done"),
        ]
    )
    triage = sink.triage_definition()
    definition = confirmed_records()
    combined = type(triage)(
        id="helpdesk.triage",
        description="Triages.",
        specs=(*triage.specs, *definition.specs),
        agent_executors=triage.agent_executors,
    )
    register(rt, planner, combined)
    async with durable.serving(rt):
        outcome = await rt.client("helpdesk.triage").run("go", run_id="replayed")
    assert outcome.final_text == "done" and len(outcome.child_runs) == 1
    assert durable.env is not None
    handle = durable.env.client.get_workflow_handle("replayed")
    history = await handle.fetch_history()
    child = await durable.env.client.get_workflow_handle(outcome.child_runs[0]).fetch_history()
    await replay([history, child.to_json()])


def _operated(durable: Harness) -> tuple[Runtime, Records, TemporalEngine]:
    """A runtime whose searches an operator confirms (its own confirmer is never asked)."""

    async def confirm(request: ConfirmationRequest) -> bool:
        raise AssertionError("decided by the operator, not the runtime's confirmer")

    rt = durable.runtime(confirm=confirm)
    planner = ScriptedPlanner([calls(("records.search", {"query": "tokyo"})), answer("ok")])
    executor = register(rt, planner, confirmed_records())
    return rt, executor, durable.engine(rt)


async def test_a_confirmation_waits_across_workers_and_any_client_decides(
    durable: Harness,
) -> None:
    rt, executor, engine = _operated(durable)
    request = RunRequest("test.agent", (Message.user("go"),), run_id="waits")
    async with durable.serving(rt):
        await engine.start(rt, request)
        pending = await _pending(engine, "waits")
    # No worker runs now; the run waits in the server. A new worker takes it over.
    assert [(p.tool_call_id, p.prompt) for p in pending] == [
        ("c0_records.search", "Search for tokyo?")
    ]
    async with durable.serving(rt):
        await engine.confirm("waits", "c0_records.search", approved=True)
        outcome = await engine.result(rt, "waits", decide=False)
        with pytest.raises(LookupError, match="no confirmation pending"):
            await engine.confirm("waits", "c0_records.search", approved=False)
    assert outcome.final_text == "ok"
    assert [name for name, _, _ in executor.calls] == ["search"]


async def test_a_decision_that_is_not_a_bool_is_refused_not_taken_for_an_approval(
    durable: Harness,
) -> None:
    """``"no"`` (a form field, a chat reply) is truthy: it used to approve the call and run the
    tool. The engine refuses it, and so does the workflow for any client that sends it."""
    rt, executor, engine = _operated(durable)
    request = RunRequest("test.agent", (Message.user("go"),), run_id="says-no")
    async with durable.serving(rt):
        await engine.start(rt, request)
        (pending,) = await _pending(engine, "says-no")
        for answer_given in ("no", 0, None):
            with pytest.raises(TypeError, match=r"approved must be True or False, not"):
                await engine.confirm("says-no", pending.tool_call_id, answer_given)  # type: ignore[arg-type]
        # The update itself, as another client would send it: the workflow rejects it.
        client = await engine.client()
        handle = client.get_workflow_handle("says-no")
        with pytest.raises(WorkflowUpdateFailedError) as rejected:
            await handle.execute_update(DECIDE_UPDATE, Decide(pending.tool_call_id, "no"))  # type: ignore[arg-type]
        assert "must approve with true or deny with false, not 'no'" in str(rejected.value.cause)
        assert await engine.pending_confirmations("says-no") == [pending]  # still undecided
        await engine.confirm("says-no", pending.tool_call_id, False)
        outcome = await engine.result(rt, "says-no", decide=False)
    assert executor.calls == []  # denied: the tool never ran
    (result,) = outcome.transcript[2].parts
    assert isinstance(result, ToolResultPart) and result.is_error
    assert json.loads(result.content) == {"denied": "Search for tokyo was denied."}


async def test_a_cancelled_run_raises_run_cancelled(durable: Harness) -> None:
    async def confirm(request: ConfirmationRequest) -> bool:
        await asyncio.Event().wait()  # nobody ever answers
        return True

    rt = durable.runtime(confirm=confirm)
    executor = register(
        rt, ScriptedPlanner([calls(("records.search", {"query": "x"}))]), confirmed_records()
    )
    engine = durable.engine(rt)
    async with durable.serving(rt):
        running = asyncio.create_task(rt.client("test.agent").run("go", run_id="cancelled"))
        await _pending(engine, "cancelled")
        await engine.cancel("cancelled")
        with pytest.raises(RunCancelledError, match="run 'cancelled' was cancelled"):
            await running
    assert executor.calls == []


async def test_a_run_id_in_use_is_named_with_what_to_do(durable: Harness) -> None:
    async def confirm(request: ConfirmationRequest) -> bool:
        raise AssertionError("the run is cancelled while it waits")

    rt = durable.runtime(confirm=confirm)
    register(rt, ScriptedPlanner([calls(("records.search", {"query": "x"}))]), confirmed_records())
    engine = durable.engine(rt)
    async with durable.serving(rt):
        request = RunRequest("test.agent", [Message.user("go")], run_id="in-use")
        assert await engine.start(rt, request) == "in-use"
        await _pending(engine, "in-use")  # running: it waits for its confirmation
        with pytest.raises(RunError, match=r"^run 'in-use' is already running on Temporal") as e:
            await rt.client("test.agent").run("again", run_id="in-use")
        assert "engine.result(runtime, 'in-use'), or give the new run another run_id" in str(
            e.value
        )
        await engine.cancel("in-use")
        with pytest.raises(RunCancelledError):
            await engine.result(rt, "in-use", decide=False)


async def test_a_run_id_the_server_does_not_know_is_named(durable: Harness) -> None:
    rt = durable.runtime()
    register(rt, ScriptedPlanner([answer("never")]))
    engine = durable.engine(rt)
    message = r"^no run 'no-such-run' on Temporal \(namespace 'default'\): check the run ID"
    with pytest.raises(LookupError, match=message):
        await engine.result(rt, "no-such-run")
    with pytest.raises(LookupError, match=message):
        await engine.cancel("no-such-run")


async def test_a_namespace_the_server_does_not_have_is_named_with_what_to_do(
    durable: Harness,
) -> None:
    # The server's own words were "Namespace no-such-namespace is not found." (start), and a
    # run looked up in it was "no run ... on Temporal", as if the namespace existed.
    assert durable.env is not None
    address = durable.env.client.service_client.config.target_host
    engine = TemporalEngine(address=address, namespace="no-such-namespace", task_queue="q")
    rt = Runtime(engine=engine)
    register(rt, ScriptedPlanner([answer("never")]))
    expected = (
        f"Temporal namespace 'no-such-namespace' does not exist on {address}: create it "
        "(temporal operator namespace create) or pass an existing one "
        "(TemporalEngine(namespace=...))"
    )
    with pytest.raises(NamespaceNotFoundError) as started:
        await rt.client("test.agent").run("go")
    assert str(started.value) == expected
    with pytest.raises(NamespaceNotFoundError) as started:
        await engine.start(rt, RunRequest("test.agent", [Message.user("go")]))
    assert str(started.value) == expected
    for asked in (engine.result(rt, "some-run"), engine.cancel("some-run")):
        with pytest.raises(NamespaceNotFoundError) as looked_up:
            await asked
        assert str(looked_up.value) == expected


async def test_a_server_that_cannot_be_reached_is_named_with_what_to_do() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for address in (f"127.0.0.1:{port}", "not an address"):
        rt = Runtime(engine=TemporalEngine(address=address, task_queue="q"))
        register(rt, ScriptedPlanner([answer("never")]))
        with pytest.raises(RuntimeError) as failed:
            await rt.client("test.agent").run("go")
        message = str(failed.value)
        assert message.startswith(
            f"TemporalEngine cannot connect to Temporal at {address!r} (namespace 'default'): "
        )
        assert message.endswith(
            "start the server (locally: temporal server start-dev) or give "
            "TemporalEngine(address='host:port') the one to use"
        )


async def test_child_runs_wait_for_their_own_confirmations(durable: Harness) -> None:
    import importlib

    sink = importlib.import_module("tests.runtime.sink_agents")
    asked: list[ConfirmationRequest] = []

    async def confirm(request: ConfirmationRequest) -> bool:
        asked.append(request)
        return True

    rt = durable.runtime(confirm=confirm)
    expert_planner = ScriptedPlanner(
        [calls(("records.search", {"query": "deep"})), answer('{"answer": "found"}')]
    )

    class Structured(ScriptedPlanner):
        async def plan_resume(self, input: Any) -> Any:
            result = await super().plan_resume(input)
            if not result.message.tool_calls():
                return type(result)(result.message, final_value={"answer": result.message.text})
            return result

    expert_planner = Structured(list(expert_planner.turns))
    expert = confirmed_records()
    expert = type(expert)(id="helpdesk.expert", description="Expert.", specs=expert.specs)
    register(rt, expert_planner, expert)
    rt.register_agent(
        sink.triage_definition(),
        planner=ScriptedPlanner([calls(("ask_expert.ask", {"question": "q"})), answer("relay")]),
        executors={},
    )
    async with durable.serving(rt):
        outcome = await rt.client("helpdesk.triage").run("go")
    (child,) = outcome.child_runs
    assert [(r.run_id, r.tool_id) for r in asked] == [(child, "records.search")]
    assert outcome.final_text == "relay"


async def test_default_retries_back_off_on_the_time_skipping_server() -> None:
    """The production retry policy (1 s, doubling) on Temporal's time-skipping test server:
    three transient failures, then the answer."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=time_skipping_server_path()
    )
    try:
        model = Flaky(3, _answer)
        rt = Runtime(engine=TemporalEngine(client=env.client, task_queue="skipping"))
        rt.register_model("m", model)
        rt.register_agent(records_definition(specs=()), planner=ModelPlanner("m"), executors={})
        async with build_worker(env.client, rt, "skipping"):
            outcome = await rt.client("test.agent").run("go", run_id="skipping")
        assert outcome.final_text == "fine" and model.requests == 4
        assert attempts(await events(env, "skipping")) == [4]
    finally:
        await env.shutdown()


async def _pending(engine: TemporalEngine, run_id: str) -> list[ConfirmationRequest]:
    for _ in range(500):
        try:
            pending = await engine.pending_confirmations(run_id)
        except LookupError:  # a run started by a task of the test: not started yet
            pending = []
        if pending:
            return pending
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id!r} never asked for a confirmation")


async def test_starting_a_run_checks_the_registrations_like_the_first_run() -> None:
    # engine.start used to skip the runtime's seal: a registry nobody registered surfaced only
    # on a worker, as the run's failure.
    with socket.socket() as probe:  # the server is never asked: the check comes first
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    engine = TemporalEngine(address=address, task_queue="q")
    rt = Runtime(engine=engine)
    register(rt, ScriptedPlanner([answer("never")]), records_definition(registries=("tools",)))
    with pytest.raises(RegistrationError, match="registries consumed by registered agents"):
        await engine.start(rt, RunRequest("test.agent", [Message.user("go")]))
    assert not rt.sealed


class _ExpertSearches:
    """A child run that asks to search under the call ID ``call_1``, then answers."""

    async def plan_start(self, input: PlanInput) -> PlanResult:
        call = ToolCallPart("call_1", "records.search", json.dumps({"query": "child"}))
        return PlanResult(Message("assistant", (call,)))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        return PlanResult(answer('{"answer": "found"}'), final_value={"answer": "found"})


async def test_a_call_id_shared_in_a_tree_decides_the_named_run_first(durable: Harness) -> None:
    """Call IDs are the model's: a parent and its child runs may all wait on ``call_1``.
    ``confirm(parent, "call_1")`` used to refuse, telling the caller to use the run ID that
    holds the call, which for the parent's own call was the very ID refused: the parent's
    confirmation could not be decided until its children's were. The named run wins; only a
    call it does not wait on is looked for in its child runs, and refused when several wait."""

    async def confirm(request: ConfirmationRequest) -> bool:
        raise AssertionError("decided by the operator, not the runtime's confirmer")

    rt = durable.runtime(confirm=confirm)
    records = confirmed_records()
    expert = register(rt, _ExpertSearches(), replace(records, id="helpdesk.expert"))  # type: ignore[arg-type]
    parent_turn = Message(
        "assistant",
        (
            ToolCallPart("call_1", "records.search", json.dumps({"query": "parent"})),
            ToolCallPart("ask_a", "ask_expert.ask", json.dumps({"question": "a"})),
            ToolCallPart("ask_b", "ask_expert.ask", json.dumps({"question": "b"})),
        ),
    )
    triage = replace(
        records,
        id="helpdesk.triage",
        specs=(*records.specs, sink.ASK),
        agent_executors=("helpdesk.expert",),
    )
    parent = register(rt, ScriptedPlanner([parent_turn, answer("relayed")]), triage)
    engine = durable.engine(rt)
    async with durable.serving(rt):
        await engine.start(rt, RunRequest("helpdesk.triage", (Message.user("go"),), run_id="tree"))
        for _ in range(500):  # until the parent and both child runs wait
            waiting = await engine.pending_confirmations("tree")
            if len(waiting) == 3:
                break
            await asyncio.sleep(0.02)
        assert len(waiting) == 3
        assert {(w.tool_call_id, w.run_id == "tree") for w in waiting} == {
            ("call_1", True),
            ("call_1", False),
        }
        children = sorted(w.run_id for w in waiting if w.run_id != "tree")
        await engine.confirm("tree", "call_1", approved=True)  # the parent's own
        assert sorted(w.run_id for w in await engine.pending_confirmations("tree")) == children
        with pytest.raises(
            LookupError,
            match=r"run 'tree' does not wait on tool call 'call_1', but several of its child "
            r"runs do \('\w+', '\w+'\); decide it with the ID of the run that holds it",
        ) as refused:
            await engine.confirm("tree", "call_1", approved=True)
        assert all(repr(run_id) in str(refused.value) for run_id in children)
        await engine.confirm(children[0], "call_1", approved=True)
        # One child run waits on it now: naming the parent finds it.
        await engine.confirm("tree", "call_1", approved=False)
        outcome = await engine.result(rt, "tree", decide=False)
    assert outcome.final_text == "relayed"
    assert [args.query for _, args, _ in parent.calls] == ["parent"]
    assert [args.query for _, args, _ in expert.calls] == ["child"]  # the other was denied


class _Overtaken(TemporalEngine):
    """An engine whose decision another client's overtakes: ``first`` decides the call (or
    cancels the run) between this engine's look at the run and its own decision."""

    def __init__(self, first: Callable[[], Awaitable[None]], **options: Any) -> None:
        super().__init__(**options)
        self.first = first

    async def _decide(self, workflow_id: str, decision: Decide) -> None:
        await self.first()
        await super()._decide(workflow_id, decision)


async def test_a_confirmation_decided_meanwhile_by_another_client_is_a_lookup_error(
    durable: Harness,
) -> None:
    """Two people answering at once: the second confirm used to raise the SDK's
    ``WorkflowUpdateFailedError`` ("Workflow update failed"), which names nothing and is not
    the documented ``LookupError``."""
    rt, executor, engine = _operated(durable)
    request = RunRequest("test.agent", (Message.user("go"),), run_id="answered-twice")
    async with durable.serving(rt):
        await engine.start(rt, request)
        (pending,) = await _pending(engine, "answered-twice")

        async def first() -> None:
            await engine.confirm("answered-twice", pending.tool_call_id, True)

        assert durable.env is not None
        second = _Overtaken(first, client=durable.env.client, task_queue=engine.task_queue)
        with pytest.raises(
            LookupError,
            match=r"run 'answered-twice' has no confirmation pending for 'c0_records.search' "
            r"any more: it was decided meanwhile, by another client",
        ):
            await second.confirm("answered-twice", pending.tool_call_id, False)
        outcome = await engine.result(rt, "answered-twice", decide=False)
    assert outcome.final_text == "ok"
    assert [name for name, _, _ in executor.calls] == ["search"]  # the first answer stands


async def test_a_confirmation_of_a_run_that_ended_meanwhile_is_a_lookup_error(
    durable: Harness,
) -> None:
    """The run was cancelled between the look and the decision: the server's raw
    ``RPCError`` ("workflow execution already completed") used to reach the caller."""
    rt, executor, engine = _operated(durable)
    request = RunRequest("test.agent", (Message.user("go"),), run_id="ended-meanwhile")
    async with durable.serving(rt):
        await engine.start(rt, request)
        (pending,) = await _pending(engine, "ended-meanwhile")

        async def first() -> None:
            await engine.cancel("ended-meanwhile")
            with pytest.raises(RunCancelledError):
                await engine.result(rt, "ended-meanwhile", decide=False)

        assert durable.env is not None
        late = _Overtaken(first, client=durable.env.client, task_queue=engine.task_queue)
        with pytest.raises(
            LookupError,
            match=r"run 'ended-meanwhile' ended before the decision on 'c0_records.search' "
            r"reached it",
        ):
            await late.confirm("ended-meanwhile", pending.tool_call_id, True)
    assert executor.calls == []


async def test_pending_confirmations_of_an_unknown_run_is_a_lookup_error(
    durable: Harness,
) -> None:
    """A mistyped run ID used to list nothing pending, for ever, as a run that waits for
    nothing does."""
    _, _, engine = _operated(durable)
    with pytest.raises(LookupError, match=r"no run 'no-such-run' on Temporal"):
        await engine.pending_confirmations("no-such-run")
    with pytest.raises(LookupError, match=r"no run 'no-such-run' on Temporal"):
        await engine.confirm("no-such-run", "c0_records.search", True)


async def test_a_waiting_run_no_worker_answers_for_is_not_read_as_waiting_for_nothing(
    durable: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no worker polling (a deployment, a crash), the status query goes unanswered: the
    run's confirmation was listed as nothing pending, and ``confirm`` said there was none to
    decide, while the run waited for it."""
    from agentgen.runtime.engines.temporal import client as client_module

    monkeypatch.setattr(client_module, "_QUERY_TIMEOUT", timedelta(seconds=0.5))
    rt, executor, engine = _operated(durable)
    request = RunRequest("test.agent", (Message.user("go"),), run_id="unanswered")
    async with durable.serving(rt):
        await engine.start(rt, request)
        (pending,) = await _pending(engine, "unanswered")
    # Both causes are named, with what to check for each: no worker polling the queue, or
    # every worker busy past the query's timeout (the message named only the first).
    unanswered = (
        r"run 'unanswered': its pending confirmations could not be read \(.*\); a worker answers "
        r"that query, and none did within 0\.5 s: either no worker polls the run's task queue "
        rf"\(this engine's is '{engine.task_queue}': check that one runs for it, agentgen worker "
        r"--task-queue \.\.\.\), or every worker polling it was busy past that time \(check "
        r"the workers' load"
    )
    with pytest.raises(RuntimeError, match=unanswered):
        await engine.pending_confirmations("unanswered")
    with pytest.raises(RuntimeError, match=unanswered):
        await engine.confirm("unanswered", pending.tool_call_id, True)
    async with durable.serving(rt):  # a worker again: the confirmation still waits
        assert await engine.pending_confirmations("unanswered") == [pending]
        await engine.confirm("unanswered", pending.tool_call_id, True)
        outcome = await engine.result(rt, "unanswered", decide=False)
    assert outcome.final_text == "ok"
    assert [name for name, _, _ in executor.calls] == ["search"]


async def test_an_ended_run_waits_for_nothing_even_with_no_worker_left(
    durable: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that ended waits for no confirmation. With no worker left to answer the status
    query (the release that ran it retired), ``pending_confirmations`` and ``confirm`` used to
    say its confirmations could not be read and to check that a worker polls its queue."""
    from agentgen.runtime.engines.temporal import client as client_module

    monkeypatch.setattr(client_module, "_QUERY_TIMEOUT", timedelta(seconds=0.5))
    rt, _, engine = _operated(durable)
    async with durable.serving(rt):
        await engine.start(rt, RunRequest("test.agent", (Message.user("go"),), run_id="over"))
        (pending,) = await _pending(engine, "over")
        await engine.confirm("over", pending.tool_call_id, True)
        outcome = await engine.result(rt, "over", decide=False)
    assert outcome.final_text == "ok"
    assert await engine.pending_confirmations("over") == []
    with pytest.raises(LookupError, match=r"run 'over' has no confirmation pending"):
        await engine.confirm("over", pending.tool_call_id, True)


class _ChildQueriesTimeOut(Interceptor):
    """A client whose status queries of any run but ``root`` time out, as a busy worker's may
    (the SDK's own client interceptor seam)."""

    def __init__(self, root: str) -> None:
        self.root = root

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _QueriesTimeOut(next, self.root)


class _QueriesTimeOut(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, root: str) -> None:
        super().__init__(next)
        self.root = root

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        if input.id != self.root:
            raise RPCError("Timeout expired", RPCStatusCode.DEADLINE_EXCEEDED, b"")
        return await super().query_workflow(input)


async def test_a_child_run_whose_confirmations_cannot_be_read_is_not_read_as_waiting_for_nothing(
    durable: Harness,
) -> None:
    """A child run's status query that failed (a busy worker) was skipped: the operator's list
    left its confirmation out, and ``confirm`` of its call said nothing was pending, while the
    child run waited for it. Like the run's own, it is now an error naming the child run."""

    async def confirm(request: ConfirmationRequest) -> bool:
        raise AssertionError("decided by the operator, not the runtime's confirmer")

    rt = durable.runtime(confirm=confirm)
    records = confirmed_records()
    register(rt, _ExpertSearches(), replace(records, id="helpdesk.expert"))  # type: ignore[arg-type]
    triage = replace(sink.triage_definition(), specs=(sink.ASK,))
    rt.register_agent(
        triage,
        planner=ScriptedPlanner([calls(("ask_expert.ask", {"question": "q"})), answer("relayed")]),
        executors={},
    )
    engine = durable.engine(rt)
    assert durable.env is not None
    config = durable.env.client.config()
    config["interceptors"] = [*config.get("interceptors", ()), _ChildQueriesTimeOut("deep")]
    operator = TemporalEngine(client=Client(**config), task_queue=engine.task_queue)
    async with durable.serving(rt):
        await engine.start(rt, RunRequest("helpdesk.triage", (Message.user("go"),), run_id="deep"))
        (waiting,) = await _pending(engine, "deep")
        unread = (
            rf"run '{waiting.run_id}': its pending confirmations could not be read "
            r"\(RPCError: Timeout expired\)"
        )
        with pytest.raises(RuntimeError, match=unread):
            await operator.pending_confirmations("deep")
        with pytest.raises(RuntimeError, match=unread):
            await operator.confirm("deep", "call_1", True)
        await engine.confirm("deep", "call_1", True)
        outcome = await engine.result(rt, "deep", decide=False)
    assert outcome.final_text == "relayed"
