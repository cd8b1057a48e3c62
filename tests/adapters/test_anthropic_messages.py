"""Anthropic Messages adapter: hosted tool search through the real SDK, direct and on Bedrock
InvokeModel, and replay of its history (SPEC I2, I3, I4, J1, J2, J4)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentgen.runtime import transcript
from agentgen.runtime.adapters import (
    AnthropicMessagesModel,
    EmptyReplyError,
    HistoryReplayError,
    ModelError,
    ModelRefusalError,
    OutputBudgetError,
    ProviderNameError,
    ToolIdentityError,
    ToolSearchUnsupportedError,
)
from agentgen.runtime.adapters.anthropic_search import METADATA_KEY
from agentgen.runtime.engines.temporal.errors import retryable
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import ToolChoice, Usage
from tests.adapters.fakes import (
    Server,
    anthropic_client,
    anthropic_server,
    check_anthropic,
    claude_text,
    message,
    raw_anthropic_client,
    search_error,
    search_result,
    server_search,
    tool_use,
)
from tests.adapters.tools import ALERTS, INVOICE, RECORDS, WEATHER, deferred, request, tool

MODEL = "claude-opus-4-7"
SEARCH_TOOL = {
    "type": "tool_search_tool_regex_20251119",
    "name": "tool_search_tool_regex",
    "cache_control": {"type": "ephemeral"},
}


def adapter(server: Server, *, bedrock: bool = False, **options: Any) -> AnthropicMessagesModel:
    return AnthropicMessagesModel(anthropic_client(server, bedrock=bedrock), **options)


def ask(*messages: Message, **options: Any) -> Any:
    return request(*messages, model=options.pop("model", MODEL), **options)


def stored(messages: list[Message]) -> list[Message]:
    return [Message.from_json(json.loads(json.dumps(m.to_json()))) for m in messages]


async def test_full_catalog_with_deferred_flags_and_the_search_tool() -> None:
    server = anthropic_server(message(claude_text("Hello")))
    await adapter(server).complete(ask())
    body = server.bodies[0]
    assert [t["name"] for t in body["tools"]] == [
        "records_search",
        "weather_lookup",
        "weather_alerts",
        "billing_invoice",
        "tool_search_tool_regex",
    ]
    assert [t.get("defer_loading", False) for t in body["tools"][:4]] == [False, True, True, True]
    assert body["tools"][1] == {
        "name": "weather_lookup",
        "description": WEATHER.description,
        "input_schema": WEATHER.parameters(),
        "defer_loading": True,
    }
    # The cache marker is on the search tool only, never on a deferred tool.
    assert body["tools"][-1] == SEARCH_TOOL
    assert [t for t in body["tools"] if "cache_control" in t] == [SEARCH_TOOL]
    assert "anthropic-beta" not in server.exchanges[0].headers
    assert body["max_tokens"] == 1000 and body["model"] == MODEL


async def test_an_agent_whose_tools_are_all_deferred_still_sends_an_immediate_tool() -> None:
    server = anthropic_server(message(claude_text("ok")))
    tools = (deferred(RECORDS), WEATHER)
    await adapter(server).complete(ask(tools=tools))
    sent = server.bodies[0]["tools"]
    assert [t.get("defer_loading", False) for t in sent] == [True, True, False]
    assert sent[-1]["name"] == "tool_search_tool_regex"


async def test_without_deferred_tools_or_searches_no_search_tool_is_sent() -> None:
    server = anthropic_server(message(claude_text("ok")))
    await adapter(server).complete(ask(tools=(RECORDS,), max_tokens=None))
    body = server.bodies[0]
    assert body["tools"] == [
        {
            "name": "records_search",
            "description": RECORDS.description,
            "input_schema": RECORDS.parameters(),
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert body["max_tokens"] == 4096


async def test_cache_marker_can_be_turned_off() -> None:
    server = anthropic_server(message(claude_text("ok")))
    await adapter(server, cache_tools=False).complete(ask())
    assert all("cache_control" not in t for t in server.bodies[0]["tools"])


async def test_bedrock_invoke_model_envelope() -> None:
    server = anthropic_server(message(claude_text("ok")))
    model = adapter(server, bedrock=True)
    assert model.platform == "bedrock"
    await model.complete(ask(model="global.anthropic.claude-opus-4-7"))
    exchange = server.exchanges[0]
    assert exchange.url == (
        "https://bedrock-runtime.us-west-2.amazonaws.com/model/global.anthropic.claude-opus-4-7/invoke"
    )
    body = exchange.body
    assert "model" not in body
    assert body["anthropic_version"] == "bedrock-2023-05-31"
    assert body["anthropic_beta"] == ["tool-search-tool-2025-10-19"]
    assert body["tools"][-1] == {**SEARCH_TOOL, "type": "tool_search_tool_regex"}
    assert exchange.headers["authorization"].startswith("AWS4-HMAC-SHA256")


async def test_bedrock_without_search_sends_no_beta() -> None:
    server = anthropic_server(message(claude_text("ok")))
    await adapter(server, bedrock=True).complete(ask(tools=(RECORDS,)))
    assert "anthropic_beta" not in server.bodies[0]


async def test_a_user_tool_named_like_the_search_tool_is_refused() -> None:
    server = anthropic_server()
    clash = tool("tool_search.tool_regex", "Mine.")
    with pytest.raises(ProviderNameError, match="hosted tool search tool"):
        await adapter(server).complete(ask(tools=(RECORDS, clash)))
    assert server.bodies == []


async def test_forcing_a_deferred_tool_sends_it_immediately() -> None:
    server = anthropic_server(message(tool_use("t1", "weather_lookup", {"city": "Oslo"})))
    reply = await adapter(server).complete(ask(choice=ToolChoice("tool", "weather.lookup")))
    body = server.bodies[0]
    flags = {t["name"]: t.get("defer_loading", False) for t in body["tools"]}
    assert flags["weather_lookup"] is False and flags["weather_alerts"] is True
    assert body["tool_choice"] == {"type": "tool", "name": "weather_lookup"}
    assert reply.message.tool_calls() == [ToolCallPart("t1", "weather.lookup", '{"city": "Oslo"}')]


@pytest.mark.parametrize(("mode", "sent"), [("none", {"type": "none"}), ("any", {"type": "any"})])
async def test_tool_choice_modes(mode: Any, sent: dict[str, str]) -> None:
    server = anthropic_server(message(claude_text("ok")))
    await adapter(server).complete(ask(choice=ToolChoice(mode)))
    assert server.bodies[0]["tool_choice"] == sent


SEARCH_TURN = (
    claude_text("Let me find a weather tool."),
    server_search("srvtoolu_1", "weather"),
    search_result("srvtoolu_1", "weather_lookup", "weather_alerts"),
    claude_text("Found it."),
    tool_use("toolu_1", "weather_lookup", {"city": "Paris"}),
)


async def search_exchange(model: AnthropicMessagesModel, server: Server) -> list[Message]:
    """search → call → result → final answer, as a stored transcript."""
    server.replies += [
        message(*SEARCH_TURN, stop_reason="tool_use"),
        message(claude_text("Sunny in Paris.")),
    ]
    asked = Message.user("Weather in Paris?")
    first = await model.complete(ask(asked))
    result = Message("tool", (ToolResultPart("toolu_1", "weather.lookup", '{"sky":"sunny"}'),))
    final = await model.complete(ask(*stored([asked, first.message]), result))
    return stored([asked, first.message, result, final.message])


async def test_search_load_call_result_final_answer() -> None:
    server = anthropic_server()
    history = await search_exchange(adapter(server), server)
    assistant = history[1]
    assert assistant.parts == (
        TextPart("Let me find a weather tool."),
        TextPart("Found it."),
        ToolCallPart("toolu_1", "weather.lookup", '{"city": "Paris"}'),
    )
    meta = assistant.metadata[METADATA_KEY]
    assert [(r["at"], r["block"]["type"]) for r in meta["records"]] == [
        (1, "server_tool_use"),
        (1, "tool_search_tool_result"),
    ]
    assert [d["tool_id"] for d in meta["definitions"]] == ["weather.lookup", "weather.alerts"]
    assert meta["changes"] == []
    # The reply went back verbatim and in order, then the tool result as a user turn.
    replayed = server.bodies[1]["messages"]
    assert replayed[1] == {"role": "assistant", "content": list(SEARCH_TURN)}
    assert replayed[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"sky":"sunny"}'}
        ],
    }
    assert history[3].text == "Sunny in Paris."


def check_known_codes_only(url: str, headers: dict[str, str], body: dict[str, Any]) -> list[str]:
    """The SDK's param type lists fewer error codes than the API documents: check the body
    with the one undocumented-to-the-SDK code swapped for a listed one, so that everything
    else is still checked."""
    listed = json.loads(json.dumps(body).replace('"invalid_pattern"', '"unavailable"'))
    return check_anthropic(url, headers, listed)


async def test_error_codes_are_open_strings_replayed_verbatim() -> None:
    # "invalid_pattern" is documented but not in the SDK's literal set: parse leniently.
    server = anthropic_server(
        message(
            server_search("srvtoolu_1", "(("),
            search_error("srvtoolu_1", "invalid_pattern"),
            claude_text("The search failed."),
            validate=False,
        ),
        message(claude_text("ok")),
    )
    server.check = check_known_codes_only
    model = AnthropicMessagesModel(anthropic_client(server, strict=False))
    reply = await model.complete(ask())
    history = stored([Message.user("x"), reply.message, Message.user("again")])
    await model.complete(ask(*history))
    error = server.bodies[1]["messages"][1]["content"][1]["content"]
    assert error == {"type": "tool_search_tool_result_error", "error_code": "invalid_pattern"}


async def test_a_paused_turn_with_only_native_work_is_not_continued() -> None:
    server = anthropic_server(
        message(server_search("srvtoolu_1", "weather"), stop_reason="pause_turn")
    )
    with pytest.raises(ModelError, match="continuing such pauses is not supported") as caught:
        await adapter(server).complete(ask())
    # Broken as output, not as a request: a durable run asks again (before: never retried,
    # though the message said "retry the request").
    assert caught.value.transient and "later attempt may pass" in str(caught.value)


async def test_calls_to_tools_outside_the_request_are_refused() -> None:
    server = anthropic_server(message(tool_use("t1", "billing_invoice", {})))
    with pytest.raises(ToolIdentityError, match="'billing_invoice'"):
        await adapter(server).complete(ask(tools=(RECORDS, WEATHER)))


async def test_a_call_whose_input_is_not_an_object_is_refused() -> None:
    # Replay sends arguments back as objects: such a call would break the next request.
    reply = message(tool_use("t1", "records_search", {}), stop_reason="tool_use", validate=False)
    reply["content"][0]["input"] = "oops"
    model = AnthropicMessagesModel(anthropic_client(anthropic_server(reply), strict=False))
    with pytest.raises(ModelError, match=r"\(tool_use 't1'\) with input of type str") as caught:
        await model.complete(ask(tools=(RECORDS,)))
    assert caught.value.transient and "later attempt may pass" in str(caught.value)


async def test_unhandled_content_blocks_are_refused() -> None:
    upload = {"type": "container_upload", "file_id": "file_1"}
    server = anthropic_server(message(upload))
    with pytest.raises(ModelError, match="'container_upload'"):
        await adapter(server).complete(ask())


async def test_references_the_request_did_not_send_are_refused() -> None:
    server = anthropic_server(
        message(server_search("s1", "x"), search_result("s1", "calendar_create"))
    )
    with pytest.raises(ModelError, match="'calendar_create', which the request did not send"):
        await adapter(server).complete(ask())


# --- replay after catalog changes ---------------------------------------------------------


async def conversation() -> list[Message]:
    server = anthropic_server()
    return await search_exchange(adapter(server), server)


async def test_removed_tool_needs_a_model_declared_for_tool_changes() -> None:
    history = await conversation()
    server = anthropic_server(message(claude_text("ok")))
    with pytest.raises(ToolSearchUnsupportedError) as error:
        await adapter(server).complete(ask(*history, Message.user("More?"), tools=(RECORDS,)))
    text = str(error.value)
    assert f"model {MODEL!r}" in text and "tool_removal 'weather_lookup'" in text
    assert "tool_change_models" in text
    assert server.bodies == []


async def test_removed_tool_is_resent_deferred_and_withdrawn_once() -> None:
    history = await conversation()
    before = json.dumps([m.to_json() for m in history])
    server = anthropic_server(message(claude_text("No weather any more.")))
    model = adapter(server, tool_change_models=["claude-opus-4-*"])
    reply = await model.complete(ask(*history, Message.user("More?"), tools=(RECORDS, INVOICE)))
    exchange = server.exchanges[0]
    assert exchange.headers["anthropic-beta"] == "mid-conversation-tool-changes-2026-07-01"
    body = exchange.body
    resent = {t["name"]: t for t in body["tools"] if t["name"].startswith("weather")}
    assert resent["weather_lookup"] == {
        "name": "weather_lookup",
        "description": WEATHER.description,
        "input_schema": WEATHER.parameters(),
        "defer_loading": True,
    }
    assert set(resent) == {"weather_lookup", "weather_alerts"}
    assert body["messages"][-1] == {
        "role": "system",
        "content": [
            {"type": "tool_removal", "tool": {"type": "tool_reference", "name": name}}
            for name in ("weather_alerts", "weather_lookup")
        ],
    }
    assert json.dumps([m.to_json() for m in history]) == before
    changes = reply.message.metadata[METADATA_KEY]["changes"]
    assert changes == [
        {"type": "tool_removal", "name": "weather_alerts"},
        {"type": "tool_removal", "name": "weather_lookup"},
    ]

    # Next turn: the changes replay where they were made, and are not made again.
    later = stored([*history, Message.user("More?"), reply.message, Message.user("Thanks")])
    server.replies.append(message(claude_text("Bye")))
    final = await model.complete(ask(*later, tools=(RECORDS, INVOICE)))
    messages = server.bodies[1]["messages"]
    roles = [m["role"] for m in messages]
    assert roles.count("system") == 1
    assert roles[roles.index("system") + 1] == "assistant"
    assert final.message.metadata == {}

    # The tool comes back: it is announced with a tool_addition.
    server.replies.append(message(claude_text("Weather is back.")))
    back = await model.complete(ask(*later, tools=(RECORDS, WEATHER, INVOICE)))
    assert server.bodies[2]["messages"][-1]["content"] == [
        {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "weather_lookup"}}
    ]
    assert back.message.metadata[METADATA_KEY]["changes"] == [
        {"type": "tool_addition", "name": "weather_lookup"}
    ]


async def test_bedrock_tool_changes_send_both_betas_in_the_body() -> None:
    history = await conversation()
    server = anthropic_server(message(claude_text("ok")))
    model = adapter(server, bedrock=True, tool_change_models=["global.anthropic.*"])
    await model.complete(
        ask(*history, Message.user("x"), tools=(RECORDS,), model="global.anthropic.claude-opus-4-7")
    )
    assert server.bodies[0]["anthropic_beta"] == [
        "tool-search-tool-2025-10-19",
        "mid-conversation-tool-changes-2026-07-01",
    ]


async def test_a_changed_definition_under_a_retained_name_is_refused() -> None:
    history = await conversation()
    changed = tool("weather.lookup", "Forecasts with pollen.", {"city": {"type": "string"}})
    server = anthropic_server(message(claude_text("ok")))
    model = adapter(server, tool_change_models=["*"])
    with pytest.raises(
        ToolSearchUnsupportedError, match=r"tool 'weather\.lookup'.*another definition"
    ):
        await model.complete(
            ask(*history, Message.user("x"), tools=(RECORDS, deferred(changed), ALERTS))
        )
    assert server.bodies == []


async def test_unchanged_tools_replay_without_changes() -> None:
    history = await conversation()
    server = anthropic_server(message(claude_text("ok")))
    await adapter(server).complete(ask(*history, Message.user("x")))
    assert all(m["role"] != "system" for m in server.bodies[0]["messages"])
    assert "anthropic-beta" not in server.exchanges[0].headers


async def test_history_searches_keep_the_search_tool_when_nothing_is_deferred_now() -> None:
    history = await conversation()
    now_eager = (RECORDS, deferred(WEATHER, False), deferred(ALERTS, False))
    server = anthropic_server(message(claude_text("ok")))
    await adapter(server).complete(ask(*history, Message.user("x"), tools=now_eager))
    assert server.bodies[0]["tools"][-1]["name"] == "tool_search_tool_regex"


async def test_compaction_keeps_metadata_and_replay_stays_valid() -> None:
    server = anthropic_server()
    model = adapter(server)
    first = await search_exchange(model, server)
    second = await search_exchange(model, server)
    stored_text = transcript.dumps([*first, *second])
    compacted = transcript.compact(transcript.loads(stored_text), keep_last=4)
    assert [m.text for m in compacted if m.role == "user"] == ["Weather in Paris?"]
    assert compacted[1].metadata[METADATA_KEY] == second[1].metadata[METADATA_KEY]
    server.replies.append(message(claude_text("ok")))
    await model.complete(ask(*compacted, Message.user("Thanks")))
    blocks = [
        block["type"]
        for m in server.bodies[-1]["messages"]
        if m["role"] == "assistant"
        for block in m["content"]
    ]
    assert blocks.count("server_tool_use") == 1 and blocks.count("tool_search_tool_result") == 1


def tampered(history: list[Message], change: Any) -> list[Message]:
    meta = json.loads(json.dumps(dict(history[1].metadata[METADATA_KEY])))
    change(meta)
    return [history[0], history[1].with_metadata(METADATA_KEY, meta), *history[2:]]


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda m: m["definitions"].pop(0), "saved no definition of it"),
        (lambda m: m["records"].pop(0), "answers no earlier server_tool_use"),
        (lambda m: m["records"].pop(1), "have no result"),
        (
            lambda m: m["records"][0]["block"].update(name="web_search"),
            "only 'tool_search_tool_regex'",
        ),
        (lambda m: m["records"][1]["block"].update(extra=1), "unknown fields"),
        (lambda m: m["records"][1]["block"]["content"].update(type="x"), "malformed content"),
        (lambda m: m["changes"].append({"type": "tool_addition", "name": "x"}), "was not removed"),
        (lambda m: m.update(version=1), "must be version 2"),
    ],
)
async def test_malformed_search_history_is_refused(change: Any, error: str) -> None:
    history = tampered(await conversation(), change)
    server = anthropic_server(message(claude_text("ok")))
    with pytest.raises(HistoryReplayError, match=error):
        await adapter(server, tool_change_models=["*"]).complete(ask(*history))


async def test_system_messages_after_the_start_stay_in_place() -> None:
    server = anthropic_server(message(claude_text("ok")))
    history = (Message.system("Be brief."), Message.user("Hi"), Message.system("Use metric units."))
    await adapter(server).complete(ask(*history, system="You are helpful."))
    body = server.bodies[0]
    assert body["system"] == "You are helpful.\n\nBe brief."
    assert body["messages"][1] == {"role": "system", "content": "Use metric units."}


async def test_max_tokens_must_be_positive() -> None:
    server = anthropic_server()
    with pytest.raises(ModelError, match="max_tokens must be positive, got 0"):
        await adapter(server).complete(ask(max_tokens=0))
    assert server.bodies == []


async def test_a_final_answer_only_request_keeps_found_tools_without_changes() -> None:
    """A run that spent its budget asks for an answer with tool choice none: the tools found by
    earlier searches stay defined (deferred) so the history replays, no availability change is
    announced, and nothing can be called."""
    history = await conversation()
    server = anthropic_server(message(claude_text("Here is what I found.")))
    reply = await adapter(server).complete(
        ask(*history, Message.user("Sum up."), tools=(RECORDS,), choice=ToolChoice("none"))
    )
    assert reply.message.text == "Here is what I found."
    exchange = server.exchanges[0]
    assert "anthropic-beta" not in exchange.headers
    body = exchange.body
    assert body["tool_choice"] == {"type": "none"}
    weather = [t for t in body["tools"] if t.get("name") == "weather_lookup"]
    assert weather and weather[0]["defer_loading"] is True
    assert all(m["role"] != "system" for m in body["messages"])


@pytest.mark.parametrize(
    ("content", "stop", "remedy"),
    [
        # Claude documents empty end_turn replies, right after tool results above all.
        ((), "end_turn", "ask again, or add a user message asking it to go on"),
        ((claude_text("\n\n"),), "end_turn", "ask again"),
        ((), "max_tokens", "raise max_tokens"),
        (
            (claude_text(" "),),
            "refusal",
            "refused the reply before any text, and would again: remove",
        ),
        ((), "tool_use", "see its stop reason"),
    ],
)
async def test_a_reply_without_a_call_or_text_is_refused_not_kept(
    content: tuple[dict[str, Any], ...], stop: str, remedy: str
) -> None:
    server = anthropic_server(message(*content, stop_reason=stop))
    with pytest.raises(EmptyReplyError) as caught:
        await adapter(server).complete(ask(tools=(RECORDS,)))
    assert f"reply 'msg_1' of model {MODEL!r} holds no tool call and no text" in str(caught.value)
    assert f"(stop reason {stop!r})" in str(caught.value) and remedy in str(caught.value)
    # Refused before any text: a refusal by type as well (the others are not).
    assert isinstance(caught.value, ModelRefusalError) is (stop == "refusal")


async def test_replay_never_sends_empty_content_or_blank_text() -> None:
    server = anthropic_server(message(claude_text("ok")))
    history = [
        Message.user("Find Ada"),
        Message("assistant", (TextPart("\n\n"), ToolCallPart("t1", "records.search", "{}"))),
        Message("tool", (ToolResultPart("t1", "records.search", "[]"),)),
    ]
    await adapter(server).complete(ask(*history, tools=(RECORDS,)))
    [sent] = server.bodies
    assert sent["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "records_search", "input": {}}],
    }


@pytest.mark.parametrize("blank", ["", " \n"])
async def test_a_stored_empty_reply_is_refused_before_sending(blank: str) -> None:
    server = anthropic_server()
    history = [Message.user("Hi"), Message("assistant", (TextPart(blank),)), Message.user("Hi?")]
    with pytest.raises(HistoryReplayError, match=r"message 1 \(assistant\) holds no call and no"):
        await adapter(server).complete(ask(*history, tools=(RECORDS,)))
    assert server.bodies == []


@pytest.mark.parametrize("blank", ["", "  "])
async def test_a_user_message_without_text_is_refused_before_sending(blank: str) -> None:
    server = anthropic_server()
    with pytest.raises(HistoryReplayError, match=r"message 0 \(user\) holds no text"):
        await adapter(server).complete(ask(Message.user(blank), tools=(RECORDS,)))
    assert server.bodies == []


async def test_a_call_cut_by_max_tokens_is_refused_naming_the_tool() -> None:
    server = anthropic_server(
        message(
            claude_text("Looking up"),
            tool_use("t1", "records_search", {"name": "Ad"}),
            stop_reason="max_tokens",
        )
    )
    with pytest.raises(OutputBudgetError) as caught:
        await adapter(server).complete(ask(tools=(RECORDS,), max_tokens=64))
    message_text = str(caught.value)
    assert "reached max_tokens (64) while calling 'records.search' (tool_use 't1'" in message_text
    assert message_text.endswith("raise max_tokens")


async def test_a_search_cut_by_max_tokens_says_to_raise_max_tokens() -> None:
    server = anthropic_server(
        message(server_search("srvtoolu_1", "weather"), stop_reason="max_tokens")
    )
    with pytest.raises(OutputBudgetError) as caught:
        await adapter(server).complete(ask(max_tokens=32))
    assert "reached max_tokens (32) in the middle of a hosted tool search" in str(caught.value)
    assert "raise max_tokens" in str(caught.value) and "retry" not in str(caught.value)


CONTEXT_WINDOW = "model_context_window_exceeded"


async def test_a_call_cut_by_the_context_window_is_refused_with_a_shorter_conversation() -> None:
    # Before: handed to the run as an ordinary call, though its input may be cut short.
    server = anthropic_server(
        message(tool_use("t1", "records_search", {"name": "Ad"}), stop_reason=CONTEXT_WINDOW)
    )
    with pytest.raises(ModelError) as caught:
        await adapter(server).complete(ask(tools=(RECORDS,), max_tokens=64))
    error = caught.value
    assert not isinstance(error, OutputBudgetError) and not error.transient
    text = str(error)
    assert "filled the model's context window while calling 'records.search' (tool_use 't1'" in text
    assert f"stop_reason {CONTEXT_WINDOW!r}" in text and "shorten the conversation" in text
    assert "max_tokens" not in text  # more output budget cannot help


async def test_a_search_cut_by_the_context_window_is_not_called_a_pause() -> None:
    server = anthropic_server(
        message(server_search("srvtoolu_1", "weather"), stop_reason=CONTEXT_WINDOW)
    )
    with pytest.raises(ModelError) as caught:
        await adapter(server).complete(ask())
    text = str(caught.value)
    assert "filled the model's context window in the middle of a hosted tool search" in text
    assert "paused" not in text and not caught.value.transient


async def test_text_cut_by_the_context_window_is_passed_on_with_its_stop_reason() -> None:
    # Only calls and searches are refused: a cut answer fails the run as IncompleteAnswerError.
    server = anthropic_server(message(claude_text("The records say"), stop_reason=CONTEXT_WINDOW))
    reply = await adapter(server).complete(ask(tools=(RECORDS,)))
    assert (reply.message.text, reply.stop_reason) == ("The records say", CONTEXT_WINDOW)


async def test_an_empty_reply_cut_by_the_context_window_says_to_shorten_the_conversation() -> None:
    server = anthropic_server(message(stop_reason=CONTEXT_WINDOW))
    with pytest.raises(EmptyReplyError, match="filled the model's context window: shorten"):
        await adapter(server).complete(ask(tools=(RECORDS,)))


async def test_a_call_in_reply_to_tool_choice_none_is_refused() -> None:
    # Before: handed to the run, though a final-answer-only request may call nothing.
    server = anthropic_server(
        message(tool_use("toolu_9", "records_search", {"name": "A"}), stop_reason="tool_use")
    )
    with pytest.raises(ToolIdentityError) as caught:
        await adapter(server).complete(ask(tools=(RECORDS,), choice=ToolChoice("none")))
    assert "called 'records_search', though the request's tool choice was 'none'" in str(
        caught.value
    )
    assert server.bodies[0]["tool_choice"] == {"type": "none"}


async def test_reply_text_that_is_not_unicode_is_refused_by_name() -> None:
    # Before: accepted, and every later request of the conversation died with a bare
    # UnicodeEncodeError from the SDK.
    raw = json.dumps(message(claude_text("x"))).replace('"text": "x"', '"text": "hi \\ud83d"')
    with pytest.raises(ModelError) as caught:
        await AnthropicMessagesModel(raw_anthropic_client(raw)).complete(ask(tools=(RECORDS,)))
    text = str(caught.value)
    assert "reply 'msg_1' of model 'claude-opus-4-7': content[0] holds text that is not" in text
    assert "$.text ('hi \\ud83d')" in text
    assert caught.value.transient and caught.value.usage is not None


REFUSED = "was refused by the provider (stop_reason 'refusal': the provider's safety classifiers"


@pytest.mark.parametrize("bedrock", [False, True], ids=["anthropic", "bedrock"])
async def test_calls_in_a_reply_the_provider_refused_are_not_run(bedrock: bool) -> None:
    # Before: handed to the run as ordinary calls (and run), though the classifiers stopped
    # the reply and its content may be partial.
    server = anthropic_server(
        message(
            claude_text("Sure"),
            tool_use("t1", "records_search", {"name": "A"}),
            tool_use("t2", "records_search", {"name": "B"}),
            stop_reason="refusal",
        )
    )
    with pytest.raises(ModelError) as caught:
        await adapter(server, bedrock=bedrock).complete(ask(tools=(RECORDS,)))
    error = caught.value
    provider = "anthropic on bedrock" if bedrock else "anthropic"
    text = str(error)
    assert text.startswith(f"{provider}: reply 'msg_1' of model 'claude-opus-4-7' {REFUSED}")
    assert "none of what it holds (2 tool calls) is run" in text
    assert "remove or rephrase the turn that caused it" in text
    assert not error.transient and not retryable(error)  # the same conversation is refused again
    assert error.usage == Usage(100, 20)  # billed up to the refusal
    assert isinstance(error, ModelRefusalError)  # told from other failures by type


async def test_a_refused_reply_with_an_unanswered_hosted_search_is_not_a_pause() -> None:
    # Before: "paused its turn", transient, so a durable run asked again and was refused again.
    server = anthropic_server(
        message(server_search("srvtoolu_1", "weather"), stop_reason="refusal")
    )
    with pytest.raises(ModelError) as caught:
        await adapter(server).complete(ask())
    text = str(caught.value)
    assert REFUSED in text and "(unanswered hosted tool search 'srvtoolu_1')" in text
    assert "paused" not in text and not caught.value.transient
    assert isinstance(caught.value, ModelRefusalError)


async def test_a_refused_reply_without_calls_keeps_its_stop_reason() -> None:
    # Not an answer either: the planner refuses a final answer stopped by "refusal".
    server = anthropic_server(message(claude_text("Hello.."), stop_reason="refusal"))
    reply = await adapter(server).complete(ask(tools=(RECORDS,)))
    assert (reply.message.text, reply.stop_reason) == ("Hello..", "refusal")
