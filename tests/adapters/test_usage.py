"""A response without usage is not 0 tokens: every adapter reports it as unreported
(``Usage.unreported``), through the real SDKs against local stubs, and keeps a genuine 0 a
reported count."""

from __future__ import annotations

import json
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest
from botocore.awsrequest import AWSResponse  # type: ignore[import-untyped]

from agentgen.runtime.adapters import (
    AnthropicMessagesModel,
    BedrockConverseModel,
    EmptyReplyError,
    ModelError,
    OpenAIResponsesModel,
    OutputBudgetError,
    ToolIdentityError,
)
from agentgen.runtime.adapters import errors as adapter_errors
from agentgen.runtime.model_client import REFUSED_STOP_REASONS, Usage
from tests.adapters.fakes import (
    anthropic_client,
    anthropic_server,
    function_call,
    message,
    openai_client,
    openai_server,
    response,
    search_call,
    server_search,
    text,
    tool_use,
)
from tests.adapters.tools import RECORDS, request


def _without_usage(reply: dict[str, Any], how: str) -> dict[str, Any]:
    """``reply`` as a server that sent no usage sends it: the member left out, or null."""
    changed = dict(reply)
    if how == "absent":
        del changed["usage"]
    else:
        changed["usage"] = None
    return changed


# --- OpenAI Responses -------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["absent", "null"])
async def test_openai_response_without_usage_is_unreported(how: str) -> None:
    server = openai_server(_without_usage(response(text("Hello")), how))
    reply = await OpenAIResponsesModel(openai_client(server)).complete(request())
    assert reply.message.text == "Hello"
    assert reply.usage == Usage(0, 0, unreported=1)


async def test_openai_genuine_zero_usage_is_reported() -> None:
    server = openai_server(response(text("Hello"), output_tokens=0))
    reply = await OpenAIResponsesModel(openai_client(server)).complete(request())
    assert reply.usage == Usage(100, 0) and reply.usage.complete


async def test_openai_search_rounds_add_up_with_a_final_round_without_usage() -> None:
    # Client-side tool search: the search round reports its usage, the final one does not.
    server = openai_server(
        response(search_call("s1", "weather"), output_tokens=30),
        _without_usage(
            response(function_call("call_1", "weather_lookup", namespace="weather_lookup")),
            "absent",
        ),
    )
    reply = await OpenAIResponsesModel(openai_client(server)).complete(request(max_tokens=400))
    assert len(server.bodies) == 2
    assert reply.usage == Usage(100, 30, unreported=1)
    assert not reply.usage.complete


async def test_openai_search_round_without_usage_is_refused() -> None:
    # Its output tokens bound the next round's budget: without them it cannot be enforced.
    server = openai_server(_without_usage(response(search_call("s1", "weather")), "null"))
    with pytest.raises(ModelError, match="reported no usage for a search round"):
        await OpenAIResponsesModel(openai_client(server)).complete(request(max_tokens=400))


async def test_openai_rounds_billed_before_a_failure_ride_on_the_error() -> None:
    # Three search rounds use the whole budget: the call fails, but all three were billed.
    server = openai_server(
        response(search_call("s1", "weather"), output_tokens=400),
        response(search_call("s2", "alerts"), output_tokens=400),
        response(search_call("s3", "invoice"), output_tokens=200),
    )
    with pytest.raises(OutputBudgetError) as caught:
        await OpenAIResponsesModel(openai_client(server)).complete(request(max_tokens=1000))
    assert caught.value.usage == Usage(300, 1000)


async def test_openai_a_round_without_usage_that_fails_counts_as_unreported() -> None:
    reply = _without_usage(response(status="failed"), "absent")
    reply["error"] = {"code": "server_error", "message": "boom"}
    server = openai_server(response(search_call("s1", "weather"), output_tokens=30), reply)
    with pytest.raises(ModelError, match="has status 'failed'") as caught:
        await OpenAIResponsesModel(openai_client(server)).complete(request(max_tokens=400))
    assert caught.value.usage == Usage(100, 30, unreported=1)


async def test_openai_a_failure_before_any_response_carries_no_usage() -> None:
    server = openai_server()  # HTTP 500: nothing was generated
    with pytest.raises(ModelError) as caught:
        await OpenAIResponsesModel(openai_client(server)).complete(request())
    assert caught.value.usage is None


# --- Anthropic Messages -----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["absent", "null"])
async def test_anthropic_response_without_usage_is_unreported(how: str) -> None:
    # The SDK's response model requires usage, so only a client without strict validation
    # (the SDK's default) lets such a reply through.
    reply_json = _without_usage(message({"type": "text", "text": "Hi"}), how)
    server = anthropic_server(reply_json)
    model = AnthropicMessagesModel(anthropic_client(server, strict=False))
    reply = await model.complete(request(tools=()))
    assert reply.message.text == "Hi"
    assert reply.usage == Usage(0, 0, unreported=1)


async def test_anthropic_usage_missing_a_count_is_unreported_not_half_counted() -> None:
    reply_json = message({"type": "text", "text": "Hi"})
    reply_json["usage"] = {"input_tokens": 100}
    server = anthropic_server(reply_json)
    model = AnthropicMessagesModel(anthropic_client(server, strict=False))
    reply = await model.complete(request(tools=()))
    assert reply.usage == Usage.not_reported()


async def test_anthropic_reported_usage_is_kept() -> None:
    server = anthropic_server(message({"type": "text", "text": "Hi"}, output_tokens=0))
    reply = await AnthropicMessagesModel(anthropic_client(server)).complete(request(tools=()))
    assert reply.usage == Usage(100, 0) and reply.usage.complete


