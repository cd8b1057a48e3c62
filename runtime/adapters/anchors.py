"""Native records kept in message metadata, anchored between the message's parts.

A provider's reply interleaves ordinary content (text, tool calls) with native search records,
and replay must put them back in the order the provider produced them. Each record is stored
with ``at``, the number of the message's parts that came before it, so a message can be
rebuilt in native order from its parts and its metadata alone; the parts stay ordinary
:class:`~agentgen.runtime.messages.Part` values that planners and stores already understand.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

from agentgen.runtime.adapters.errors import HistoryReplayError
from agentgen.runtime.messages import Message

__all__ = ["Anchored", "describe", "interleave", "read_anchored", "require_mapping"]

#: ``(at, record)``: the record comes after the message's first ``at`` parts.
Anchored = tuple[int, dict[str, Any]]

_Element = TypeVar("_Element")


def describe(index: int, message: Message) -> str:
    """How errors point at a message of the transcript."""
    return f"message {index} ({message.role})"


def require_mapping(value: object, what: str) -> dict[str, Any]:
    """Return ``value`` as a dict with string keys, or fail naming ``what``."""
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise HistoryReplayError(f"{what} must be a JSON object")
    return dict(value)


def read_anchored(value: object, field: str, parts: int, what: str) -> list[Anchored]:
    """Read a stored list of ``{"at": n, field: {...}}`` entries, checking every anchor."""
    if not isinstance(value, list):
        raise HistoryReplayError(f"{what} must be a list")
    out: list[Anchored] = []
    for position, entry in enumerate(value):
        entry_what = f"{what}[{position}]"
        data = require_mapping(entry, entry_what)
        if set(data) != {"at", field}:
            raise HistoryReplayError(f"{entry_what} must have exactly the keys 'at' and {field!r}")
        at = data["at"]
        if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at <= parts:
            raise HistoryReplayError(
                f"{entry_what} is anchored at {at!r}, but the message has {parts} parts; the "
                "transcript was changed after it was stored: restore the message or remove the "
                "whole exchange"
            )
        if out and at < out[-1][0]:
            raise HistoryReplayError(f"{entry_what} is out of order (anchors must not decrease)")
        out.append((at, require_mapping(data[field], f"{entry_what}.{field}")))
    return out


def interleave(
    parts: Sequence[_Element], records: Sequence[Anchored]
) -> Iterator[_Element | dict[str, Any]]:
    """Yield parts and records in native order; records sharing an anchor keep their order.

    ``parts`` may itself be an interleaved sequence (parts and records of another kind), for
    records anchored between its elements rather than between the message's parts alone."""
    position = 0
    for index, part in enumerate(parts):
        while position < len(records) and records[position][0] <= index:
            yield records[position][1]
            position += 1
        yield part
    for _, record in records[position:]:
        yield record
