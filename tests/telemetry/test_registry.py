"""SPEC L3: registry operations as spans (resolve with its version and token, call, retry;
refusals as the span's status), their latency as a metric, and the HTTP client's retries."""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import httpx2
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from agentgen.runtime.registry.http_client import HttpRegistryClient, HttpResultStream, RetryPolicy
from agentgen.runtime.runs.catalog import RegistryReadError
from agentgen.runtime.runs.host import RegistryRegistration
from agentgen.runtime.runs.registry_calls import bounded
from agentgen.runtime.telemetry import Telemetry, activated
from tests.engines.conftest import Harness
from tests.engines.test_scenarios import payer, payer_runtime
from tests.otel import delta, named, recorder
from tests.runtime.agents import ScriptedPlanner, answer, calls, echo_handler
from tests.runtime.fake_registry import FakeRegistry
from tests.runtime.test_batch_resolution import Batching, published, run
from tests.runtime.test_saved_contracts import payments


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def test_a_call_refused_at_admission_is_the_registry_spans_status() -> None:
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    registry = FakeRegistry()
    token = registry.publish(payments(), echo_handler)
    registry.replace_after_resolve["payments"] = payments("NEW PROMPT {{ region }}")
    rt, _ = payer_runtime(Harness("memory"), registry)
    payer(rt, ScriptedPlanner([calls(("payments.pay", {"amount": 5})), answer()]))
    outcome = await rt.client("test.payer").run("pay", labels={"tenant": "t"})
    spans = otel.agentgen_spans()

    resolves = named(spans, "agentgen.registry.resolve company")
    assert len(resolves) == 2  # one per planning activity
    first = attributes(sorted(resolves, key=lambda s: s.start_time or 0)[0])
    assert first == {
        "agentgen.registry.name": "company",
        "agentgen.registry.operation": "resolve",
        "agentgen.registry.toolset": "payments",
        "agentgen.registry.version": "1",
        "agentgen.registry.token": token,
    }
    (call,) = named(spans, "agentgen.registry.call company")
    assert attributes(call)["agentgen.registry.tool"] == "payments.pay"
    assert attributes(call)["agentgen.registry.token"] == token  # the saved, now replaced one
    assert attributes(call)["error.type"] == "call_not_admitted"
    assert call.status.status_code is StatusCode.ERROR
    # The registry's words stay out unless payloads are captured: its type and code remain.
    assert call.status.description == "RegistryError (call_not_admitted)"
    # The call never ran: no tool execution, and the model read why.
    assert named(spans, "execute_tool payments.pay") == []
    (plan,) = [s for s in spans if attributes(s).get("agentgen.plan.activity") == 2]
    assert [dict(e.attributes or {})["agentgen.tool.outcome"] for e in plan.events] == [
        "call_not_admitted"
    ]
    assert json.loads(outcome.transcript[2].parts[0].content)["error"]["kind"] == (  # type: ignore[union-attr]
        "call_not_admitted"
    )
    latency = delta(before, otel.points(), "agentgen.registry.request.duration")
    assert {
        (dict(k[1])["agentgen.registry.operation"], dict(k[1]).get("error.type")): p.count
        for k, p in latency.items()
    } == {("resolve", None): 2, ("call", "call_not_admitted"): 1}


async def test_a_registry_tool_runs_as_the_wait_for_its_outcome_with_overload_retries() -> None:
    otel = recorder()
    otel.exporter.clear()
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    run_id = "registry-run"
    registry.overload.add(hashlib.sha256(f"{run_id}\0c0_payments.pay".encode()).hexdigest())
    rt, decided = payer_runtime(Harness("memory"), registry)
    payer(rt, ScriptedPlanner([calls(("payments.pay", {"amount": 5})), answer()]))
    await rt.client("test.payer").run("pay", labels={"tenant": "t"}, run_id=run_id)
    spans = otel.agentgen_spans()
    assert decided == ["Pay 5?"]
    (executed,) = named(spans, "execute_tool payments.pay")
    assert attributes(executed)["agentgen.tool.route"] == "registry"
    assert attributes(executed)["agentgen.tool.outcome"] == "ok"
    (retry,) = named(spans, "agentgen.registry.retry company")
    assert retry.parent is not None and retry.parent.span_id == executed.context.span_id
    assert retry.status.status_code is StatusCode.UNSET


