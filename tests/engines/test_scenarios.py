"""SPEC K1, G4, G7, G9: the same application code and the same scenarios on both engines.

Each test builds its runtime through the harness (in memory, or on Temporal with a worker
serving the same runtime) and asserts the same outcome: the engines share the run loop and
its steps, so nothing here depends on which one ran.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.agents.executors import serving_registry_call
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.contracts.specs import ConfirmationSpec
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import ModelRequest, ModelResponse, ToolSearchUnsupportedError
from agentgen.runtime.registry.client import MAX_CALL_DEPTH, ToolCallMeta
from agentgen.runtime.runs.catalog import VersionMismatchError
from agentgen.runtime.runs.confirmation import ConfirmationRequest
from agentgen.runtime.runs.requests import (
    MissingLabelsError,
    RunError,
    RunRequest,
    ToolCallIdError,
)
from agentgen.runtime.testing import METADATA_KEY, Answer, Call, ScriptedModel, Search
from examples.company.gen.assistant.agents import reader
from examples.records.gen.assistant.agents import assistant as assistant_agent
from tests.e2e.test_records_e2e import Records as TokyoRecords
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
    register_registry_reader,
)
from tests.runtime.fake_registry import FakeRegistry
from tests.runtime.test_run_loop import ExpertPlanner
from tests.runtime.test_saved_contracts import payments

pytestmark = pytest.mark.asyncio(loop_scope="session")


def error_of(part: Any) -> dict[str, Any]:
    assert isinstance(part, ToolResultPart) and part.is_error
    error: dict[str, Any] = json.loads(part.content)["error"]
    return error


async def test_records_example_finds_deferred_tools_by_search(harness: Harness) -> None:
    model = ScriptedModel(
        [
            Search("search records"),
            Call("records.search", {"query": "weather", "limit": 2}),
            Search("analyze"),
            Call("records.analyze", {"ids": ["r1", "r2"]}),
            Answer("Two records, both sunny."),
        ]
    )
    executor = TokyoRecords()
    rt = harness.runtime()
    rt.register_model("scripted", model)
    assistant_agent.register_assistant_agent(
        rt,
        assistant_agent.AssistantAgentConfig(
            planner=ModelPlanner("scripted"), records_executor=executor
        ),
    )
    async with harness.serving(rt):
        outcome = await assistant_agent.new_client(rt).run("What do the weather records say?")

    assert outcome.final_text == "Two records, both sunny."
    assert outcome.tool_calls == 2
    assert [name for name, _ in executor.calls] == ["search", "analyze"]
    assert model.searches[0] == ("search records", ["records.search", "records.analyze"])
    assert {t.id: t.deferred for t in model.requests[0].tools} == {
        "records.lookup": False,
        "records.search": True,
        "records.analyze": True,
    }
    roles = [m.role for m in outcome.transcript]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    search_result = outcome.transcript[2].parts[0]
    assert json.loads(search_result.content) == {"ids": ["r1", "r2"]}  # type: ignore[union-attr]
    # The search records ride in the message metadata, across the workflow too.
    assert outcome.transcript[1].metadata[METADATA_KEY][0]["query"] == "search records"
    assert model.requests[2].messages[1].metadata == outcome.transcript[1].metadata
    assert [a.spec.id for a in outcome.accepted_calls] == ["records.search", "records.analyze"]
    assert model.finished and rt.sealed


async def test_registry_backed_agent_reads_its_registry_once_per_planning_activity(
    harness: Harness,
) -> None:
    registry = FakeRegistry()
    token = registry.publish(provider_toolset(), echo_handler)
    model = ScriptedModel(
        [Search("search records"), Call("records.search", {"query": "q"}), Answer("done")]
    )
    rt = harness.runtime()
    rt.register_registry("company", registry, registry)
    rt.register_model("scripted", model)
    reader.register_reader_agent(rt, reader.ReaderAgentConfig(planner=ModelPlanner("scripted")))
    async with harness.serving(rt):
        outcome = await reader.new_client(rt).run("search")
    assert outcome.final_text == "done"
    assert json.loads(outcome.transcript[2].parts[0].content) == {"ids": ["from records.search"]}  # type: ignore[union-attr]
    assert registry.resolves == ["records", "records"]  # G4: once per planning activity
    assert [(tool, token_) for tool, _, token_ in registry.calls] == [("records.search", token)]
    (accepted,) = outcome.accepted_calls
    assert accepted.binding is not None and accepted.binding.registration_token == token
    assert {t.id: t.deferred for t in model.requests[0].tools}["records.search"] is True


async def test_registry_backed_agent_against_the_registry_service(harness: Harness) -> None:
    """The registry service (uvicorn on 127.0.0.1, SQLite) with a provider serving the
    quickstart's weather toolset through the provider SDK; the agent reaches it through
    HttpRegistryClient and HttpResultStream, on either engine."""
    from agentgen.runtime.registry.http_client import HttpRegistryClient, HttpResultStream
    from agentgen.runtime.registry.sqlite_store import SQLiteStore
    from tests.registry.conftest import running_registry
    from tests.registry.test_provider import WEATHER, Weather, providing

    weather = Weather()
    async with (
        running_registry(SQLiteStore(":memory:")) as registry,
        providing(registry.url, weather) as (_, _, token),
    ):
        client = HttpRegistryClient(registry.url)
        rt = harness.runtime()
        rt.register_registry("company", client, HttpResultStream(client, poll_ms=2_000))
        planner = ScriptedPlanner([calls(("weather.forecast", {"city": "Oslo"})), answer()])
        definition = records_definition(id="test.forecaster", specs=(), deferred_tool_ids=())
        sources = Sources(toolsets=[("company", WEATHER, "", False)])
        rt.register_agent(definition.with_registry_tools(sources), planner=planner, executors={})
        try:
            async with harness.serving(rt):
                outcome = await rt.client("test.forecaster").run("weather?", labels={"t": "1"})
        finally:
            await client.aclose()
    result = outcome.transcript[2].parts[0]
    assert not result.is_error  # type: ignore[union-attr]
    assert json.loads(result.content)["city"] == "Oslo"  # type: ignore[union-attr]
    assert [args.city for args, _ in weather.seen] == ["Oslo"]  # the provider ran it once
    (accepted,) = outcome.accepted_calls
    assert accepted.binding is not None and accepted.binding.registration_token == token
    assert "weather.forecast" in [d.id for d in planner.seen[0]]


async def test_agent_tool_runs_as_a_child_run(harness: Harness) -> None:
    import importlib

    sink = importlib.import_module("tests.runtime.sink_agents")
    rt = harness.runtime()
    expert = ExpertPlanner()
    rt.register_agent(sink.expert_definition(), planner=expert, executors={})
    planner = ScriptedPlanner([calls(("ask_expert.ask", {"question": "life"})), answer("relayed")])
    rt.register_agent(sink.triage_definition(), planner=planner, executors={})
    async with harness.serving(rt):
        outcome = await rt.client("helpdesk.triage").run(
            "ask", run_id=f"parent-{harness.kind}", labels={"tenant": "t"}
        )
    (child,) = outcome.child_runs
    assert child != outcome.run_id
    assert expert.inputs[0].run.parent_run_id == outcome.run_id
    assert expert.inputs[0].run.run_id == child
    assert expert.inputs[0].run.labels == {"tenant": "t"}
    # G9: the child answered against the result contract saved at acceptance.
    assert expert.inputs[0].run.result_schema_json == sink.ASK.result.schema_json
    result = outcome.transcript[2].parts[0]
    assert json.loads(result.content) == {"answer": "42 is the answer to life"}  # type: ignore[union-attr]
    if harness.durable:
        assert harness.env is not None
        described = await harness.env.client.get_workflow_handle(child).describe()
        assert described.parent_id == outcome.run_id  # a child workflow of the run


def confirmed_records(prompt: str = "Search for {{ query }}?") -> Any:
    specs = tuple(
        replace(s, confirmation=ConfirmationSpec(prompt, "Search for {{ query }} was denied."))
        if s.id == "records.search"
        else s
        for s in records_definition().specs
    )
    return records_definition(specs=specs)


@pytest.mark.parametrize("approve", [True, False], ids=["approved", "denied"])
async def test_a_confirmation_is_asked_with_the_saved_prompt_and_decides(
    harness: Harness, approve: bool
) -> None:
    asked: list[ConfirmationRequest] = []

    async def confirm(request: ConfirmationRequest) -> bool:
        asked.append(request)
        return approve

    rt = harness.runtime(confirm=confirm)
    planner = ScriptedPlanner(
        [calls(("records.search", {"query": "tokyo"}), ("records.lookup", {"id": "1"})), answer()]
    )
    executor = register(rt, planner, confirmed_records())
    async with harness.serving(rt):
        outcome = await rt.client("test.agent").run("go")
    (request,) = asked
    assert (request.tool_id, request.prompt) == ("records.search", "Search for tokyo?")
    assert request.arguments == {"query": "tokyo", "limit": 10}
    assert request.run_id == outcome.run_id
    searched, looked_up = outcome.transcript[2].parts
    assert not looked_up.is_error  # type: ignore[union-attr]
    if approve:
        assert sorted(name for name, _, _ in executor.calls) == ["lookup", "search"]
        assert json.loads(searched.content) == {"ids": ["r1"]}  # type: ignore[union-attr]
    else:
        assert [name for name, _, _ in executor.calls] == ["lookup"]
        assert searched.is_error  # type: ignore[union-attr]
        assert json.loads(searched.content) == {"denied": "Search for tokyo was denied."}  # type: ignore[union-attr]


async def test_a_failing_confirmer_fails_only_its_call(harness: Harness) -> None:
    async def confirm(request: ConfirmationRequest) -> bool:
        raise TimeoutError("approver unreachable")

    rt = harness.runtime(confirm=confirm)
    planner = ScriptedPlanner([calls(("records.search", {"query": "x"})), answer()])
    executor = register(rt, planner, confirmed_records())
    async with harness.serving(rt):
        outcome = await rt.client("test.agent").run("go")
    assert error_of(outcome.transcript[2].parts[0]) == {
        "kind": "confirmation_failed",
        "message": "confirming records.search failed (TimeoutError: approver unreachable); "
        "it did not run",
    }
    assert executor.calls == []


def payer_runtime(harness: Harness, registry: FakeRegistry) -> tuple[Any, list[str]]:
    """A runtime with the registry, whose confirmer approves and keeps each prompt."""
    decided: list[str] = []

    async def confirm(request: ConfirmationRequest) -> bool:
        decided.append(request.prompt)
        return True

    rt = harness.runtime(confirm=confirm)
    rt.register_registry("company", registry, registry)
    return rt, decided


def payer(rt: Any, planner: ScriptedPlanner) -> None:
    definition = records_definition(id="test.payer", specs=(), deferred_tool_ids=())
    sources = Sources(toolsets=[("company", "payments", "", False)])
    rt.register_agent(definition.with_registry_tools(sources), planner=planner, executors={})


async def test_a_registry_change_between_planning_activities(harness: Harness) -> None:
    """G4, G7: the second planning activity sees the new catalog; the call accepted by the
    first keeps its old contract and token."""
    registry = FakeRegistry()
    refund = {"name": "payments.refund", "title": "Refund", "description": "refund a payment."}
    old = payments()
    new = old.model_copy(
        update={"tools": [*old.tools, old.tools[1].model_copy(update=refund)]}, deep=True
    )
    tokens: list[str] = []

    async def pay_then_republish(tool: str, payload: Any, meta: ToolCallMeta) -> Any:
        tokens.append(registry.publish(new, pay_then_republish, revision="r2"))
        return {"paid": payload["amount"]}

    tokens.append(registry.publish(old, pay_then_republish))
    rt, decided = payer_runtime(harness, registry)
    planner = ScriptedPlanner(
        [
            calls(("payments.pay", {"amount": 5})),
            calls(("payments.refund", {"amount": 5}), prefix="d"),
            answer(),
        ]
    )
    payer(rt, planner)
    async with harness.serving(rt):
        outcome = await rt.client("test.payer").run("pay", labels={"tenant": "t"})
    first, second = (ids for ids in ([d.id for d in seen] for seen in planner.seen[:2]))
    assert "payments.refund" not in first and "payments.refund" in second
    pay, refund_call = outcome.accepted_calls
    assert pay.binding is not None and refund_call.binding is not None
    assert pay.binding.registration_token == tokens[0] != tokens[1]
    assert refund_call.binding.registration_token == tokens[1]
    assert pay.binding.declaration["name"] == "payments.pay"
    assert decided == ["Pay 5?"]
    assert json.loads(outcome.transcript[2].parts[0].content) == {"paid": 5}  # type: ignore[union-attr]
    assert not outcome.transcript[4].parts[0].is_error  # type: ignore[union-attr]


async def test_a_provider_replaced_after_acceptance_keeps_the_saved_contract(
    harness: Harness,
) -> None:
    """G7/G8: the confirmation shows the saved prompt, the call carries the saved token, and
    the registry refuses it because that admission was replaced before publication."""
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    registry.replace_after_resolve["payments"] = payments("NEW PROMPT {{ region }}")
    rt, decided = payer_runtime(harness, registry)
    planner = ScriptedPlanner([calls(("payments.pay", {"amount": 5})), answer()])
    payer(rt, planner)
    async with harness.serving(rt):
        outcome = await rt.client("test.payer").run("pay", labels={"tenant": "t"})
    assert decided == ["Pay 5?"]
    assert error_of(outcome.transcript[2].parts[0])["kind"] == "call_not_admitted"
    assert registry.calls == []


@pytest.mark.parametrize("when", ["admission", "queued"])
async def test_a_registry_toolset_without_providers_is_no_provider_for_the_model(
    harness: Harness, when: str
) -> None:
    """Refused at admission, or admitted and ended once the last provider left: either way
    the call did not run, and the model reads ``no_provider`` (never ``outcome_unknown``)."""
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    registry.unserved["payments"] = when
    rt, _ = payer_runtime(harness, registry)
    payer(rt, ScriptedPlanner([calls(("payments.pay", {"amount": 5})), answer()]))
    async with harness.serving(rt):
        outcome = await rt.client("test.payer").run("pay", labels={"tenant": "t"})
    error = error_of(outcome.transcript[2].parts[0])
    assert error["kind"] == "no_provider"
    assert error["message"].startswith("payments.pay: toolset 'payments' has no live provider")
    assert registry.calls == []


# --------------------------------------------------------------------------- failures


async def test_typed_errors_fail_the_run_with_their_type_and_message(harness: Harness) -> None:
    class NoSearch:
        def __init__(self) -> None:
            self.requests = 0

        async def complete(self, request: ModelRequest) -> ModelResponse:
            self.requests += 1
            raise ToolSearchUnsupportedError("converse: this model cannot search for tools")

    model = NoSearch()
    rt = harness.runtime()
    rt.register_model("m", model)
    rt.register_agent(records_definition(), planner=ModelPlanner("m"), executors=_executors())
    async with harness.serving(rt):
        with pytest.raises(ToolSearchUnsupportedError, match="cannot search for tools"):
            await rt.client("test.agent").run("go")
    assert model.requests == 1  # never retried


async def test_catalog_errors_fail_the_run(harness: Harness) -> None:
    registry = FakeRegistry()
    registry.publish(provider_toolset(version="2.0.0"), echo_handler)
    rt = harness.runtime()
    rt.register_registry("company", registry, registry)
    definition = records_definition(id="test.pinned", specs=(), deferred_tool_ids=())
    sources = Sources(toolsets=[("company", "records", "1.0.0", False)])
    rt.register_agent(
        definition.with_registry_tools(sources), planner=ScriptedPlanner([answer()]), executors={}
    )
    async with harness.serving(rt):
        with pytest.raises(VersionMismatchError, match="requires version '1.0.0', got '2.0.0'"):
            await rt.client("test.pinned").run("go")
    assert registry.resolves == ["records"]  # a typed error is not retried


async def test_run_errors_fail_the_run(harness: Harness) -> None:
    rt = harness.runtime()
    planner = ScriptedPlanner(
        [
            calls(("records.lookup", {"id": "1"})),
            Message(
                "assistant",
                (
                    ToolCallPart("c0_records.lookup", "records.lookup", '{"id": "2"}'),
                    TextPart("again"),
                ),
            ),
        ]
    )
    executor = register(rt, planner, records_definition(required_labels=("tenant",)))
    async with harness.serving(rt):
        with pytest.raises(MissingLabelsError, match="missing required labels: tenant"):
            await rt.client("test.agent").run("go")
        with pytest.raises(ToolCallIdError, match="repeats tool call ID 'c0_records.lookup'"):
            await rt.client("test.agent").run("go", labels={"tenant": "t"})
    assert len(executor.calls) == 1  # the repeated call never ran


async def test_a_final_answer_only_activity_with_calls_fails_the_run(harness: Harness) -> None:
    rt = harness.runtime()
    planner = ScriptedPlanner(
        [calls(("records.lookup", {"id": "1"})), calls(("records.lookup", {"id": "2"}), prefix="d")]
    )
    register(rt, planner, records_definition(policy=RunPolicy(max_tool_calls=1)))
    async with harness.serving(rt):
        with pytest.raises(RunError, match="final-answer-only activity"):
            await rt.client("test.agent").run("go")
    assert planner.inputs[1].finalize  # type: ignore[attr-defined]


def _executors() -> dict[str, Any]:
    from examples.records.gen.assistant.toolsets.records import executor as records_executor
    from examples.records.gen.assistant.toolsets.records import specs as records_specs
    from tests.runtime.agents import Records

    return {records_specs.TOOLSET: records_executor.bind(Records())}


@pytest.mark.parametrize("served_depth", [4, MAX_CALL_DEPTH], ids=["within", "too-deep"])
async def test_a_run_started_by_a_registry_call_makes_its_calls_one_deeper(
    harness: Harness, served_depth: int
) -> None:
    """A provider running an agent (``serving_registry_call``, as the provider SDK does) starts
    a run whose registry calls carry the served call's depth plus one, through a durable
    workflow's input and its admission activity too; past ``MAX_CALL_DEPTH`` the call is
    refused unsent, naming the agent, the toolset, the tool and the depth."""
    seen: list[ToolCallMeta] = []

    async def handler(tool: str, payload: Any, meta: ToolCallMeta) -> Any:
        seen.append(meta)
        return await echo_handler(tool, payload, meta)

    rt = harness.runtime()
    registry = register_registry_reader(rt, handler)
    async with harness.serving(rt):
        with serving_registry_call(served_depth):
            outcome = await rt.client("test.nested").run("search", run_id=f"n-{served_depth}")
    part = outcome.transcript[2].parts[0]
    if served_depth < MAX_CALL_DEPTH:
        assert [meta.call_depth for meta in seen] == [served_depth + 1]
        assert not part.is_error  # type: ignore[union-attr]
        return
    assert seen == [] and registry.calls == []
    error = error_of(part)
    assert error["kind"] == "call_depth_exceeded"
    assert error["message"].startswith(
        f"agent 'test.nested' (run n-{served_depth}) did not call tool 'records.search' of "
        f"toolset 'records' (registry 'company'): the call would be nested in "
        f"{MAX_CALL_DEPTH + 1} registry calls"
    )


async def test_a_run_given_the_served_call_s_own_depth_is_still_one_deeper(
    harness: Harness,
) -> None:
    """An executor that forwards the depth it was handed (``ToolContext.call_depth``, the
    served call's own) as ``RunRequest.call_depth`` kept the run at that depth: given
    explicitly, it won over the provider's, and agents calling each other through registries
    so never got deeper, and never ended. The deeper of the two is the run's."""
    seen: list[ToolCallMeta] = []

    async def handler(tool: str, payload: Any, meta: ToolCallMeta) -> Any:
        seen.append(meta)
        return await echo_handler(tool, payload, meta)

    rt = harness.runtime()
    register_registry_reader(rt, handler)
    request = RunRequest(
        "test.nested", (Message.user("search"),), run_id=f"fwd-{harness.kind}", call_depth=3
    )
    async with harness.serving(rt):
        with serving_registry_call(3):  # the provider serves a call nested in 3
            await rt.run(request)
    assert [meta.call_depth for meta in seen] == [4]


async def test_a_run_a_tool_starts_is_as_deep_as_the_run_of_the_tool(harness: Harness) -> None:
    """An executor that starts a run (a hand-written agent tool) hands it its own run's depth,
    on a durable engine's worker too, where the activity does not run inside the provider's
    call that started the run: the depth could otherwise be reset to 0 by such a step."""
    seen: list[ToolCallMeta] = []

    async def handler(tool: str, payload: Any, meta: ToolCallMeta) -> Any:
        seen.append(meta)
        return await echo_handler(tool, payload, meta)

    rt = harness.runtime()
    register_registry_reader(rt, handler)

    class Handing(Records):
        async def search(self, args: Any, context: Any) -> Any:
            await rt.client("test.nested").run("search", run_id=f"inner-{harness.kind}")
            return await super().search(args, context)

    register(rt, ScriptedPlanner([calls(("records.search", {"query": "x"})), answer()]),
             executor=Handing())  # fmt: skip
    async with harness.serving(rt):
        with serving_registry_call(2):
            await rt.client("test.agent").run("go", run_id=f"outer-{harness.kind}")
    assert [meta.call_depth for meta in seen] == [3]
