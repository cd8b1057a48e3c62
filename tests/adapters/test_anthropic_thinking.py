"""Claude's thinking kept across the turns of a tool loop, for the model that made it."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from anthropic import AsyncAnthropic

from agentgen.runtime.adapters import (
    AnthropicMessagesModel,
    EmptyReplyError,
    HistoryReplayError,
    ModelError,
)
from agentgen.runtime.adapters.anthropic_search import METADATA_KEY
from agentgen.runtime.adapters.anthropic_thinking import THINKING_KEY, THINKING_MODEL_KEY
from agentgen.runtime.messages import Message, ToolResultPart
from agentgen.runtime.model_client import USAGE_METADATA_KEY, ToolChoice
from tests.adapters.fakes import (
    Server,
    anthropic_client,
    anthropic_server,
    claude_text,
    message,
    search_result,
    server_search,
    tool_use,
)
from tests.adapters.tools import ALERTS, RECORDS, WEATHER, request

MODEL = "claude-opus-5"
THOUGHT = {"type": "thinking", "thinking": "Ada may be a customer.", "signature": "sig-1"}
REDACTED = {"type": "redacted_thinking", "data": "opaque-1"}


def adapter(server: Server, *, bedrock: bool = False, **options: Any) -> AnthropicMessagesModel:
    return AnthropicMessagesModel(anthropic_client(server, bedrock=bedrock), **options)


def stored(message_: Message) -> Message:
    return Message.from_json(json.loads(json.dumps(message_.to_json())))


async def tool_loop(server: Server, model: str = MODEL, **options: Any) -> list[Message]:
    """A reply thinking, calling a tool: the stored history the next request carries."""
    asked = Message.user("Who is Ada?")
    first = await adapter(server, **options).complete(request(asked, model=model))
    result = Message("tool", (ToolResultPart("c1", "records.search", '{"found":1}'),))
    return [asked, stored(first.message), result]


async def test_a_tool_loop_sends_back_the_thinking_that_made_the_call_unchanged() -> None:
    # Before: a reply holding thinking was refused ("does not handle"), so a model that thinks
    # (by default, or asked to) could not be used; the API wants the thinking back, signature
    # and all, with the call it made.
    server = anthropic_server(
        message(
            THOUGHT, claude_text("Let me look."), REDACTED, tool_use("c1", "records_search", {})
        ),
        message(claude_text("Ada is a customer.")),
    )
    history = await tool_loop(server)
    await adapter(server).complete(request(*history, model=MODEL))
    assert server.bodies[1]["messages"][1] == {
        "role": "assistant",
        "content": [
            THOUGHT,
            {"type": "text", "text": "Let me look."},
            REDACTED,
            {"type": "tool_use", "id": "c1", "name": "records_search", "input": {}},
        ],
    }


async def test_the_thinking_configuration_is_sent_as_given() -> None:
    server = anthropic_server(message(claude_text("Hi.")), message(claude_text("Hi.")))
    await adapter(server, thinking={"type": "adaptive"}).complete(request(model=MODEL))
    await adapter(server).complete(request(model=MODEL))
    assert server.bodies[0]["thinking"] == {"type": "adaptive"}
    assert "thinking" not in server.bodies[1]


async def test_bedrock_sends_the_thinking_back_too() -> None:
    server = anthropic_server(
        message(THOUGHT, tool_use("c1", "records_search", {})), message(claude_text("Ada."))
    )
    config = {"type": "enabled", "budget_tokens": 1024}
    history = await tool_loop(server, bedrock=True, thinking=config)
    await adapter(server, bedrock=True, thinking=config).complete(request(*history, model=MODEL))
    assert server.bodies[1]["thinking"] == config
    assert server.bodies[1]["messages"][1]["content"][0] == THOUGHT


async def test_another_model_gets_none_of_the_thinking() -> None:
    server = anthropic_server(
        message(THOUGHT, tool_use("c1", "records_search", {})), message(claude_text("Ada."))
    )
    history = await tool_loop(server)
    assert history[1].metadata[THINKING_MODEL_KEY] == MODEL
    await adapter(server).complete(request(*history, model="claude-sonnet-5"))
    assert server.bodies[1]["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "records_search", "input": {}}
    ]


async def test_thinking_goes_back_where_it_was_among_hosted_searches() -> None:
    server = anthropic_server(
        message(
            THOUGHT,
            server_search("s1", "weather"),
            search_result("s1", "weather_lookup"),
            REDACTED,
            tool_use("c1", "weather_lookup", {"city": "Paris"}),
        ),
        message(claude_text("Sunny.")),
    )
    tools = (RECORDS, WEATHER, ALERTS)
    asked = Message.user("Weather in Paris?")
    first = await adapter(server).complete(request(asked, tools=tools, model=MODEL))
    result = Message("tool", (ToolResultPart("c1", "weather.lookup", "{}"),))
    history = [asked, stored(first.message), result]
    await adapter(server).complete(request(*history, tools=tools, model=MODEL))
    content = server.bodies[1]["messages"][1]["content"]
    assert [block["type"] for block in content] == [
        "thinking",
        "server_tool_use",
        "tool_search_tool_result",
        "redacted_thinking",
        "tool_use",
    ]
    # The search records keep their version and shape: an older agentgen still reads them.
    records = history[1].metadata[METADATA_KEY]["records"]
    assert [r["block"]["type"] for r in records] == ["server_tool_use", "tool_search_tool_result"]


async def test_a_reply_of_thinking_only_is_refused_as_empty() -> None:
    server = anthropic_server(message(THOUGHT))
    with pytest.raises(EmptyReplyError):
        await adapter(server).complete(request(model=MODEL))


async def test_a_thinking_block_with_unknown_fields_is_refused_not_trimmed() -> None:
    odd = {**THOUGHT, "extra": "x"}
    server = anthropic_server(message(odd, claude_text("Hi."), validate=False))
    client = anthropic_client(server, strict=False)
    with pytest.raises(ModelError, match=r"'thinking' block with fields \['extra'"):
        await AnthropicMessagesModel(client).complete(request(model=MODEL))


def damaged(message_: Message, **changes: Any) -> Message:
    metadata = json.loads(json.dumps(dict(message_.metadata)))
    for key, value in changes.items():
        if key == "model":
            if value is None:
                del metadata[THINKING_MODEL_KEY]
            else:
                metadata[THINKING_MODEL_KEY] = value
        else:
            metadata[THINKING_KEY][key] = value
    return Message(message_.role, message_.parts, metadata)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"model": None}, "go together"),
        ({"model": 3}, "go together"),
        ({"blocks": [{"at": 0, "block": {**THOUGHT, "signature": 1}}]}, "must be a thinking"),
        ({"blocks": [{"at": 0, "block": {"type": "thinking"}}]}, "must be a thinking"),
        ({"blocks": [{"at": 5, "block": THOUGHT}]}, "anchored at 5"),
        ({"blocks": [{"at": 0, "block": {**THOUGHT, "thinking": "changed"}}]}, "fingerprint"),
        ({"version": 2}, "must be version 1"),
    ],
)
async def test_a_damaged_thinking_record_is_refused_before_sending(
    changes: dict[str, Any], match: str
) -> None:
    server = anthropic_server(message(THOUGHT, tool_use("c1", "records_search", {})))
    history = await tool_loop(server)
    history[1] = damaged(history[1], **changes)
    with pytest.raises(HistoryReplayError, match=match):
        await adapter(server).complete(request(*history, model=MODEL))
    assert len(server.bodies) == 1


THINKING_REQUIRED = (
    "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
    "`tool_use`. When `thinking` is enabled, a final `assistant` message must start with a "
    "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
    "recommend you include thinking blocks from previous turns. To avoid this requirement, "
    "disable `thinking`."
)


async def test_a_model_switch_in_the_middle_of_a_tool_loop_is_named_when_refused() -> None:
    # The other model's thinking cannot go, and a model that thinks refuses the turn without
    # it. Before: the provider's 400 passed on, advising to send back thinking blocks.
    server = anthropic_server(message(THOUGHT, tool_use("c1", "records_search", {})))
    history = await tool_loop(server)
    refusal = {"type": "error", "error": {"type": "invalid_request_error", "message": ""}}
    refusal["error"]["message"] = THINKING_REQUIRED
    sent: list[dict[str, Any]] = []

    def refuse(http_request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(http_request.content))
        return httpx2.Response(400, json=refusal)

    client = AsyncAnthropic(
        api_key="sk-ant-test",
        base_url="http://stub.local",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(refuse)),
        max_retries=0,
    )
    with pytest.raises(HistoryReplayError) as caught:
        await AnthropicMessagesModel(client).complete(request(*history, model="claude-sonnet-5"))
    assert sent[0]["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "records_search", "input": {}}
    ]
    text = str(caught.value)
    assert "anthropic: message 1 (assistant)" in text and caught.value.status == 400
    assert f"holds the reasoning of model {MODEL!r}" in text
    assert f"Continue the tool loop with model {MODEL!r}" in text


async def test_thinking_on_a_message_not_the_models_is_refused() -> None:
    server = anthropic_server(message(THOUGHT, tool_use("c1", "records_search", {})))
    history = await tool_loop(server)
    metadata = {THINKING_KEY: history[1].metadata[THINKING_KEY], THINKING_MODEL_KEY: MODEL}
    history[2] = Message(history[2].role, history[2].parts, metadata)
    with pytest.raises(HistoryReplayError, match="only assistant messages carry thinking"):
        await adapter(server).complete(request(*history, model=MODEL))


async def test_a_tool_loop_the_same_model_made_without_thinking_is_named_as_such() -> None:
    # The model that made the calls is the one asked now, its thinking then off (turned on
    # since, or the turn made before thinking was kept). Before: the error told to continue
    # the tool loop with that very model and switch to it once it had answered, which is what
    # had just been refused.
    server = anthropic_server(message(tool_use("c1", "records_search", {})))
    asked, made, result = await tool_loop(server)
    made = made.with_metadata(USAGE_METADATA_KEY, {"model": MODEL})
    refusal = {"type": "error", "error": {"type": "invalid_request_error", "message": ""}}
    refusal["error"]["message"] = THINKING_REQUIRED

    def refuse(http_request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(400, json=refusal)

    client = AsyncAnthropic(
        api_key="sk-ant-test",
        base_url="http://stub.local",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(refuse)),
        max_retries=0,
    )
    thinking = {"type": "enabled", "budget_tokens": 1024}
    with pytest.raises(HistoryReplayError) as caught:
        await AnthropicMessagesModel(client, thinking=thinking).complete(
            request(asked, made, result, model=MODEL)
        )
    text = str(caught.value)
    assert "Continue the tool loop with model" not in text
    assert f"was made by model {MODEL!r} itself, without thinking" in text
    assert "Finish the tool loop with its thinking off" in text


EXTENDED = {"type": "enabled", "budget_tokens": 1024}


@pytest.mark.parametrize(
    ("choice", "said"),
    [
        (ToolChoice("any"), "tool choice 'any'"),
        (ToolChoice("tool", "records.search"), "tool choice forcing tool 'records.search'"),
    ],
)
async def test_extended_thinking_with_a_forced_tool_choice_is_refused_before_sending(
    choice: ToolChoice, said: str
) -> None:
    # The API refuses it (400 "Thinking may not be enabled when tool_choice forces tool use"):
    # its extended thinking guide says only tool choice auto and none go with thinking. Before:
    # the request was sent, and the 400 told to "fix what it names".
    server = anthropic_server(message(claude_text("Hi.")))
    with pytest.raises(ModelError) as caught:
        await adapter(server, thinking=EXTENDED).complete(request(choice=choice, model=MODEL))
    assert server.bodies == []
    error = caught.value
    assert not error.transient and error.status is None
    text = str(error)
    assert text.startswith(f"anthropic: the request for model {MODEL!r}")
    assert said in text and "{'type': 'enabled', 'budget_tokens': 1024}" in text
    assert "tool choice 'auto'" in text and "thinking={'type': 'disabled'}" in text


async def test_bedrock_refuses_it_too() -> None:
    server = anthropic_server()
    with pytest.raises(ModelError, match=r"^anthropic on bedrock: .* tool choice 'any'"):
        await adapter(server, bedrock=True, thinking=EXTENDED).complete(
            request(choice=ToolChoice("any"), model=MODEL)
        )
    assert server.bodies == []


@pytest.mark.parametrize(
    "thinking",
    [None, {"type": "adaptive"}, {"type": "disabled"}],
    ids=["default", "adaptive", "off"],
)
async def test_a_forced_tool_choice_goes_with_thinking_the_api_does_not_say_it_refuses(
    thinking: dict[str, Any] | None,
) -> None:
    # Adaptive thinking with a forced choice is refused by some models and taken by others;
    # the model's default thinking is the model's. Only the API's 400 can say.
    server = anthropic_server(message(tool_use("c1", "records_search", {})))
    await adapter(server, thinking=thinking).complete(
        request(choice=ToolChoice("any"), model=MODEL)
    )
    assert server.bodies[0]["tool_choice"] == {"type": "any"}


@pytest.mark.parametrize("mode", ["auto", "none"])
async def test_extended_thinking_goes_with_tool_choice_auto_and_none(mode: str) -> None:
    server = anthropic_server(message(claude_text("Hi.")))
    await adapter(server, thinking=EXTENDED).complete(
        request(choice=ToolChoice(mode), model=MODEL)  # type: ignore[arg-type]
    )
    assert server.bodies[0]["thinking"] == EXTENDED
