"""OpenAI reasoning items kept across the turns of a tool loop, for the model that made them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentgen.runtime.adapters import HistoryReplayError, OpenAIResponsesModel
from agentgen.runtime.adapters.openai_reasoning import REASONING_KEY, REASONING_MODEL_KEY
from agentgen.runtime.adapters.openai_search import METADATA_KEY
from agentgen.runtime.messages import Message, ToolResultPart
from tests.adapters.fakes import (
    function_call,
    openai_client,
    openai_server,
    reasoning,
    response,
    search_call,
    text,
)
from tests.adapters.tools import request


def encrypted(item_id: str) -> dict[str, Any]:
    return {
        **reasoning(item_id),
        "summary": [{"type": "summary_text", "text": f"Thinking ({item_id})."}],
        "encrypted_content": f"gAAAAB-{item_id}",
    }


def stored(message: Message) -> Message:
    return Message.from_json(json.loads(json.dumps(message.to_json())))


async def test_a_tool_loop_sends_back_the_reasoning_that_made_the_call() -> None:
    # Before: the reasoning item that produced a call was dropped once complete() returned, so
    # the next request of the tool loop (carrying the call's output) lost it.
    server = openai_server(
        response(encrypted("rs_1"), function_call("c1", "records_search", '{"name":"Ada"}')),
        response(text("Ada is a customer.", "msg_2")),
    )
    model = OpenAIResponsesModel(openai_client(server))
    asked = Message.user("Who is Ada?")
    first = await model.complete(request(asked))
    result = Message("tool", (ToolResultPart("c1", "records.search", '{"found":1}'),))
    await model.complete(request(asked, stored(first.message), result))
    later = server.bodies[1]["input"]
    assert [(item["type"], item.get("id")) for item in later] == [
        ("message", None),
        ("reasoning", "rs_1"),
        ("function_call", "fc_c1"),
        ("function_call_output", None),
    ]
    assert later[1] == encrypted("rs_1")


def shape(body: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(item["type"], item.get("id")) for item in body["input"]]


async def search_loop(model_id: str = "gpt-5.4") -> tuple[Any, list[Message]]:
    """Reasoning, a search, reasoning, a call to what it loaded: the stored exchange."""
    server = openai_server(
        response(encrypted("rs_1"), search_call("s1", "weather", "tsc_1"), output_tokens=30),
        response(
            encrypted("rs_2"),
            text("Looking it up.", "msg_1", "commentary"),
            function_call("c1", "weather_lookup", '{"city":"Paris"}', "weather_lookup"),
        ),
    )
    model = OpenAIResponsesModel(openai_client(server))
    asked = Message.user("Weather in Paris?")
    first = await model.complete(request(asked, model=model_id))
    result = Message("tool", (ToolResultPart("c1", "weather.lookup", '{"sky":"sunny"}'),))
    return server, [asked, stored(first.message), result]


async def test_reasoning_goes_back_where_it_was_among_searches_texts_and_calls() -> None:
    server, history = await search_loop()
    # Within the invocation, the search round got the reasoning item as received.
    assert shape(server.bodies[1])[1:4] == [
        ("reasoning", "rs_1"),
        ("tool_search_call", "tsc_1"),
        ("tool_search_output", None),
    ]
    server.replies.append(response(text("Sunny.", "msg_2")))
    await OpenAIResponsesModel(openai_client(server)).complete(request(*history))
    assert shape(server.bodies[2]) == [
        ("message", None),
        ("reasoning", "rs_1"),
        ("tool_search_call", "tsc_1"),
        ("tool_search_output", None),
        ("reasoning", "rs_2"),
        ("message", "msg_1"),
        ("function_call", "fc_c1"),
        ("function_call_output", None),
    ]
    later = server.bodies[2]["input"]
    assert later[1] == encrypted("rs_1") and later[4] == encrypted("rs_2")
    assert later[5]["phase"] == "commentary" and later[5]["content"][0]["text"] == "Looking it up."
    assert later[6]["namespace"] == "weather_lookup"


async def test_another_model_gets_neither_the_reasoning_nor_the_item_ids() -> None:
    server, history = await search_loop()
    server.replies.append(response(text("Sunny.", "msg_2")))
    model = OpenAIResponsesModel(openai_client(server))
    await model.complete(request(*history, model="gpt-5.5"))
    assert shape(server.bodies[2]) == [
        ("message", None),
        ("tool_search_call", None),
        ("tool_search_output", None),
        ("message", None),
        ("function_call", None),
        ("function_call_output", None),
    ]


async def test_reasoning_without_encrypted_content_is_not_kept() -> None:
    # Such an item could only be looked up in the provider's store by its ID.
    server = openai_server(
        response(reasoning("rs_1"), function_call("c1", "records_search", '{"name":"Ada"}')),
        response(text("Ada.")),
    )
    model = OpenAIResponsesModel(openai_client(server))
    asked = Message.user("Who is Ada?")
    first = await model.complete(request(asked))
    assert REASONING_KEY not in first.message.metadata
    result = Message("tool", (ToolResultPart("c1", "records.search", "{}"),))
    await model.complete(request(asked, stored(first.message), result))
    assert [item_id for _, item_id in shape(server.bodies[1])] == [None, None, None]


async def test_a_final_answer_keeps_its_reasoning_and_message_id() -> None:
    server = openai_server(
        response(encrypted("rs_1"), text("Hello.", "msg_1", "final_answer")),
        response(text("Bye.", "msg_2")),
    )
    model = OpenAIResponsesModel(openai_client(server))
    asked = Message.user("Hi")
    first = await model.complete(request(asked))
    assert first.message.metadata[REASONING_MODEL_KEY] == "gpt-5.4"
    await model.complete(request(asked, stored(first.message), Message.user("Bye")))
    assert shape(server.bodies[1]) == [
        ("message", None),
        ("reasoning", "rs_1"),
        ("message", "msg_1"),
        ("message", None),
    ]


def damaged(message: Message, **changes: Any) -> Message:
    metadata = json.loads(json.dumps(dict(message.metadata)))
    record = metadata[REASONING_KEY]
    for key, value in changes.items():
        if key == "model":
            if value is None:
                del metadata[REASONING_MODEL_KEY]
            else:
                metadata[REASONING_MODEL_KEY] = value
        else:
            record[key] = value
    return Message(message.role, message.parts, metadata)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"model": None}, "go together"),
        ({"model": ""}, "go together"),
        ({"ids": ["fc_c1"]}, r"ids must list one output-item ID"),
        ({"ids": "fc_c1"}, r"ids must list one output-item ID"),
        (
            {"items": [{"at": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}]},
            "encrypted_content",
        ),
        ({"items": [{"at": 9, "item": encrypted("rs_1")}]}, "anchored at 9"),
        ({"items": [{"at": 0, "item": encrypted("rs_9")}]}, "fingerprint differs"),
        ({"version": 2}, "must be version 1"),
    ],
)
async def test_a_damaged_reasoning_record_is_refused_before_sending(
    changes: dict[str, Any], match: str
) -> None:
    server, history = await search_loop()
    history[1] = damaged(history[1], **changes)
    with pytest.raises(HistoryReplayError, match=match):
        await OpenAIResponsesModel(openai_client(server)).complete(request(*history))
    assert len(server.bodies) == 2


async def test_the_search_records_stay_as_older_releases_read_them() -> None:
    # The reasoning is a record of its own: the search records keep their version and shape.
    _, history = await search_loop()
    records = history[1].metadata[METADATA_KEY]
    assert records["version"] == 2
    assert [r["item"]["type"] for r in records["records"]] == [
        "tool_search_call",
        "tool_search_output",
    ]


async def test_reasoning_on_a_message_not_the_models_is_refused() -> None:
    server, history = await search_loop()
    metadata = {REASONING_KEY: history[1].metadata[REASONING_KEY], REASONING_MODEL_KEY: "gpt-5.4"}
    history[0] = Message(history[0].role, history[0].parts, metadata)
    with pytest.raises(HistoryReplayError, match="only assistant messages carry reasoning"):
        await OpenAIResponsesModel(openai_client(server)).complete(request(*history))


async def test_a_reasoning_item_the_reply_ended_on_is_not_kept() -> None:
    # A reply cut at the output limit while reasoning after its text ends on a reasoning item
    # that nothing follows. Kept, it went back to every later request of the model with no
    # item to pair with: the API refuses it ("provided without its required following
    # item"), so the conversation could not go on with that model. The reasoning that made
    # the text still goes back with it.
    server = openai_server(
        response(
            encrypted("rs_1"),
            text("Partly", "msg_1", "commentary"),
            encrypted("rs_2"),
            status="incomplete",
            incomplete="max_output_tokens",
        ),
        response(text("Bye.", "msg_2")),
    )
    model = OpenAIResponsesModel(openai_client(server))
    asked = Message.user("Hi")
    first = await model.complete(request(asked))
    assert first.stop_reason == "max_tokens"
    await model.complete(request(asked, stored(first.message), Message.user("Go on")))
    assert shape(server.bodies[1]) == [
        ("message", None),
        ("reasoning", "rs_1"),
        ("message", "msg_1"),
        ("message", None),
    ]


async def test_a_reply_whose_only_reasoning_ends_it_keeps_none() -> None:
    server = openai_server(
        response(
            text("Partly", "msg_1"),
            encrypted("rs_1"),
            status="incomplete",
            incomplete="max_output_tokens",
        ),
    )
    first = await OpenAIResponsesModel(openai_client(server)).complete(request())
    assert REASONING_KEY not in first.message.metadata
    assert REASONING_MODEL_KEY not in first.message.metadata


async def test_consecutive_reasoning_items_go_back_as_received() -> None:
    # A reply may hold reasoning items in a row before the item they lead to: the run belongs
    # to the item after it (as OpenAI's Agents SDK reads it), and a client that merged such
    # items into one had its next request refused for the reasoning item it lost. So they go
    # back one by one, in order, each with its own ID and encrypted_content.
    server = openai_server(
        response(
            encrypted("rs_1"),
            encrypted("rs_2"),
            function_call("c1", "records_search", '{"name":"Ada"}'),
        ),
        response(text("Ada is a customer.", "msg_2")),
    )
    model = OpenAIResponsesModel(openai_client(server))
    asked = Message.user("Who is Ada?")
    first = await model.complete(request(asked))
    result = Message("tool", (ToolResultPart("c1", "records.search", '{"found":1}'),))
    await model.complete(request(asked, stored(first.message), result))
    assert shape(server.bodies[1]) == [
        ("message", None),
        ("reasoning", "rs_1"),
        ("reasoning", "rs_2"),
        ("function_call", "fc_c1"),
        ("function_call_output", None),
    ]
    later = server.bodies[1]["input"]
    assert later[1] == encrypted("rs_1") and later[2] == encrypted("rs_2")
