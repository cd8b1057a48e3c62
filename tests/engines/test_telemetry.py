"""SPEC L3: what a run reports through OpenTelemetry, on both engines.

The records example's assistant (its generated definition and executor) searches for a
deferred tool, runs it, has a confirmation denied and asks an agent exposed as a tool (a child
run), then answers. The spans go to the OpenTelemetry SDK's in-memory exporter, the metrics to
its in-memory reader (``tests/otel.py``). In memory the tree is agentgen's alone; on Temporal
agentgen's spans hang under the SDK's ``TracingInterceptor`` spans (the workflow, its
activities, the child workflow) in one trace, and tree of agentgen's spans is the same except
that a child run is its child workflow.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from temporalio.client import Client
from temporalio.contrib.opentelemetry import TracingInterceptor

from agentgen.runtime import ModelRefusalError
from agentgen.runtime.adapters import AnthropicMessagesModel, OpenAIResponsesModel
from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.agents.executors import ToolContext, serving_registry_call
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.app import Runtime
from agentgen.runtime.contracts.specs import ConfirmationSpec
from agentgen.runtime.engines.temporal.client import agentgen_client
from agentgen.runtime.messages import Message, TextPart, ToolCallPart
from agentgen.runtime.model_client import ModelRequest, ModelResponse, Usage
from agentgen.runtime.registry.client import MAX_CALL_DEPTH
from agentgen.runtime.runs.confirmation import ConfirmationRequest, Verdict
from agentgen.runtime.runs.requests import RunOutcome, RunRequest
from agentgen.runtime.telemetry import Telemetry
from agentgen.runtime.testing import Call, ScriptedModel, Search
from examples.records.gen.assistant.agents import assistant
from examples.records.gen.assistant.toolsets.records import executor as records_executor
from examples.records.gen.assistant.toolsets.records import specs as records_specs
from examples.records.gen.assistant.toolsets.records import types
from tests.adapters.fakes import (
    anthropic_client,
    anthropic_server,
    message,
    openai_client,
    openai_server,
    response,
    tool_use,
)
from tests.engines.conftest import Harness
from tests.otel import Recorder, ancestors, delta, named, recorder, tree
from tests.runtime import sink_agents
from tests.runtime.agents import (
    records_definition,
    register_registry_reader,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

#: Found only in tool arguments (a search query, the records to analyze, a question).
ARGUMENT = "weather-7f3a"
#: Found only in a tool result.
RESULT = "sunny-9c1e"


class Records:
    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        return types.Record(id=args.id, title="Tokyo", body="Sunny")

    async def search(self, args: types.SearchArgs, context: ToolContext) -> types.SearchResult:
        return types.SearchResult(ids=["r1", RESULT])

    async def analyze(self, args: types.AnalyzeArgs, context: ToolContext) -> types.Analysis:
        raise AssertionError("the analysis is denied: it never runs")


def scenario(harness: Harness, telemetry: Telemetry | None = None) -> Runtime:
    asked: list[ConfirmationRequest] = []

    async def confirm(request: ConfirmationRequest) -> Verdict:
        asked.append(request)
        return Verdict(False, by="ops@example.com")

    rt = harness.runtime(confirm=confirm, telemetry=telemetry)
    rt.register_model(
        "scripted",
        ScriptedModel(
            [
                Search("search records"),
                Call("records.search", {"query": ARGUMENT, "limit": 2}, call_id="c1"),
                Search("analyze records"),
                [
                    Call("records.analyze", {"ids": [ARGUMENT]}, call_id="c2"),
                    Call("ask_expert.ask", {"question": ARGUMENT}, call_id="c3"),
                ],
                "Two records; the analysis was denied; the expert says 42.",
            ]
        ),
    )
    rt.register_model("expert", ScriptedModel(['{"answer": "42"}']))
    confirmed = ConfirmationSpec("Analyze {{ ids | join(', ') }}?", "Analysis was denied.")
    specs = tuple(
        replace(s, confirmation=confirmed) if s.id == "records.analyze" else s
        for s in assistant.definition().specs
    )
    definition = replace(
        assistant.definition(),
        specs=(*specs, sink_agents.ASK),
        agent_executors=("helpdesk.expert",),
    )
    rt.register_agent(
        definition,
        planner=ModelPlanner("scripted"),
        executors={records_specs.TOOLSET: records_executor.bind(Records())},
    )
    rt.register_agent(sink_agents.expert_definition(), planner=ModelPlanner("expert"), executors={})
    return rt


async def run(harness: Harness, telemetry: Telemetry | None = None) -> RunOutcome:
    rt = scenario(harness, telemetry)
    async with harness.serving(rt):
        outcome = await assistant.new_client(rt).run(
            "What do the weather records say?", run_id=f"telemetry-{harness.kind}-{id(rt)}"
        )
    assert outcome.final_text == "Two records; the analysis was denied; the expert says 42."
    return outcome


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def only(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    (found,) = named(spans, name)
    return found


def is_agentgen(span: ReadableSpan) -> bool:
    return span.instrumentation_scope is not None and span.instrumentation_scope.name == "agentgen"


PLANS = [
    ("plan assistant.assistant #1", [("chat scripted", [("agentgen.tool_search", [])])]),
    ("plan assistant.assistant #2", [("chat scripted", [("agentgen.tool_search", [])])]),
    ("plan assistant.assistant #3", [("chat scripted", [])]),
]
EXPERT = ("plan helpdesk.expert #1", [("chat expert", [])])
CALLS = [("agentgen.confirm records.analyze", []), ("execute_tool records.search", [])]


async def test_a_run_is_one_trace_of_its_activities_model_calls_searches_and_tools(
    harness: Harness,
) -> None:
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    outcome = await run(harness)
    spans = otel.spans()
    ours = [s for s in spans if is_agentgen(s)]

    if harness.durable:
        # A child run is a child workflow: its spans hang under the SDK's spans of it.
        expected = [("invoke_agent assistant.assistant", sorted([*CALLS, *PLANS, EXPERT]))]
    else:
        child = ("invoke_agent helpdesk.expert", [EXPERT])
        expected = [("invoke_agent assistant.assistant", sorted([*CALLS, child, *PLANS]))]
    assert tree(spans, keep=is_agentgen) == expected
    assert len({s.context.trace_id for s in spans if s.context}) == 1  # one trace

    run_span = only(ours, "invoke_agent assistant.assistant")
    assert attributes(run_span) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": "assistant.assistant",
        "gen_ai.agent.name": "assistant.assistant",
        "gen_ai.conversation.id": outcome.run_id,
        "agentgen.run.id": outcome.run_id,
        "agentgen.engine": harness.kind,
        "agentgen.run.tool_calls": 3,
        "agentgen.run.child_runs": 1,
    }
    plans = sorted(named(ours, "plan assistant.assistant"), key=lambda s: s.start_time or 0)
    assert [attributes(p)["agentgen.plan.kind"] for p in plans] == ["start", "resume", "resume"]
    assert [attributes(p)["agentgen.plan.search_rounds"] for p in plans] == [1, 1, 0]
    assert [attributes(p)["agentgen.plan.accepted"] for p in plans] == [1, 2, 0]
    assert attributes(plans[0])["agentgen.plan.tools"] == 4
    assert attributes(plans[0])["agentgen.plan.deferred_tools"] == 2
    assert [(e.name, dict(e.attributes or {})) for e in plans[2].events] == [
        (
            "agentgen.tool.result",
            {
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": call,
                "agentgen.tool.outcome": outcome_,
            },
        )
        for tool, call, outcome_ in (
            ("records.analyze", "c2", "denied"),
            ("ask_expert.ask", "c3", "ok"),
        )
    ]

    chats = sorted(named(ours, "chat scripted"), key=lambda s: s.start_time or 0)
    assert {k: v for k, v in attributes(chats[0]).items() if k.startswith("gen_ai")} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "scripted",
        "gen_ai.request.max_tokens": 4096,
        "gen_ai.agent.id": "assistant.assistant",
        "gen_ai.conversation.id": outcome.run_id,
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.response.finish_reasons": ("tool_use",),
    }

    searches = sorted(named(ours, "agentgen.tool_search"), key=lambda s: s.start_time or 0)
    first = attributes(searches[0])
    assert first["agentgen.search.query"] == "search records"
    assert first["agentgen.search.executed_by"] == "client"
    assert set(first["agentgen.search.loaded"]) == {"records.search", "records.analyze"}
    assert list(first["agentgen.search.hits"]) == list(first["agentgen.search.loaded"])
    assert all(score > 0 for score in first["agentgen.search.scores"])
    assert first["agentgen.search.scores"][0] >= first["agentgen.search.scores"][-1]

    executed = attributes(only(ours, "execute_tool records.search"))
    assert executed == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "records.search",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "gen_ai.agent.id": "assistant.assistant",
        "agentgen.run.id": outcome.run_id,
        "agentgen.tool.route": "executor",
        "agentgen.tool.toolset": "assistant.records",
        "agentgen.tool.outcome": "ok",
    }
    confirmation = only(ours, "agentgen.confirm records.analyze")
    assert attributes(confirmation)["agentgen.confirmation.outcome"] == "denied"
    assert attributes(confirmation)["agentgen.confirmation.decided_by"] == "ops@example.com"
    assert confirmation.status.status_code is StatusCode.UNSET  # a denial is not an error

    (expert_plan,) = named(ours, "plan helpdesk.expert")
    (child_run,) = outcome.child_runs
    assert attributes(expert_plan)["agentgen.run.id"] == child_run
    if harness.durable:
        names_above = [a.name for a in ancestors(expert_plan, spans)]
        assert "RunActivity:agentgen.plan" in names_above
        assert "StartChildWorkflow:agentgen.run" in names_above
        assert names_above[-1] == "invoke_agent assistant.assistant"
        above_tool = [a.name for a in ancestors(only(ours, "execute_tool records.search"), spans)]
        assert above_tool[:2] == ["RunActivity:agentgen.execute", "StartActivity:agentgen.execute"]
        # Status polls (every poll interval while a confirmation may come) are not traced.
        assert not [s for s in spans if "agentgen.status" in s.name]
    else:
        child_span = attributes(only(ours, "invoke_agent helpdesk.expert"))
        assert child_span["agentgen.parent_run.id"] == outcome.run_id
        assert child_span["agentgen.parent_tool_call.id"] == "c3"
        assert child_span["agentgen.run.id"] == child_run

    check_metrics(otel, before)


def check_metrics(otel: Recorder, before: Any) -> None:
    after = otel.points()
    agent = ("gen_ai.agent.id", "assistant.assistant")
    expert = ("gen_ai.agent.id", "helpdesk.expert")
    calls = delta(before, after, "agentgen.tool.calls")
    assert {
        dict(k[1])["gen_ai.tool.name"]: (dict(k[1])["agentgen.tool.outcome"], p.count)
        for k, p in calls.items()
    } == {
        "records.search": ("ok", 1),
        "records.analyze": ("denied", 1),
        "ask_expert.ask": ("ok", 1),
    }
    rounds = delta(before, after, "agentgen.plan.search_rounds")
    assert {k[1]: (p.count, p.total) for k, p in rounds.items()} == {
        (agent,): (3, 2),
        (expert,): (1, 0),
    }
    loaded = delta(before, after, "agentgen.run.tools_loaded")
    assert {k[1]: (p.count, p.total) for k, p in loaded.items()} == {
        (agent,): (1, 2),
        (expert,): (1, 0),
    }
    builds = delta(before, after, "agentgen.catalog.build.duration")
    assert {k[1]: p.count for k, p in builds.items()} == {(agent,): 3, (expert,): 1}
    tokens = delta(before, after, "gen_ai.client.token.usage")
    by_agent = {
        (dict(k[1])["gen_ai.agent.id"], dict(k[1])["gen_ai.token.type"]): (p.count, p.total)
        for k, p in tokens.items()
    }
    assert by_agent == {
        ("assistant.assistant", "input"): (3, 30),
        ("assistant.assistant", "output"): (3, 15),
        ("helpdesk.expert", "input"): (1, 10),
        ("helpdesk.expert", "output"): (1, 5),
    }


def texts(otel: Recorder, records: list[logging.LogRecord]) -> tuple[str, str, str]:
    """Every span's attributes and events, the INFO+ log lines and the DEBUG ones, as text."""
    spans = json.dumps(
        [
            [
                s.name,
                dict(s.attributes or {}),
                [[e.name, dict(e.attributes or {})] for e in s.events],
            ]
            for s in otel.spans()
        ],
        default=str,
    )
    info = "\n".join(r.getMessage() for r in records if r.levelno >= logging.INFO)
    debug = "\n".join(r.getMessage() for r in records if r.levelno < logging.INFO)
    return spans, info, debug


