"""OpenAI history replay: native order, pairing, filtering, Bedrock namespaces (SPEC J1-J3)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from agentgen.runtime import transcript
from agentgen.runtime.adapters import (
    HistoryReplayError,
    MissingNamespaceHistoryError,
    ModelError,
    OpenAIResponsesModel,
    ToolIdentityError,
)
from agentgen.runtime.adapters.history import seal
from agentgen.runtime.adapters.openai_search import METADATA_KEY
from agentgen.runtime.messages import Message, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import ToolChoice
from tests.adapters.fakes import (
    Server,
    function_call,
    openai_client,
    openai_server,
    reasoning,
    response,
    search_call,
    text,
)
from tests.adapters.tools import INVOICE, RECORDS, WEATHER, request, tool

WEATHER_CITY = {"city": {"type": "string"}}


async def weather_exchange(server: Server, question: str, call_id: str) -> list[Message]:
    """Run search → call → result → answer and return the stored transcript of it."""
    model = OpenAIResponsesModel(openai_client(server))
    server.replies += [
        response(search_call(f"s_{call_id}", "weather forecast")),
        response(function_call(call_id, "weather_lookup", '{"city":"Paris"}', "weather_lookup")),
    ]
    asked = Message.user(question)
    first = await model.complete(request(asked))
    result = Message("tool", (ToolResultPart(call_id, "weather.lookup", '{"sky":"sunny"}'),))
    server.replies.append(response(text("Sunny.")))
    final = await model.complete(request(asked, first.message, result))
    return stored([asked, first.message, result, final.message])


def stored(messages: list[Message]) -> list[Message]:
    """What a store gives back: the messages through JSON."""
    return [Message.from_json(json.loads(json.dumps(m.to_json()))) for m in messages]


def snapshot(messages: list[Message]) -> str:
    return json.dumps([m.to_json() for m in messages], sort_keys=True)


async def replay(
    history: list[Message], *reply: dict[str, Any], bedrock: bool = False, **options: Any
) -> Server:
    server = openai_server(*(reply or (response(text("ok")),)))
    model = OpenAIResponsesModel(openai_client(server, bedrock=bedrock))
    await model.complete(request(*history, **options))
    return server


def items(server: Server, kind: str) -> list[dict[str, Any]]:
    return [item for item in server.bodies[-1]["input"] if item.get("type") == kind]


async def test_unchanged_loaded_tools_replay_and_stay_callable() -> None:
    history = await weather_exchange(openai_server(), "Weather?", "c1")
    again = [*history, Message.user("And tomorrow?")]
    call = function_call("c2", "weather_lookup", '{"city":"Paris"}', "weather_lookup")
    server = await replay(again, response(call))
    # No new search was needed: the history's loaded namespace is still valid.
    assert len(server.bodies) == 1
    [output] = items(server, "tool_search_output")
    assert [t["name"] for t in output["tools"]] == ["weather_lookup", "weather_alerts"]
    assert items(server, "function_call")[0]["namespace"] == "weather_lookup"


async def test_changed_or_removed_definitions_are_dropped_from_the_request_only() -> None:
    history = await weather_exchange(openai_server(), "Weather?", "c1")
    before = snapshot(history)
    changed = tool("weather.lookup", "Forecasts, now with pollen counts.", deferred=True)
    # weather.alerts is no longer permitted; weather.lookup changed its description.
    server = await replay(history, tools=(RECORDS, changed, INVOICE))
    [output] = items(server, "tool_search_output")
    assert output["tools"] == []
    assert output["call_id"] == "s_c1"
    # The historical call still replays with its namespace.
    assert items(server, "function_call")[0]["namespace"] == "weather_lookup"
    assert snapshot(history) == before


async def test_new_calls_need_current_authorisation_not_history() -> None:
    history = await weather_exchange(openai_server(), "Weather?", "c1")
    changed = tool("weather.lookup", "Forecasts, now with pollen counts.", deferred=True)
    call = function_call("c2", "weather_lookup", "{}", "weather_lookup")
    with pytest.raises(ToolIdentityError, match="no search loaded it"):
        await replay([*history, Message.user("Again")], response(call), tools=(RECORDS, changed))


async def test_search_records_replay_in_native_order() -> None:
    server = openai_server(
        response(
            text("Let me look.", "m1"),
            search_call("s1", "invoice"),
            function_call("c1", "records_search", '{"name":"Ada"}'),
        )
    )
    reply = await OpenAIResponsesModel(openai_client(server)).complete(request())
    result = Message("tool", (ToolResultPart("c1", "records.search", "[]"),))
    history = stored([Message.user("Bill Ada"), reply.message, result])
    again = await replay(history)
    kinds = [item["type"] for item in again.bodies[0]["input"]]
    assert kinds == [
        "message",
        "message",
        "tool_search_call",
        "function_call",
        "tool_search_output",
        "function_call_output",
    ]


async def test_compaction_keeps_metadata_and_replay_stays_valid() -> None:
    server = openai_server()
    first = await weather_exchange(server, "Weather in Paris?", "c1")
    second = await weather_exchange(server, "Weather in Oslo?", "c2")
    # The runtime's store keeps the transcript as JSON and compacts it to the last exchange.
    compacted = list(
        transcript.compact(transcript.loads(transcript.dumps([*first, *second])), keep_last=4)
    )
    assert [m.text for m in compacted if m.role == "user"] == ["Weather in Oslo?"]
    assert compacted[1].metadata[METADATA_KEY] == second[1].metadata[METADATA_KEY]
    again = await replay([*compacted, Message.user("Thanks")])
    assert [item["call_id"] for item in items(again, "tool_search_call")] == ["s_c2"]
    assert [item["call_id"] for item in items(again, "tool_search_output")] == ["s_c2"]


def with_records(message: Message, records: list[dict[str, Any]], **extra: Any) -> Message:
    """The message with search records as the adapter stores them (sealed)."""
    meta = seal(message.parts, {"version": 2, "records": records, "namespaces": {}, **extra})
    return message.with_metadata(METADATA_KEY, meta)


def search_output(call_id: str, *tools: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": list(tools),
    }


def bare_weather() -> dict[str, Any]:
    """How transcripts made before the namespace wrapper stored a loaded tool."""
    return {
        "type": "function",
        "name": "weather_lookup",
        "description": WEATHER.description,
        "parameters": WEATHER.parameters(),
        "strict": False,
        "defer_loading": True,
    }


def legacy_history() -> list[Message]:
    call = ToolCallPart("c1", "weather.lookup", '{"city":"Paris"}')
    assistant = with_records(
        Message("assistant", (call,)),
        [
            {"at": 0, "item": search_call("s1", "weather")},
            {"at": 0, "item": search_output("s1", bare_weather())},
        ],
    )
    result = Message("tool", (ToolResultPart("c1", "weather.lookup", "{}"),))
    return [Message.user("Weather?"), assistant, result]


async def test_bedrock_refuses_loaded_calls_without_namespace_and_never_patches() -> None:
    history = legacy_history()
    before = snapshot(history)
    with pytest.raises(MissingNamespaceHistoryError) as error:
        await replay(history, bedrock=True)
    message = str(error.value)
    assert "'weather.lookup'" in message and "Bedrock" in message
    assert "start a new conversation" in message and "remove that whole exchange" in message
    assert snapshot(history) == before


async def test_direct_openai_replays_older_bare_loads_as_they_were() -> None:
    server = await replay(legacy_history())
    assert "namespace" not in items(server, "function_call")[0]
    assert items(server, "tool_search_output")[0]["tools"] == [bare_weather()]


async def test_a_namespaced_load_called_without_namespace_is_refused_everywhere() -> None:
    history = await weather_exchange(openai_server(), "Weather?", "c1")
    meta = copy.deepcopy(dict(history[1].metadata[METADATA_KEY]))
    meta["namespaces"] = {}
    broken = [history[0], history[1].with_metadata(METADATA_KEY, meta), *history[2:]]
    with pytest.raises(MissingNamespaceHistoryError, match="has no namespace"):
        await replay(broken)


def assistant_with(*records: dict[str, Any]) -> Message:
    entries = [{"at": 0, "item": record} for record in records]
    return with_records(Message("assistant", ()), entries)


@pytest.mark.parametrize(
    ("history", "message"),
    [
        (
            [assistant_with(search_call("s1", "a"), search_output("s1"), search_call("s1", "b"))],
            "'s1' appears twice",
        ),
        ([assistant_with(search_output("s9"))], "no earlier unanswered"),
        ([assistant_with(search_call("s1", "a"))], "'s1' has no tool_search_output"),
        (
            [assistant_with({**search_call("s1", "a"), "created_by": "x"}), Message.user("x")],
            "unknown fields",
        ),
        ([assistant_with({"type": "reasoning", "id": "r"})], "unsupported tool search record"),
        (
            [assistant_with(search_call("s1", "a"), search_output("s1", {"type": "namespace"}))],
            "must be a namespace",
        ),
    ],
)
async def test_invalid_search_history_is_refused(history: list[Message], message: str) -> None:
    with pytest.raises(HistoryReplayError, match=message):
        await replay([Message.user("hi"), *history])


async def test_records_anchored_outside_the_message_are_refused() -> None:
    entry = {"at": 3, "item": search_call("s1", "a")}
    history = [Message.user("hi"), with_records(Message("assistant", ()), [entry])]
    with pytest.raises(HistoryReplayError, match="anchored at 3"):
        await replay(history)


async def test_search_metadata_on_a_user_message_is_refused() -> None:
    history = [with_records(Message.user("hi"), [])]
    with pytest.raises(HistoryReplayError, match="only assistant messages"):
        await replay(history)


async def test_a_new_search_may_not_reuse_a_historical_call_id() -> None:
    history = await weather_exchange(openai_server(), "Weather?", "c1")
    with pytest.raises(ModelError, match="reuses tool search call ID 's_c1'"):
        await replay([*history, Message.user("x")], response(search_call("s_c1", "alerts")))


async def test_a_call_whose_loading_search_was_compacted_away_is_refused() -> None:
    server = openai_server()
    first = await weather_exchange(server, "Weather in Paris?", "c1")
    # The next exchange calls the loaded tool again, without searching.
    model = OpenAIResponsesModel(openai_client(server))
    asked = Message.user("And Lyon?")
    server.replies.append(
        response(function_call("c2", "weather_lookup", '{"city":"Lyon"}', "weather_lookup"))
    )
    again = await model.complete(request(*first, asked))
    result = Message("tool", (ToolResultPart("c2", "weather.lookup", '{"sky":"rain"}'),))
    history = stored([*first, asked, again.message, result])
    # Compacting to the last exchange drops the search that declared the namespace.
    kept = list(transcript.compact(history, keep_last=3))
    assert kept[0].text == "And Lyon?"
    with pytest.raises(HistoryReplayError) as caught:
        await replay(kept)
    message = str(caught.value)
    assert "call 'c2' to 'weather.lookup' was made in namespace 'weather_lookup'" in message
    assert "no search output kept in the transcript declares" in message


async def test_a_loaded_tool_made_immediate_stays_in_its_namespace() -> None:
    history = await weather_exchange(openai_server(), "Weather?", "c1")
    immediate = (RECORDS, tool("weather.lookup", WEATHER.description, WEATHER_CITY))
    call = function_call("c2", "weather_lookup", '{"city":"Lyon"}', "weather_lookup")
    server = openai_server(response(call), response(text("Rain.")))
    model = OpenAIResponsesModel(openai_client(server))
    asked = [*history, Message.user("And Lyon?")]
    reply = await model.complete(request(*asked, tools=immediate))
    # Declared once: in the replayed namespace, not again at the top level.
    assert [t["name"] for t in server.bodies[0]["tools"]] == ["records_search"]
    [output] = items(server, "tool_search_output")
    assert [t["name"] for t in output["tools"]] == ["weather_lookup"]
    # The call carries its namespace, so the conversation goes on replaying.
    assert reply.message.tool_calls()[0].tool_id == "weather.lookup"
    result = Message("tool", (ToolResultPart("c2", "weather.lookup", '{"sky":"rain"}'),))
    await model.complete(request(*stored([*asked, reply.message, result]), tools=immediate))
    assert items(server, "function_call")[-1]["namespace"] == "weather_lookup"


async def test_a_plain_call_to_a_tool_loaded_in_its_namespace_is_refused() -> None:
    history = await weather_exchange(openai_server(), "Weather?", "c1")
    immediate = (RECORDS, tool("weather.lookup", WEATHER.description, WEATHER_CITY))
    call = function_call("c2", "weather_lookup", '{"city":"Lyon"}')
    with pytest.raises(ToolIdentityError, match="without the namespace 'weather_lookup'"):
        await replay([*history, Message.user("And Lyon?")], response(call), tools=immediate)


async def test_forcing_a_tool_a_search_loaded_is_refused_before_sending() -> None:
    history = await weather_exchange(openai_server(), "Weather?", "c1")
    server = openai_server()
    model = OpenAIResponsesModel(openai_client(server))
    with pytest.raises(ModelError) as caught:
        await model.complete(
            request(*history, Message.user("Lyon?"), choice=ToolChoice("tool", "weather.lookup"))
        )
    message = str(caught.value)
    assert "forces tool 'weather.lookup'" in message and "namespace 'weather_lookup'" in message
    assert server.bodies == []


async def test_a_forced_call_replays_while_no_search_declares_its_namespace() -> None:
    # Forced before any search loaded it: a plain call, replayed as one.
    server = openai_server(response(function_call("c1", "weather_lookup", '{"city":"Oslo"}')))
    model = OpenAIResponsesModel(openai_client(server))
    asked = Message.user("Weather in Oslo?")
    forced = await model.complete(request(asked, choice=ToolChoice("tool", "weather.lookup")))
    result = Message("tool", (ToolResultPart("c1", "weather.lookup", '{"sky":"snow"}'),))
    server = await replay(stored([asked, forced.message, result]))
    assert "namespace" not in items(server, "function_call")[0]


async def test_search_calls_replay_without_their_output_item_ids() -> None:
    server = openai_server(
        response(reasoning("rs_1"), search_call("s1", "weather", "tsc_1")),
        response(function_call("c1", "weather_lookup", '{"city":"Paris"}', "weather_lookup")),
    )
    model = OpenAIResponsesModel(openai_client(server))
    asked = Message.user("Weather?")
    first = await model.complete(request(asked))
    # Within the invocation the reasoning item goes back with it, and so does the item ID.
    assert [(i["type"], i.get("id")) for i in server.bodies[1]["input"][1:3]] == [
        ("reasoning", "rs_1"),
        ("tool_search_call", "tsc_1"),
    ]
    result = Message("tool", (ToolResultPart("c1", "weather.lookup", "{}"),))
    later = await replay(stored([asked, first.message, result]))
    # Later the reasoning item is gone (never stored): an ID without it is refused by the API.
    [call] = items(later, "tool_search_call")
    assert "id" not in call and call["call_id"] == "s1"
    assert first.message.metadata[METADATA_KEY]["records"][0]["item"]["id"] == "tsc_1"