async def test_anthropic_input_read_from_or_written_to_the_prompt_cache_is_input() -> None:
    # Anthropic's input_tokens leaves out what the prompt cache served or stored: with the
    # tools cached (the adapter's default) a run's input read as a fraction of what it sent.
    reply_json = message({"type": "text", "text": "Hi"})
    reply_json["usage"] = {
        "input_tokens": 12,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 2_000,
        "output_tokens": 5,
    }
    reply = await AnthropicMessagesModel(anthropic_client(anthropic_server(reply_json))).complete(
        request(tools=())
    )
    assert reply.usage == Usage(2_312, 5) and reply.usage.complete


async def test_anthropic_malformed_cache_count_is_unreported() -> None:
    reply_json = message({"type": "text", "text": "Hi"})
    reply_json["usage"] = {"input_tokens": 12, "cache_read_input_tokens": -1, "output_tokens": 5}
    server = anthropic_server(reply_json)
    model = AnthropicMessagesModel(anthropic_client(server, strict=False))
    reply = await model.complete(request(tools=()))
    assert reply.usage == Usage.not_reported()


#: Replies Claude generated (1,000 output tokens billed) that the adapter refuses.
REFUSED_CLAUDE = {
    "cut-in-a-call": (
        message(tool_use("toolu_1", "records_search", {"name": "A"}), stop_reason="max_tokens",
                output_tokens=1000),
        OutputBudgetError,
    ),
    "empty": (message(stop_reason="end_turn", output_tokens=1000), EmptyReplyError),
    "unknown-tool": (
        message(tool_use("toolu_1", "nope", {}), stop_reason="tool_use", output_tokens=1000),
        ToolIdentityError,
    ),
    "paused-turn": (
        message(server_search("srvtoolu_1", "weather"), stop_reason="pause_turn",
                output_tokens=1000),
        ModelError,
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REFUSED_CLAUDE))
async def test_anthropic_a_refused_reply_carries_what_it_cost(case: str) -> None:
    # Before: usage None, so the billed tokens vanished from the run's meter and spans.
    reply, error = REFUSED_CLAUDE[case]
    model = AnthropicMessagesModel(anthropic_client(anthropic_server(reply)))
    with pytest.raises(error) as caught:
        await model.complete(request(tools=(RECORDS,)))
    assert caught.value.usage == Usage(100, 1000)


# --- Bedrock Converse -------------------------------------------------------------------------


def _converse_client(body: dict[str, Any]) -> Any:
    """A bedrock-runtime client whose requests a local hook answers with ``body`` (botocore's
    Stubber cannot: it refuses a reply without the ``usage`` the service model requires, which
    is exactly the reply under test); botocore parses it as it parses the service's."""
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-west-2",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret",
    )

    def answer(request: Any, **_: Any) -> AWSResponse:
        raw = _Raw(json.dumps(body).encode())
        return AWSResponse(request.url, 200, {"content-type": "application/json"}, raw)

    client.meta.events.register("before-send.bedrock-runtime.Converse", answer)
    return client


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Any:
        yield self.data


def _converse(usage: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "output": {"message": {"role": "assistant", "content": [{"text": "Hello"}]}},
        "stopReason": "end_turn",
        "metrics": {"latencyMs": 12},
    }
    if usage is not None:
        body["usage"] = usage
    return body


async def test_bedrock_response_without_usage_is_unreported() -> None:
    model = BedrockConverseModel(_converse_client(_converse(None)))
    reply = await model.complete(request(tools=()))
    assert reply.message.text == "Hello"
    assert reply.usage == Usage(0, 0, unreported=1)


async def test_bedrock_reported_usage_is_kept() -> None:
    usage = {"inputTokens": 50, "outputTokens": 0, "totalTokens": 50}
    model = BedrockConverseModel(_converse_client(_converse(usage)))
    reply = await model.complete(request(tools=()))
    assert reply.usage == Usage(50, 0) and reply.usage.complete


async def test_bedrock_input_read_from_or_written_to_the_prompt_cache_is_input() -> None:
    usage = {
        "inputTokens": 10,
        "outputTokens": 4,
        "totalTokens": 1_214,
        "cacheReadInputTokens": 1_000,
        "cacheWriteInputTokens": 200,
    }
    model = BedrockConverseModel(_converse_client(_converse(usage)))
    reply = await model.complete(request(tools=()))
    assert reply.usage == Usage(1_210, 4)


async def test_bedrock_a_refused_reply_carries_what_it_cost() -> None:
    # Before: usage None for a reply refused after it was generated (and billed).
    body = _converse({"inputTokens": 100, "outputTokens": 1000, "totalTokens": 1100})
    use = {"toolUseId": "t1", "name": "records_search", "input": {"name": "A"}}
    body["output"]["message"]["content"] = [{"toolUse": use}]
    body["stopReason"] = "max_tokens"
    with pytest.raises(OutputBudgetError) as caught:
        await BedrockConverseModel(_converse_client(body)).complete(request(tools=(RECORDS,)))
    assert caught.value.usage == Usage(100, 1000)


async def test_bedrock_a_broken_reply_carries_what_it_cost() -> None:
    body = _converse({"inputTokens": 100, "outputTokens": 1000, "totalTokens": 1100})
    body["stopReason"] = "malformed_model_output"
    with pytest.raises(ModelError, match="malformed_model_output") as caught:
        await BedrockConverseModel(_converse_client(body)).complete(request(tools=(RECORDS,)))
    assert caught.value.usage == Usage(100, 1000)


def test_every_refused_stop_has_its_words_and_is_the_planners() -> None:
    # The adapters word each refusal from one table; the planner types a refused final answer
    # from the shared set: a stop added to one and not the other would go untyped or unworded.
    assert (
        set(adapter_errors._REFUSALS)
        == set(REFUSED_STOP_REASONS)
        == set(adapter_errors.REFUSED_STOPS)
    )