LOGGERS = {
    "agentgen.run",
    "agentgen.plan",
    "agentgen.model",
    "agentgen.search",
    "agentgen.tool",
    "agentgen.confirm",
    "agentgen.registry",
}


async def test_tool_arguments_and_results_appear_nowhere_unless_the_application_opts_in(
    harness: Harness, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    otel = recorder()
    caplog.set_level(logging.DEBUG, logger="agentgen")

    otel.exporter.clear()
    caplog.clear()
    await run(harness)
    spans, info, debug = texts(otel, caplog.records)
    assert "execute_tool records.search" in spans and "records.search" in info
    for text in (spans, info, debug):
        assert ARGUMENT not in text and RESULT not in text
    ours = {r.name for r in caplog.records if r.name.startswith("agentgen")}
    assert {"agentgen.run", "agentgen.tool", "agentgen.confirm"} <= ours <= LOGGERS
    assert capsys.readouterr().out == ""  # the library never prints

    otel.exporter.clear()
    caplog.clear()
    await run(harness, Telemetry(capture_payloads=True))
    spans, info, debug = texts(otel, caplog.records)
    executed = attributes(only(otel.agentgen_spans(), "execute_tool records.search"))
    assert json.loads(executed["gen_ai.tool.call.arguments"]) == {"query": ARGUMENT, "limit": 2}
    assert json.loads(executed["gen_ai.tool.call.result"]) == {"ids": ["r1", RESULT]}
    confirmation = attributes(only(otel.agentgen_spans(), "agentgen.confirm records.analyze"))
    assert confirmation["agentgen.confirmation.prompt"] == f"Analyze {ARGUMENT}?"
    assert ARGUMENT in debug and RESULT in debug
    assert ARGUMENT not in info and RESULT not in info  # never at INFO, even opted in


async def test_telemetry_off_reports_nothing(harness: Harness) -> None:
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    await run(harness, Telemetry(enabled=False))
    assert otel.agentgen_spans() == []
    after = otel.points()
    assert [
        k for k in after if k[0].startswith(("agentgen.", "gen_ai.")) and after[k] != before.get(k)
    ] == []


async def test_a_decision_made_elsewhere_names_who_decided(durable: Harness) -> None:
    otel = recorder()
    otel.exporter.clear()
    rt = scenario(durable)
    engine = durable.engine(rt)
    request = RunRequest("assistant.assistant", (Message.user("Weather?"),))
    async with durable.serving(rt):
        run_id = await engine.start(rt, request)
        waiting = asyncio.create_task(engine.result(rt, run_id, decide=False))
        pending = await engine.pending_confirmations(run_id)
        while not pending:
            await asyncio.sleep(0.02)
            pending = await engine.pending_confirmations(run_id)
        await engine.confirm(run_id, pending[0].tool_call_id, False, by="alice")
        await waiting
    ours = otel.agentgen_spans()
    confirmation = attributes(only(ours, "agentgen.confirm records.analyze"))
    assert confirmation["agentgen.confirmation.outcome"] == "denied"
    assert confirmation["agentgen.confirmation.decided_by"] == "alice"
    started = only(ours, "invoke_agent assistant.assistant")  # start(): ends once started
    plans = named(ours, "plan assistant.assistant")
    assert len(plans) == 3
    assert all(started in list(ancestors(plan, otel.spans())) for plan in plans)


async def test_the_engine_and_workers_trace_through_one_interceptor(temporal: Any) -> None:
    plain = temporal.client
    traced = agentgen_client(plain)
    interceptors = traced.config()["interceptors"]
    assert [type(i) for i in interceptors].count(TracingInterceptor) == 1
    assert agentgen_client(traced) is traced
    own = Client(**{**plain.config(), "interceptors": [TracingInterceptor()]})
    kept = agentgen_client(own).config()["interceptors"]
    assert [type(i) for i in kept] == [TracingInterceptor]  # the application's own, not two


class Inventive:
    """A model that calls a real tool, tools nobody declared (its own free text), and the real
    tool again past the run's budget; then answers."""

    def __init__(self, invented: list[str]) -> None:
        self.invented = invented
        self.turns = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.turns += 1
        if self.turns > 1:
            return ModelResponse(Message("assistant", (TextPart("done"),)), Usage(1, 1))
        search = ToolCallPart("c0", "records.search", '{"query": "q", "limit": 1}')
        made_up = [ToolCallPart(f"c{i + 1}", n, "{}") for i, n in enumerate(self.invented)]
        again = ToolCallPart("c9", "records.search", '{"query": "r", "limit": 1}')
        return ModelResponse(Message("assistant", (search, *made_up, again)), Usage(1, 1))


async def test_the_tool_call_metric_names_only_the_agents_tools(harness: Harness) -> None:
    """Names the model made up reach the tool-call metric as one ``_unknown`` series (a metric
    keyed by the model's free text would grow a series per invented name); the agent's own
    tools keep their names, refused or not, and the spans keep every name as called."""
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    rt = harness.runtime()
    invented = [f"made_up_{i}_user-text" for i in range(4)]
    rt.register_model("scripted", Inventive(invented))
    rt.register_agent(
        assistant.definition(),
        planner=ModelPlanner("scripted"),
        executors={records_specs.TOOLSET: records_executor.bind(Records())},
    )
    async with harness.serving(rt):
        outcome = await assistant.new_client(rt).run(
            "Find a record", policy=RunPolicy(max_tool_calls=5)
        )
    assert outcome.final_text == "done"

    calls = delta(before, otel.points(), "agentgen.tool.calls")
    assert {
        (dict(k[1])["gen_ai.tool.name"], dict(k[1])["agentgen.tool.outcome"]): p.count
        for k, p in calls.items()
    } == {
        ("records.search", "ok"): 1,
        ("_unknown", "not_permitted"): 4,
        ("records.search", "budget_exhausted"): 1,
    }
    events = [
        dict(e.attributes or {})["gen_ai.tool.name"]
        for s in named(otel.spans(), "plan assistant.assistant")
        for e in s.events
        if e.name == "agentgen.tool.result"
    ]
    assert sorted(events) == sorted(["records.search", *invented, "records.search"])


@pytest.mark.parametrize("served_depth", [4, MAX_CALL_DEPTH], ids=["within", "too-deep"])
async def test_a_run_nested_in_registry_calls_shows_its_depth(
    harness: Harness, served_depth: int, caplog: pytest.LogCaptureFixture
) -> None:
    """An operator chasing agents that call each other through registries reads each run's
    depth on its ``invoke_agent`` span and the depth a registry call was sent with on its
    ``agentgen.registry.call`` span; a call refused as too deep (never sent, so no registry
    span) is the outcome of the next activity's ``agentgen.tool.result`` event."""
    rt = harness.runtime()
    register_registry_reader(rt)
    otel = recorder()
    otel.exporter.clear()
    run_id = f"depth-{harness.kind}-{served_depth}"
    async with harness.serving(rt):
        with serving_registry_call(served_depth), caplog.at_level(logging.INFO, "agentgen.run"):
            await rt.client("test.nested").run("search", run_id=run_id)
    depth = served_depth + 1
    assert f"run {run_id}: agent test.nested started nested in {depth} registry call(s)" in (
        caplog.text
    )
    ours = otel.agentgen_spans()
    run_span = attributes(only(ours, "invoke_agent test.nested"))
    assert run_span["agentgen.run.call_depth"] == depth
    plans = sorted(named(ours, "plan test.nested"), key=lambda s: s.start_time or 0)
    (result,) = plans[1].events
    if served_depth < MAX_CALL_DEPTH:
        call = attributes(only(ours, "agentgen.registry.call company"))
        assert call["agentgen.registry.call_depth"] == served_depth + 1
        assert (result.attributes or {})["agentgen.tool.outcome"] == "ok"
        return
    assert named(ours, "agentgen.registry.call company") == []  # never sent
    assert (result.attributes or {})["agentgen.tool.outcome"] == "call_depth_exceeded"


async def test_a_run_at_depth_0_carries_no_depth(harness: Harness) -> None:
    """Depth 0 (no registry call started the run) is the absence of the attributes."""
    rt = harness.runtime()
    register_registry_reader(rt)
    otel = recorder()
    otel.exporter.clear()
    async with harness.serving(rt):
        await rt.client("test.nested").run("search", run_id=f"depth-0-{harness.kind}")
    ours = otel.agentgen_spans()
    assert "agentgen.run.call_depth" not in attributes(only(ours, "invoke_agent test.nested"))
    call = attributes(only(ours, "agentgen.registry.call company"))
    assert call["agentgen.registry.tool"] == "records.search"
    assert "agentgen.registry.call_depth" not in call


@pytest.mark.parametrize("refused", ["answer", "calls"])
async def test_a_refusal_is_its_model_call_s_error(harness: Harness, refused: str) -> None:
    """A refusal ends the ``chat`` span (and its duration metric) in error with the refusal's
    type, whether the adapter refused the reply (it held calls) or the planner refused a
    reply of text alone: the second was a successful model call, only its ``plan`` span and
    the run in error, so that an operator looking for refusals among model calls missed it."""
    if refused == "answer":
        content = [{"type": "refusal", "refusal": "I can't help with that."}]
        reply = {"type": "message", "id": "m1", "role": "assistant", "status": "completed"}
        server = openai_server(response({**reply, "content": content}))
        model: Any = OpenAIResponsesModel(openai_client(server))
        kind, expected = "gpt-5.4", "RefusedAnswerError"
    else:
        use = tool_use("t1", "records_search", {"name": "A"})
        model = AnthropicMessagesModel(
            anthropic_client(anthropic_server(message(use, stop_reason="refusal")))
        )
        kind, expected = "claude-opus-4-7", "ModelRefusalError"
    rt = harness.runtime()
    rt.register_model("m", model)
    rt.register_agent(
        records_definition(specs=()), planner=ModelPlanner("m", model=kind), executors={}
    )
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    async with harness.serving(rt):
        with pytest.raises(ModelRefusalError):
            await rt.client("test.agent").run("Explain", run_id=f"refused-{refused}-{harness.kind}")
    chats = named(otel.agentgen_spans(), f"chat {kind}")
    assert chats  # a durable engine may have retried the planning step: each attempt the same
    for chat in chats:
        assert attributes(chat)["error.type"] == expected
        assert chat.status.status_code is StatusCode.ERROR
    durations = delta(before, otel.points(), "gen_ai.client.operation.duration")
    assert {dict(key[1]).get("error.type") for key in durations} == {expected}
