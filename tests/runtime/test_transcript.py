"""SPEC J1: search records live in message metadata and survive storing and compaction."""

from __future__ import annotations

import json

import pytest

from agentgen.runtime import transcript
from agentgen.runtime.contracts.limits import MAX_TRANSCRIPT_DEPTH
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart

RECORD = {
    "openai.tool_search": [
        {"type": "tool_search_call", "call_id": "s1", "arguments": {"query": "weather"}}
    ]
}


def conversation() -> list[Message]:
    return [
        Message.system("Be brief."),
        Message.user("first"),
        Message("assistant", (ToolCallPart("c1", "weather.get", "{}"),), RECORD),
        Message("tool", (ToolResultPart("c1", "weather.get", '{"t": 20}'),)),
        Message("assistant", (TextPart("20 degrees"),)),
        Message.user("second"),
        Message("assistant", (ToolCallPart("c2", "weather.get", "{}"),), RECORD),
        Message("tool", (ToolResultPart("c2", "weather.get", '{"t": 21}'),)),
        Message("assistant", (TextPart("21 degrees"),)),
    ]


def test_storing_keeps_metadata() -> None:
    messages = conversation()
    restored = transcript.loads(transcript.dumps(messages))
    assert restored == tuple(messages)
    assert dict(restored[2].metadata) == RECORD


def test_compaction_keeps_whole_exchanges_and_their_metadata() -> None:
    messages = conversation()
    compacted = transcript.compact(messages, keep_last=3)
    assert [m.role for m in compacted] == ["system", "user", "assistant", "tool", "assistant"]
    assert compacted[1].text == "second"
    assert dict(compacted[2].metadata) == RECORD
    assert transcript.compact(messages, keep_last=100) == tuple(messages)
    with pytest.raises(ValueError):
        transcript.compact(messages, keep_last=0)


def test_loads_is_strict() -> None:
    with pytest.raises(ValueError):
        transcript.loads('{"role": "user"}')
    with pytest.raises(ValueError):
        transcript.loads('[{"role": "robot", "parts": []}]')


def test_loads_names_the_message_at_fault() -> None:
    good = '{"role": "user", "parts": [{"kind": "text", "text": "hi"}]}'
    with pytest.raises(ValueError, match=r"^message 1: a message must be a JSON object, not list"):
        transcript.loads(f"[{good}, []]")
    with pytest.raises(ValueError, match=r"^message 2: message role 'robot' is not one of"):
        transcript.loads(f'[{good}, {good}, {{"role": "robot", "parts": []}}]')


@pytest.mark.parametrize("kind", [{"a": 1}, ["text"], 1, None])
def test_loads_refuses_a_part_kind_that_is_not_text(kind: object) -> None:
    # An object or list kind raised TypeError (unhashable), which callers catching the
    # ValueError of every other malformed transcript missed.
    stored = [{"role": "user", "parts": [{"kind": kind, "text": "hi"}], "metadata": {}}]
    with pytest.raises(ValueError, match=r"^message 0: unknown message part kind"):
        transcript.loads(json.dumps(stored))


def test_compaction_keeps_system_messages_in_place() -> None:
    messages = [
        Message.user("a"),
        Message("assistant", (TextPart("b"),)),
        Message.system("from now on, be formal"),
        Message.user("c"),
        Message("assistant", (TextPart("d"),)),
        Message.user("e"),
        Message("assistant", (TextPart("f"),)),
    ]
    compacted = transcript.compact(messages, keep_last=2)
    assert [m.text for m in compacted] == ["from now on, be formal", "e", "f"]
    compacted = transcript.compact(messages, keep_last=4)
    assert [m.text for m in compacted] == ["from now on, be formal", "c", "d", "e", "f"]


@pytest.mark.parametrize("depth", [MAX_TRANSCRIPT_DEPTH - 4, 600, 100_000])
def test_loads_refuses_a_transcript_nested_too_deeply(depth: int) -> None:
    # Stored text is outside input: 600 levels of metadata crashed copying the records with a
    # bare RecursionError, 100,000 crashed the JSON parser; both name nothing.
    message = '{"role": "user", "parts": [{"kind": "text", "text": "hi"}], "metadata": {"x": %s}}'
    stored = f"[{message % ('[' * depth + ']' * depth)}]"
    if depth + 3 <= MAX_TRANSCRIPT_DEPTH:
        (loaded,) = transcript.loads(stored)
        assert loaded.text == "hi"
        return
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_TRANSCRIPT_DEPTH} levels"):
        transcript.loads(stored)


def test_loads_keeps_floats_as_stored() -> None:
    # Records are given back as they were stored: a float stays a float, which dumps writes.
    messages = [Message("user", (TextPart("hi"),), {"rec": {"score": 0.5}})]
    (loaded,) = transcript.loads(transcript.dumps(messages))
    assert loaded.metadata["rec"] == {"score": 0.5}
    assert transcript.dumps([loaded]) == transcript.dumps(messages)