async def test_the_http_clients_retries_are_events_of_the_request_and_warnings(
    caplog: Any,
) -> None:
    otel = recorder()
    otel.exporter.clear()
    answers = [
        httpx2.Response(503, text="store down"),
        httpx2.Response(200, json={"toolsets": ["a"]}),
    ]

    def handler(request: httpx2.Request) -> httpx2.Response:
        return answers.pop(0)

    client = HttpRegistryClient(
        "http://127.0.0.1:9",
        name="company",
        retry=RetryPolicy(max_retries=2, backoff_base=0.001, backoff_max=0.001),
        transport=httpx2.MockTransport(handler),
    )
    registration = RegistryRegistration("company", client, HttpResultStream(client))
    caplog.set_level(logging.WARNING, logger="agentgen")
    # The answer's body is the registry's words: named only when payloads are captured.
    for telemetry, problem in (
        (Telemetry(), "HTTP 503"),
        (Telemetry(capture_payloads=True), "HTTP 503: store down"),
    ):
        otel.exporter.clear()
        caplog.clear()
        answers[:] = [
            httpx2.Response(503, text="store down"),
            httpx2.Response(200, json={"toolsets": ["a"]}),
        ]
        with activated(telemetry):
            assert await bounded(registration, client.list_toolsets(), "list") == ["a"]
        (span,) = named(otel.agentgen_spans(), "agentgen.registry.list company")
        assert attributes(span)["agentgen.registry.attempts"] == 2
        assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
            (
                "agentgen.registry.retry",
                {"agentgen.registry.retry": 1, "agentgen.registry.problem": problem},
            )
        ]
        (warning,) = caplog.records
        assert warning.name == "agentgen.registry"
        assert warning.getMessage().startswith(
            f"registry 'company': /toolsets/list failed ({problem}); retry 1 in "
        )
    await client.aclose()


async def test_a_batch_resolve_says_which_toolsets_it_resolved_with_their_tokens() -> None:
    otel = recorder()
    otel.exporter.clear()
    registry = published(Batching())
    await run(registry)
    (batch,) = named(otel.agentgen_spans(), "agentgen.registry.resolve_toolsets company")
    assert attributes(batch)["agentgen.registry.operation"] == "resolve_toolsets"
    assert [
        (e.name, dict(e.attributes or {})["agentgen.registry.toolset"]) for e in batch.events
    ] == [("agentgen.registry.resolved", "billing"), ("agentgen.registry.resolved", "records")]
    tokens = {
        dict(e.attributes or {})["agentgen.registry.toolset"]: dict(e.attributes or {})[
            "agentgen.registry.token"
        ]
        for e in batch.events
    }
    assert tokens == {name: registry.admissions[name].token for name in ("billing", "records")}


def tool_calls(before: Any, after: Any) -> dict[tuple[str, str], float]:
    calls = delta(before, after, "agentgen.tool.calls")
    return {
        (dict(k[1])["gen_ai.tool.name"], dict(k[1])["agentgen.tool.outcome"]): p.count
        for k, p in calls.items()
    }


async def test_the_tool_call_metric_names_registry_tools_and_not_made_up_ones() -> None:
    """A registry tool is one of the agent's (its name stays on the metric, refused or not);
    a name the model made up counts under ``_unknown``. So also when the next activity fails
    before it has a catalog: its results are counted all the same, with what it knows."""
    otel = recorder()
    before = otel.points()
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    rt, _ = payer_runtime(Harness("memory"), registry)
    round_one = calls(
        ("payments.list", {"amount": 1}),
        ("payments.pay", {"amount": 5}),  # withheld: the run lacks the tenant label
        ("made_up_by_the_model", {}),
    )
    payer(rt, ScriptedPlanner([round_one, answer()]))
    await rt.client("test.payer").run("pay")
    assert tool_calls(before, otel.points()) == {
        ("payments.list", "ok"): 1,
        ("payments.pay", "not_permitted"): 1,
        ("_unknown", "not_permitted"): 1,
    }

    async def list_then_fail(tool: str, payload: Any, meta: Any) -> Any:
        registry.fail_resolve["payments"] = ConnectionError("registry went away")
        return await echo_handler(tool, payload, meta)

    before = otel.points()
    registry.publish(payments(), list_then_fail)
    rt, _ = payer_runtime(Harness("memory"), registry)
    payer(rt, ScriptedPlanner([round_one, answer()]))
    with pytest.raises(RegistryReadError):
        await rt.client("test.payer").run("pay")
    # Without a catalog, a refused registry tool cannot be told from a made-up name (a call
    # that ran was made to a tool of the agent's: its name stays).
    assert tool_calls(before, otel.points()) == {
        ("payments.list", "ok"): 1,
        ("_unknown", "not_permitted"): 2,
    }
