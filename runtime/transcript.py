"""Storing and compacting transcripts.

Native tool-search records live in the metadata of the messages they belong to; there is no
other store of loaded tools. Storing a transcript keeps every message whole (metadata
included), and compacting drops whole older exchanges: a kept message keeps its metadata, and a
tool result is never kept without the call it answers (nor a call without its result), so a
compacted history still replays.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentgen.runtime.messages import Message


def dumps(messages: Sequence[Message]) -> str:
    """JSON text of a transcript (messages with all their parts and metadata)."""
    return json.dumps([m.to_json() for m in messages], ensure_ascii=False)


def loads(text: str) -> tuple[Message, ...]:
    data = json.loads(text)
    if not isinstance(data, list):
        raise ValueError("a stored transcript is a JSON list of messages")
    return tuple(Message.from_json(item) for item in data)


def compact(messages: Sequence[Message], *, keep_last: int) -> tuple[Message, ...]:
    """Keep about the last ``keep_last`` messages, starting at a user message so that no kept
    tool result loses its call; leading system messages are always kept."""
    if keep_last < 1:
        raise ValueError("keep_last must be at least 1")
    system = [m for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    if len(rest) <= keep_last:
        return tuple(messages)
    start = len(rest) - keep_last
    while start > 0 and rest[start].role != "user":
        start -= 1
    return (*system, *rest[start:])
