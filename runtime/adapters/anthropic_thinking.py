"""Claude's thinking blocks, kept for the later requests of the same model.

With thinking on (asked for with ``AnthropicMessagesModel(thinking=...)``, or on by default on
some models), a reply holds ``thinking`` blocks (text and a ``signature``) and
``redacted_thinking`` blocks (opaque ``data``) before its text and calls. The API wants them
back unchanged on later requests: in a tool loop, the request carrying a call's result is
refused when the assistant turn that made the call does not start with its thinking
("Expected `thinking` or `redacted_thinking`, but found `tool_use`"), and a changed block is
refused by its signature. So a message keeps its blocks exactly as received, where they were.

They go back only to the model that produced them (recorded beside them, under
:data:`THINKING_MODEL_KEY`), as the Converse adapter does with its reasoning: a signature
belongs to the model that wrote it, and another model's thinking is no part of the
conversation a different model continues.

Stored in the assistant message's metadata under :data:`THINKING_KEY`::

    {"version": 1,
     "blocks": [{"at": 0, "block": {"type": "thinking", "thinking": "...", "signature": "..."}},
                {"at": 2, "block": {"type": "redacted_thinking", "data": "..."}}],
     "fingerprint": "<sha-256 of the record and the message's calls>"}

``at`` anchors each block in the message's native order *with* its hosted search blocks (the
parts and records of :data:`~.anthropic_search.METADATA_KEY` interleaved), since Claude may
think before it searches. A record of its own, beside the search records, so that an
agentgen that predates it still reads the message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentgen.runtime.adapters.anchors import Anchored, read_anchored
from agentgen.runtime.adapters.errors import HistoryReplayError
from agentgen.runtime.adapters.history import REMEDY, read_sealed, seal, verify
from agentgen.runtime.messages import Message, Part
from agentgen.runtime.model_client import ModelError

__all__ = [
    "THINKING_KEY",
    "THINKING_KINDS",
    "THINKING_MODEL_KEY",
    "read_thinking",
    "stored_block",
    "to_json",
]

#: The metadata key of a reply's thinking blocks.
THINKING_KEY = "anthropic.thinking"
#: The metadata key of the model ID the request that produced them gave: the only model they
#: are replayed to.
THINKING_MODEL_KEY = "anthropic.thinking_model"
#: The content block types that hold thinking, and the fields each has.
THINKING_KINDS: Mapping[str, frozenset[str]] = {
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}
_VERSION = 1
_KEYS = frozenset({"version", "blocks", "fingerprint"})


def _well_formed(block: Mapping[str, Any]) -> bool:
    fields = THINKING_KINDS.get(str(block.get("type")))
    return (
        fields is not None
        and set(block) == fields
        and all(isinstance(block[key], str) for key in fields)
    )


def stored_block(block: Mapping[str, Any], what: str) -> dict[str, Any]:
    """A reply's thinking block as it is kept: exactly as received. One with other fields than
    the API documents is refused, never trimmed (a changed block fails its signature)."""
    if not _well_formed(block):
        raise ModelError(
            f"{what} holds a {block.get('type')!r} block with fields {sorted(block)}, which this "
            "adapter cannot keep for replay unchanged"
        )
    return dict(block)


def to_json(blocks: Sequence[Anchored], parts: Sequence[Part], what: str) -> dict[str, Any]:
    """The stored form of a reply's blocks, sealed with the fingerprint of it and of ``parts``."""
    record = {"version": _VERSION, "blocks": [{"at": at, "block": b} for at, b in blocks]}
    return seal(parts, record, what)


def read_thinking(message: Message, elements: int, what: str, model: str) -> list[Anchored]:
    """The thinking blocks stored with ``message`` that go back to ``model``, checked: none
    when it has none or another model produced them. ``elements`` is the number of the
    message's parts and search records (where its blocks may sit)."""
    stored = message.metadata.get(THINKING_KEY)
    producer = message.metadata.get(THINKING_MODEL_KEY)
    if stored is None and producer is None:
        return []
    where = f"{what} metadata {THINKING_KEY!r}"
    if message.role != "assistant":
        raise HistoryReplayError(f"{where}: only assistant messages carry thinking")
    if stored is None or not isinstance(producer, str) or not producer:
        raise HistoryReplayError(
            f"{what}: metadata {THINKING_KEY!r} and {THINKING_MODEL_KEY!r} (the model ID that "
            f"produced the thinking) go together, got {THINKING_MODEL_KEY!r} {producer!r}: the "
            f"transcript was changed after it was stored; restore the message, or {REMEDY}"
        )
    data = read_sealed(stored, where, _VERSION, _KEYS)
    blocks = read_anchored(data["blocks"], "block", elements, f"{where}.blocks")
    for position, (_, block) in enumerate(blocks):
        if not _well_formed(block):
            raise HistoryReplayError(
                f"{where}.blocks[{position}].block must be a thinking block (type, thinking, "
                "signature) or a redacted_thinking block (type, data), as the adapter stored "
                f"it; restore the message, or {REMEDY}"
            )
    verify(where, message.parts, stored)
    return blocks if producer == model else []
