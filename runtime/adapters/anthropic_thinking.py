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
from agentgen.runtime.model_client import ModelError, ToolChoice

__all__ = [
    "FORCED_TOOL_USE_REFUSED",
    "THINKING_KEY",
    "THINKING_KINDS",
    "THINKING_MODEL_KEY",
    "read_thinking",
    "refuse_forced_tool_use",
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


#: The thinking types the API documents as refused with a tool choice that forces tool use
#: (``any``, or a named tool): extended thinking ("Tool use with thinking only supports
#: tool_choice auto or none"; the API answers 400 "Thinking may not be enabled when tool_choice
#: forces tool use"). Adaptive thinking is left out: some models refuse it with a forced choice
#: and some take it, and which do is not documented, so only the API's answer can say.
FORCED_TOOL_USE_REFUSED = frozenset({"enabled"})


def refuse_forced_tool_use(
    provider: str, model: str, thinking: Mapping[str, Any] | None, choice: ToolChoice
) -> None:
    """Refuse, before sending, a request whose ``thinking`` configuration the API refuses with
    its tool ``choice``: the answer would be a 400 every time, which no retry gets past, so a
    permanent :class:`ModelError` saying what to change instead."""
    if thinking is None or thinking.get("type") not in FORCED_TOOL_USE_REFUSED:
        return
    if choice.mode == "any":
        forced = "tool choice 'any' (some tool must be called)"
    elif choice.mode == "tool":
        forced = f"tool choice forcing tool {choice.name!r}"
    else:
        return
    raise ModelError(
        f"{provider}: the request for model {model!r} has {forced} and the client's thinking "
        f"{dict(thinking)!r} (AnthropicMessagesModel(thinking=...)), which the API refuses: "
        "extended thinking goes only with tool choice 'auto' or 'none' (it answers 400 "
        '"Thinking may not be enabled when tool_choice forces tool use"). Ask with tool choice '
        "'auto' (the model may then answer without calling a tool), or send the requests that "
        "force a tool through a client with thinking={'type': 'disabled'}"
    )


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
