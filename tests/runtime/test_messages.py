"""Messages and their metadata (SPEC J1: native search records live in metadata and survive
storing a conversation)."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart

SEARCH_RECORDS: dict[str, Any] = {
    "openai.tool_search": [
        {
            "type": "tool_search_call",
            "call_id": "ts_1",
            "arguments": {"query": "refund charge"},
            "execution": "client",
        },
        {
            "type": "tool_search_output",
            "call_id": "ts_1",
            "tools": [
                {"type": "namespace", "name": "billing_refund", "tools": [{"name": "x"}]},
            ],
            "score": 1.25,
            "empty": {},
            "none": None,
        },
    ],
    "anthropic.blocks": [{"type": "tool_reference", "tool_name": "billing_refund"}],
}


def stored(message: Message) -> Message:
    """What a transcript store gives back: the message through JSON text."""
    return Message.from_json(json.loads(json.dumps(message.to_json())))


def every_part_kind() -> Message:
    return Message(
        "assistant",
        (
            TextPart("Let me refund that."),
            ToolCallPart("call_1", "billing.refund", '{"amount":0.1}'),
            ToolResultPart("call_1", "billing.refund", '{"refund_id":"r1"}'),
            ToolResultPart("call_2", "billing.lookup", '{"error":"nope"}', is_error=True),
        ),
        copy.deepcopy(SEARCH_RECORDS),
    )


def test_every_part_kind_round_trips() -> None:
    message = every_part_kind()
    again = stored(message)
    assert again == message
    assert again.parts == message.parts
    assert [type(p) for p in again.parts] == [
        TextPart,
        ToolCallPart,
        ToolResultPart,
        ToolResultPart,
    ]
    assert [getattr(p, "is_error", None) for p in again.parts] == [None, None, False, True]


def test_the_json_form_is_explicit() -> None:
    message = Message(
        "tool",
        (ToolResultPart("c", "t.x", "null"), TextPart("hi"), ToolCallPart("d", "t.y", "{}")),
        {"k": [1]},
    )
    assert message.to_json() == {
        "role": "tool",
        "parts": [
            {
                "call_id": "c",
                "tool_id": "t.x",
                "content": "null",
                "is_error": False,
                "kind": "tool_result",
            },
            {"text": "hi", "kind": "text"},
            {"call_id": "d", "tool_id": "t.y", "arguments": "{}", "kind": "tool_call"},
        ],
        "metadata": {"k": [1]},
    }


def test_nested_metadata_survives_storing() -> None:
    message = every_part_kind()
    again = stored(message)
    assert dict(again.metadata) == SEARCH_RECORDS
    assert json.dumps(again.to_json(), sort_keys=True) == json.dumps(
        message.to_json(), sort_keys=True
    )
    # Storing twice changes nothing either (compaction re-stores kept messages).
    assert stored(again).to_json() == message.to_json()


@pytest.mark.parametrize("role", ["system", "user", "assistant", "tool"])
def test_every_role_round_trips(role: Any) -> None:
    message = Message(role, (TextPart(f"{role} text"),))
    assert stored(message) == message
    assert stored(message).role == role


def test_metadata_defaults_to_empty() -> None:
    message = Message.from_json({"role": "user", "parts": [{"kind": "text", "text": "hi"}]})
    assert dict(message.metadata) == {}
    assert message.text == "hi"


def test_metadata_is_read_only() -> None:
    message = every_part_kind()
    with pytest.raises(TypeError):
        message.metadata["new"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        del message.metadata["openai.tool_search"]  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        message.metadata.clear()  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.metadata = {}  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.parts = ()  # type: ignore[misc]
    assert dict(message.metadata) == SEARCH_RECORDS


def test_metadata_is_independent_of_the_dict_it_was_built_from() -> None:
    source = copy.deepcopy(SEARCH_RECORDS)
    message = Message("assistant", (TextPart("x"),), source)
    source["openai.tool_search"][0]["arguments"]["query"] = "changed"
    source["openai.tool_search"].append({"type": "extra"})
    source["added"] = True
    assert dict(message.metadata) == SEARCH_RECORDS


def test_metadata_is_independent_of_the_json_it_was_read_from() -> None:
    data = every_part_kind().to_json()
    message = Message.from_json(data)
    before = json.dumps(message.to_json())
    data["metadata"]["openai.tool_search"][1]["tools"].clear()
    data["parts"][0]["text"] = "changed"
    assert json.dumps(message.to_json()) == before
    assert dict(message.metadata) == SEARCH_RECORDS


def test_changing_the_written_json_does_not_change_the_message() -> None:
    message = every_part_kind()
    data = message.to_json()
    before = json.dumps(data)
    data["metadata"]["openai.tool_search"][0]["call_id"] = "changed"
    data["metadata"]["anthropic.blocks"].append({"type": "extra"})
    data["metadata"]["new"] = 1
    data["parts"].clear()
    assert json.dumps(message.to_json()) == before
    assert dict(message.metadata) == SEARCH_RECORDS


def test_with_metadata_returns_a_new_message() -> None:
    message = Message("assistant", (TextPart("x"),), {"a": 1})
    updated = message.with_metadata("b", {"nested": [1, 2]})
    assert updated is not message
    assert dict(message.metadata) == {"a": 1}
    assert dict(updated.metadata) == {"a": 1, "b": {"nested": [1, 2]}}
    assert updated.parts == message.parts
    assert updated.role == message.role
    replaced = updated.with_metadata("a", 2)
    assert dict(replaced.metadata) == {"a": 2, "b": {"nested": [1, 2]}}
    assert dict(updated.metadata)["a"] == 1
    with pytest.raises(TypeError):
        updated.metadata["c"] = 3  # type: ignore[index]


def test_helpers() -> None:
    message = every_part_kind()
    assert message.text == "Let me refund that."
    assert message.tool_calls() == [ToolCallPart("call_1", "billing.refund", '{"amount":0.1}')]
    assert Message.user("hi") == Message("user", (TextPart("hi"),))
    assert Message.system("be brief").role == "system"


VALID: dict[str, Any] = {"role": "user", "parts": [{"kind": "text", "text": "hi"}]}


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({**VALID, "extra": 1}, "unknown fields"),
        ({**VALID, "id": "m1", "created": 0}, "unknown fields"),
        ({**VALID, "role": "developer"}, "role"),
        ({**VALID, "role": None}, "role"),
        ({**VALID, "parts": [{"kind": "image", "url": "x"}]}, "kind"),
        ({**VALID, "parts": [{"text": "no kind"}]}, "kind"),
        ({**VALID, "parts": [{"kind": "text", "text": "x", "lang": "en"}]}, "unknown fields"),
        (
            {**VALID, "parts": [{"kind": "tool_call", "call_id": "c", "tool_id": "t.x"}]},
            "missing",
        ),
        (
            {
                **VALID,
                "parts": [
                    {
                        "kind": "tool_result",
                        "call_id": "c",
                        "tool_id": "t.x",
                        "content": "1",
                        "status": "ok",
                    }
                ],
            },
            "unknown fields",
        ),
        ({**VALID, "parts": [{"kind": "text", "text": 5}]}, "text"),
        (
            {
                **VALID,
                "parts": [
                    {
                        "kind": "tool_result",
                        "call_id": "c",
                        "tool_id": "t.x",
                        "content": "1",
                        "is_error": "yes",
                    }
                ],
            },
            "is_error",
        ),
        (
            {
                **VALID,
                "parts": [
                    {"kind": "tool_call", "call_id": "c", "tool_id": "t.x", "arguments": {"a": 1}}
                ],
            },
            "arguments",
        ),
        ({**VALID, "parts": ["hi"]}, "part"),
        ({**VALID, "parts": "hi"}, "parts"),
        ({**VALID, "metadata": [["a", 1]]}, "metadata"),
        ({"parts": []}, "role"),
        ({"role": "user"}, "parts"),
    ],
)
def test_parsing_is_strict(data: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        Message.from_json(data)


def test_an_omitted_is_error_means_success() -> None:
    message = Message.from_json(
        {
            "role": "tool",
            "parts": [{"kind": "tool_result", "call_id": "c", "tool_id": "t.x", "content": "1"}],
        }
    )
    assert message.parts == (ToolResultPart("c", "t.x", "1", False),)


# --- property: any transcript survives a JSON round trip ---------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=15,
)
ids = st.text(min_size=1, max_size=12)
parts = st.one_of(
    st.builds(TextPart, st.text(max_size=40)),
    st.builds(ToolCallPart, ids, ids, json_values.map(json.dumps)),
    st.builds(ToolResultPart, ids, ids, json_values.map(json.dumps), st.booleans()),
)
messages = st.builds(
    Message,
    st.sampled_from(["system", "user", "assistant", "tool"]),
    st.lists(parts, max_size=5).map(tuple),
    st.dictionaries(st.text(max_size=12), json_values, max_size=4),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(messages, max_size=6))
def test_random_transcripts_survive_a_json_round_trip(transcript: list[Message]) -> None:
    text = json.dumps([m.to_json() for m in transcript])
    restored = [Message.from_json(data) for data in json.loads(text)]
    assert restored == transcript
    assert json.dumps([m.to_json() for m in restored]) == text


@pytest.mark.parametrize(
    ("role", "parts", "error", "message"),
    [
        (
            "bogus",
            (),
            ValueError,
            "message role 'bogus' is not one of system, user, assistant, tool",
        ),
        ("user", "hello", TypeError, r"Message\('user', ...\): parts must be a tuple of TextPart"),
        ("user", ["hello"], TypeError, r"not \['hello'\]; for text, pass \(TextPart\(text\),\)"),
        ("user", [TextPart("hi")], TypeError, "parts must be a tuple"),
    ],
)
def test_a_message_of_the_wrong_shape_is_refused_when_it_is_built(
    role: Any, parts: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Message(role, parts)


def test_separate_text_blocks_are_not_glued_together() -> None:
    # Claude's documented shape: text, a hosted search, more text (one message, two blocks).
    message = Message(
        "assistant",
        (TextPart("I'll search for a tool."), TextPart(""), TextPart("No tool can do that.")),
    )
    assert message.text == "I'll search for a tool.\n\nNo tool can do that."


def test_text_labelled_commentary_is_not_the_answer() -> None:
    message = Message(
        "assistant",
        (
            TextPart("Let me find a tool.", phase="commentary"),
            TextPart('{"found": false}', phase="final_answer"),
        ),
    )
    assert message.text == '{"found": false}'
    # With nothing else to say, the commentary is the message's text.
    only = Message("assistant", (TextPart("Looking.", phase="commentary"),))
    assert only.text == "Looking."


def test_a_phase_round_trips_and_its_absence_is_stored_as_before() -> None:
    labelled = Message("assistant", (TextPart("Looking.", phase="commentary"), TextPart("x")))
    assert stored(labelled) == labelled
    assert labelled.to_json()["parts"] == [
        {"text": "Looking.", "kind": "text", "phase": "commentary"},
        {"text": "x", "kind": "text"},
    ]
    with pytest.raises(ValueError, match="phase 'aside' is not one of commentary, final_answer"):
        Message.from_json(
            {"role": "assistant", "parts": [{"kind": "text", "text": "x", "phase": "aside"}]}
        )
