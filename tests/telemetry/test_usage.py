"""A model call whose provider reported no usage records no token data point (a 0 would read as
what it cost): its span says how many responses were silent, and a counter adds them up. A
model call that failed records what it had received before it failed (billed all the same)."""

from __future__ import annotations

import pytest
from opentelemetry.trace import StatusCode

from agentgen.runtime import ModelError, ModelPlanner, Runtime, Usage
from agentgen.runtime.messages import Message, TextPart
from agentgen.runtime.model_client import ModelClient, ModelRequest, ModelResponse
from tests.otel import delta, named, recorder
from tests.runtime.agents import records_definition


class Replies:
    def __init__(self, usage: Usage | None) -> None:
        self.usage = usage

    async def complete(self, request: ModelRequest) -> ModelResponse:
        reply = Message("assistant", (TextPart("fine"),))
        if self.usage is None:
            return ModelResponse(reply)  # says nothing about usage
        return ModelResponse(reply, self.usage)


async def _run(model: str, client: ModelClient) -> None:
    rt = Runtime()
    rt.register_model("m", client)
    definition = records_definition(specs=())
    rt.register_agent(definition, planner=ModelPlanner("m", model=model), executors={})
    await rt.client("test.agent").run("go")


def _tokens(points: dict, model: str) -> dict:  # type: ignore[type-arg]
    return {k: p for k, p in points.items() if dict(k[1])["gen_ai.request.model"] == model}


def _totals(before: dict, after: dict, model: str) -> list[tuple[str, int]]:  # type: ignore[type-arg]
    """The token histogram's totals between two readings, by token type."""
    tokens = _tokens(delta(before, after, "gen_ai.client.token.usage"), model)
    return sorted((dict(k[1])["gen_ai.token.type"], p.total) for k, p in tokens.items())


async def test_an_unreported_response_records_no_token_point_and_is_counted() -> None:
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    await _run("silent-model", Replies(None))
    after = otel.points()
    assert _tokens(delta(before, after, "gen_ai.client.token.usage"), "silent-model") == {}
    [(key, counted)] = _tokens(
        delta(before, after, "agentgen.client.usage.unreported"), "silent-model"
    ).items()
    assert counted.count == 1
    assert dict(key[1])["gen_ai.agent.id"] == "test.agent"
    [span] = named(otel.agentgen_spans(), "chat silent-model")
    attributes = dict(span.attributes or {})
    assert attributes["agentgen.usage.unreported_responses"] == 1
    assert "gen_ai.usage.input_tokens" not in attributes
    assert "gen_ai.usage.output_tokens" not in attributes


async def test_a_reported_response_records_its_tokens_and_no_unreported_count() -> None:
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    await _run("counted-model", Replies(Usage(7, 0)))
    after = otel.points()
    assert _totals(before, after, "counted-model") == [("input", 7), ("output", 0)]
    assert _tokens(delta(before, after, "agentgen.client.usage.unreported"), "counted-model") == {}
    [span] = named(otel.agentgen_spans(), "chat counted-model")
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.usage.input_tokens"] == 7
    assert "agentgen.usage.unreported_responses" not in attributes


class Refusing:
    """Billed ``usage`` (an adapter's search rounds), then the provider refused the request."""

    def __init__(self, usage: Usage | None) -> None:
        self.usage = usage

    async def complete(self, request: ModelRequest) -> ModelResponse:
        error = ModelError("provider: HTTP 400")
        error.usage = self.usage
        raise error


async def test_a_failed_call_records_the_tokens_billed_before_it_failed() -> None:
    """What a failed model call had received was billed: its span and the token histogram
    count it, as a successful call's, and the span still says it failed."""
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    with pytest.raises(ModelError):
        await _run("refusing-model", Refusing(Usage(30, 4)))
    after = otel.points()
    assert _totals(before, after, "refusing-model") == [("input", 30), ("output", 4)]
    [span] = named(otel.agentgen_spans(), "chat refusing-model")
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.usage.input_tokens"] == 30
    assert attributes["gen_ai.usage.output_tokens"] == 4
    assert attributes["error.type"] == "ModelError"
    assert span.status.status_code is StatusCode.ERROR


async def test_a_failed_call_that_got_no_response_records_no_tokens() -> None:
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    with pytest.raises(ModelError):
        await _run("unanswered-model", Refusing(None))
    after = otel.points()
    assert _totals(before, after, "unanswered-model") == []
    unreported = delta(before, after, "agentgen.client.usage.unreported")
    assert _tokens(unreported, "unanswered-model") == {}
    [span] = named(otel.agentgen_spans(), "chat unanswered-model")
    assert "gen_ai.usage.input_tokens" not in dict(span.attributes or {})
