"""SPEC L3: model calls and search rounds as the real adapters report them (OpenAI Responses'
client-executed search, Claude's hosted search), on the quickstart's recorded replies played
through the official SDK clients."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from examples.quickstart import tool_search
from tests.otel import delta, named, recorder, tree
from tests.telemetry.runs import quickstart


def recorded(provider: str) -> list[dict[str, Any]]:
    data = json.loads((tool_search.RECORDINGS / f"{provider}.json").read_text())
    return [exchange["response"] for exchange in data["exchanges"]]


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def by_start(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return sorted(spans, key=lambda s: s.start_time or 0)


async def test_openai_reports_the_provider_each_response_and_its_ranked_search() -> None:
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    await quickstart("openai")
    spans = otel.agentgen_spans()
    assert tree(spans) == [
        (
            "invoke_agent quickstart.chat",
            [
                ("execute_tool weather.forecast", []),
                ("plan quickstart.chat #1", [("chat gpt-5.4", [("agentgen.tool_search", [])])]),
                ("plan quickstart.chat #2", [("chat gpt-5.4", [])]),
            ],
        )
    ]
    responses = recorded("openai")
    first, second = (attributes(s) for s in by_start(named(spans, "chat gpt-5.4")))
    assert first["gen_ai.provider.name"] == second["gen_ai.provider.name"] == "openai"
    # The first model call is two requests (a search round, then the call): their usage adds
    # up, and the span names the last response.
    assert first["gen_ai.response.id"] == responses[1]["id"]
    assert first["gen_ai.response.model"] == "gpt-5.4"
    assert first["gen_ai.usage.input_tokens"] == sum(
        r["usage"]["input_tokens"] for r in responses[:2]
    )
    assert second["gen_ai.response.id"] == responses[2]["id"]
    (search,) = named(spans, "agentgen.tool_search")
    found = attributes(search)
    assert found["agentgen.search.query"] == "weather forecast"
    assert found["agentgen.search.executed_by"] == "client"
    assert found["agentgen.search.ranking"] == "fields"
    assert found["agentgen.search.hits"][0] == "weather.forecast"
    assert list(found["agentgen.search.loaded"]) == list(found["agentgen.search.hits"])
    assert len(found["agentgen.search.scores"]) == len(found["agentgen.search.hits"])

    tokens = delta(before, otel.points(), "gen_ai.client.token.usage")
    assert {
        (dict(k[1])["gen_ai.provider.name"], dict(k[1])["gen_ai.token.type"]): p.total
        for k, p in tokens.items()
    } == {
        ("openai", "input"): sum(r["usage"]["input_tokens"] for r in responses),
        ("openai", "output"): sum(r["usage"]["output_tokens"] for r in responses),
    }
    durations = delta(before, otel.points(), "gen_ai.client.operation.duration")
    assert [(dict(k[1])["gen_ai.provider.name"], p.count) for k, p in durations.items()] == [
        ("openai", 2)
    ]


async def test_anthropic_reports_claudes_hosted_search_under_its_model_call() -> None:
    otel = recorder()
    otel.exporter.clear()
    await quickstart("anthropic")
    spans = otel.agentgen_spans()
    model = "chat claude-opus-4-7"
    assert tree(spans) == [
        (
            "invoke_agent quickstart.chat",
            [
                ("execute_tool weather.forecast", []),
                ("plan quickstart.chat #1", [(model, [("agentgen.tool_search", [])])]),
                ("plan quickstart.chat #2", [(model, [])]),
            ],
        )
    ]
    first = attributes(by_start(named(spans, model))[0])
    assert first["gen_ai.provider.name"] == "anthropic"
    assert first["gen_ai.response.id"] == recorded("anthropic")[0]["id"]
    (search,) = named(spans, "agentgen.tool_search")
    assert attributes(search) == {
        "agentgen.search.query": "weather|forecast",
        "agentgen.search.executed_by": "provider",
        "agentgen.search.loaded": ("weather.forecast",),
    }
