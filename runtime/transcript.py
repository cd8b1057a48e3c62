"""Storing and compacting transcripts.

Native tool-search records live in the metadata of the messages they belong to; there is no
other store of loaded tools. Storing a transcript keeps every message whole (metadata
included). Compacting drops whole older exchanges and keeps the rest untouched, in order: a
kept message keeps its metadata, system messages stay where they are, and a tool result is
never kept without the call it answers. Adapters check the search records of what is kept: if
a kept message depends on a search that was dropped (for example Claude's ``tool_removal`` of a
tool found earlier), replaying it fails with ``HistoryReplayError`` — compact from an earlier
exchange or start a new conversation; nothing is repaired silently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentgen.runtime.contracts.codecs import NestingError, decode_nested
from agentgen.runtime.contracts.limits import MAX_TRANSCRIPT_DEPTH
from agentgen.runtime.messages import Message

__all__ = ["compact", "dumps", "loads"]


def dumps(messages: Sequence[Message]) -> str:
    """JSON text of a transcript (messages with all their parts and metadata)."""
    return json.dumps([m.to_json() for m in messages], ensure_ascii=False)


def loads(text: str) -> tuple[Message, ...]:
    """The messages of a transcript stored with :func:`dumps`. A record that cannot be read is
    named by its index (``message 3: ...``), the way the trace names its records. Text nested
    deeper than :data:`~agentgen.runtime.contracts.limits.MAX_TRANSCRIPT_DEPTH` levels is
    refused with a ``ValueError`` too: reading it would exhaust the recursion limit (a bare
    ``RecursionError``, naming nothing)."""
    try:
        data = decode_nested(text, MAX_TRANSCRIPT_DEPTH, exact=False)
    except NestingError:
        raise ValueError(
            f"nested deeper than {MAX_TRANSCRIPT_DEPTH} levels, the limit for a stored "
            "transcript; what dumps writes nests far less, so this text was not written by "
            "dumps or was changed since"
        ) from None
    if not isinstance(data, list):
        raise ValueError("a stored transcript is a JSON list of messages")
    messages: list[Message] = []
    for index, item in enumerate(data):
        try:
            messages.append(Message.from_json(item))
        except ValueError as exc:
            raise ValueError(f"message {index}: {exc}") from None
    return tuple(messages)


def compact(messages: Sequence[Message], *, keep_last: int) -> tuple[Message, ...]:
    """Drop the oldest exchanges so that about ``keep_last`` non-system messages remain.

    The cut falls just before a user message (an exchange never loses its start, a tool
    result never its call); system messages are all kept, in their places.
    """
    if keep_last < 1:
        raise ValueError("keep_last must be at least 1")
    positions = [i for i, m in enumerate(messages) if m.role != "system"]
    if len(positions) <= keep_last:
        return tuple(messages)
    cut = len(positions) - keep_last
    while cut > 0 and messages[positions[cut]].role != "user":
        cut -= 1
    start = positions[cut]
    return tuple(m for i, m in enumerate(messages) if i >= start or m.role == "system")
