"""Reasoning items of OpenAI replies, kept for the later requests of the same model.

A reasoning model's ``reasoning`` output items are its chain of thought, and the API asks for
them back on later requests: in a tool loop, the call's output goes back in a request of its
own, and without the reasoning that produced the call the model reasons again from less, and
the cached prefix breaks. The API pairs each reasoning item with the item that followed it by
that item's ID: a reasoning item sent without it is refused ("provided without its required
following item"), and so is an item ID sent without its reasoning item ("provided without its
required 'reasoning' item"). So a message keeps its reasoning items exactly as received, and
the output-item ID of each of its parts; both go back together, or neither does.

They go back only to the model that produced them (recorded beside them, under
:data:`REASONING_MODEL_KEY`): another model's reasoning is no part of the conversation a
different model continues. And only when every reasoning item of the reply carries its
``encrypted_content``: without it the API can only look the item up by its ID in the responses
it stored, which a request must not rely on (``store: false``, Zero Data Retention, expiry).

Stored in the assistant message's metadata under :data:`REASONING_KEY`::

    {"version": 1,
     "items": [{"at": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [...],
                                  "encrypted_content": "..."}}],
     "ids": ["fc_1", "msg_2"],
     "fingerprint": "<sha-256 of the record and the message's calls>"}

``at`` anchors each item in the message's native order *with* its search records (the parts
and records of :data:`~.openai_search.METADATA_KEY` interleaved), since a reasoning item may
precede a search call; ``ids`` holds the output-item ID of each of the message's parts (None
for one that had none). A record of its own, beside the search records, so that an agentgen
that predates it still reads the message (it replays it without reasoning, as it did).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentgen.runtime.adapters.anchors import Anchored, read_anchored
from agentgen.runtime.adapters.errors import HistoryReplayError
from agentgen.runtime.adapters.history import REMEDY, read_sealed, seal, verify
from agentgen.runtime.messages import Message, Part

__all__ = ["REASONING_KEY", "REASONING_MODEL_KEY", "Reasoning", "keepable", "read_reasoning"]

#: The metadata key of a reply's reasoning items and its parts' output-item IDs.
REASONING_KEY = "openai.reasoning"
#: The metadata key of the model ID the request that produced the reasoning gave: the only
#: model it is replayed to.
REASONING_MODEL_KEY = "openai.reasoning_model"
_VERSION = 1
_KEYS = frozenset({"version", "items", "ids", "fingerprint"})


def keepable(items: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a reply's reasoning items can be kept: there are some, and each carries the
    ``encrypted_content`` that lets a later request send it without the provider's store."""
    return bool(items) and all(
        isinstance(item.get("encrypted_content"), str) and item["encrypted_content"]
        for item in items
    )


@dataclass(frozen=True)
class Reasoning:
    """A message's reasoning items (anchored in its native order) and its parts' item IDs."""

    items: tuple[Anchored, ...] = ()
    ids: tuple[str | None, ...] = ()

    def to_json(self, parts: Sequence[Part], what: str) -> dict[str, Any]:
        """The stored form, sealed with the fingerprint of it and of ``parts``."""
        record = {
            "version": _VERSION,
            "items": [{"at": at, "item": item} for at, item in self.items],
            "ids": list(self.ids),
        }
        return seal(parts, record, what)


def read_reasoning(message: Message, elements: int, what: str, model: str) -> Reasoning | None:
    """The reasoning stored with ``message`` when it goes back to ``model``, checked; None when
    it has none or another model produced it. ``elements`` is the number of the message's
    parts and search records (where its reasoning items may sit)."""
    stored = message.metadata.get(REASONING_KEY)
    producer = message.metadata.get(REASONING_MODEL_KEY)
    if stored is None and producer is None:
        return None
    where = f"{what} metadata {REASONING_KEY!r}"
    if message.role != "assistant":
        raise HistoryReplayError(f"{where}: only assistant messages carry reasoning")
    if stored is None or not isinstance(producer, str) or not producer:
        raise HistoryReplayError(
            f"{what}: metadata {REASONING_KEY!r} and {REASONING_MODEL_KEY!r} (the model ID that "
            f"produced the reasoning) go together, got {REASONING_MODEL_KEY!r} {producer!r}: "
            f"the transcript was changed after it was stored; restore the message, or {REMEDY}"
        )
    data = read_sealed(stored, where, _VERSION, _KEYS)
    items = read_anchored(data["items"], "item", elements, f"{where}.items")
    for position, (_, item) in enumerate(items):
        _check_item(item, f"{where}.items[{position}].item")
    ids = data["ids"]
    if (
        not isinstance(ids, list)
        or len(ids) != len(message.parts)
        or not all(value is None or (isinstance(value, str) and value) for value in ids)
    ):
        raise HistoryReplayError(
            f"{where}.ids must list one output-item ID (or null) for each of the message's "
            f"{len(message.parts)} parts; the transcript was changed after it was stored: "
            f"restore the message, or {REMEDY}"
        )
    verify(where, message.parts, stored)
    if producer != model:
        return None
    return Reasoning(tuple(items), tuple(ids))


def _check_item(item: Mapping[str, Any], what: str) -> None:
    if (
        item.get("type") != "reasoning"
        or not isinstance(item.get("id"), str)
        or not item["id"]
        or not isinstance(item.get("summary"), list)
        or not keepable([item])
    ):
        raise HistoryReplayError(
            f"{what} must be a reasoning item with an id, a summary and its encrypted_content, "
            f"as the adapter stored it; restore the message, or {REMEDY}"
        )
