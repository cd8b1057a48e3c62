"""Encoding a transcript as Responses API input, with its tool search records.

Historical search calls and outputs are replayed where they happened, and validated every
time: each call ID once, every output answering an earlier unanswered call, no call left
unanswered. Historical definitions explain past calls, but only current consumption and
policy may authorise new ones, so a loaded definition that is no longer permitted, or that
changed since it was loaded, is left out of the *encoded* output (the stored transcript is not
touched; an output with no tools left is valid). Calls replay with the namespace they were
made with; a call to a dynamically loaded tool that lacks a namespace the provider requires is
refused with the remedy, never patched.

Reasoning items a message kept go back where they were, with the output-item IDs of the
message's items, to the model that produced them; to another model, and for messages that
kept none, items go without their IDs (see :mod:`.openai_reasoning`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentgen.runtime.adapters.anchors import describe, interleave
from agentgen.runtime.adapters.errors import HistoryReplayError, MissingNamespaceHistoryError
from agentgen.runtime.adapters.history import REMEDY, check_history, require_records
from agentgen.runtime.adapters.names import NameMap, provider_name
from agentgen.runtime.adapters.openai_reasoning import read_reasoning
from agentgen.runtime.adapters.openai_search import (
    METADATA_KEY,
    LoadedTool,
    SearchMetadata,
    parse_search_call,
    parse_search_output,
)
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart

__all__ = ["Platform", "Replay", "assistant_message", "encode_history", "output_message"]

Platform = Literal["openai", "bedrock"]

_COMPARED_FUNCTION_FIELDS = ("name", "description", "parameters", "strict")


@dataclass
class Replay:
    """The encoded input and what the history has loaded, for checking new calls."""

    input: list[dict[str, Any]] = field(default_factory=list)
    #: Namespaces loaded by retained historical outputs: new calls may use them.
    namespaces: set[str] = field(default_factory=set)
    #: Bare functions loaded by retained historical outputs (older transcripts).
    bare: set[str] = field(default_factory=set)
    #: Every historical search call ID, so that new calls cannot reuse one.
    search_call_ids: set[str] = field(default_factory=set)
    #: Every historical tool call ID, so that new calls cannot reuse one.
    call_ids: frozenset[str] = frozenset()


def assistant_message(part: TextPart) -> dict[str, Any]:
    """An assistant text as input, with the ``phase`` it was given (the API asks for it back:
    dropping it can degrade the model's performance)."""
    item: dict[str, Any] = {"type": "message", "role": "assistant", "content": part.text}
    if part.phase is not None:
        item["phase"] = part.phase
    return item


def output_message(part: TextPart, item_id: str) -> dict[str, Any]:
    """An assistant text as the output message it was, with its item ID: the form a message
    takes when the reasoning item before it goes back too (the API pairs them by that ID)."""
    item: dict[str, Any] = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": part.text, "annotations": []}],
    }
    if part.phase is not None:
        item["phase"] = part.phase
    return item


def _retained(loaded: LoadedTool, current: Mapping[str, dict[str, Any]]) -> bool:
    """Whether a historical definition is still permitted and unchanged."""
    now = current.get(loaded.name)
    if now is None:
        return False
    if loaded.form == "namespace":
        return loaded.entry == now
    function = now["tools"][0]
    return all(loaded.entry.get(key) == function.get(key) for key in _COMPARED_FUNCTION_FIELDS)


class _Encoder:
    def __init__(
        self,
        provider: str,
        names: NameMap,
        current: Mapping[str, dict[str, Any]],
        platform: Platform,
        eager: Collection[str],
        model: str,
    ) -> None:
        self.provider = provider
        self.model = model
        self.names = names
        self.current = current
        self.platform = platform
        self.eager = frozenset(eager)
        self.replay = Replay()
        self.unresolved: dict[str, str] = {}
        # How each tool was last loaded by search in the history, retained or not.
        self.loaded_as: dict[str, str] = {}

    def message(self, index: int, message: Message) -> None:
        what = f"{self.provider}: {describe(index, message)}"
        stored = message.metadata.get(METADATA_KEY)
        if message.role != "assistant":
            if stored is not None:
                raise HistoryReplayError(
                    f"{what} carries {METADATA_KEY!r} metadata, which only assistant messages have"
                )
            read_reasoning(message, 0, what, self.model)  # refuses any on this message
            self._plain(what, message)
            return
        if stored is None:
            # Tools loaded by earlier searches may be called without a new one.
            loaded = {
                call.tool_id
                for call in message.tool_calls()
                if provider_name(call.tool_id) in self.loaded_as
            }
            require_records(what, message, self.eager | loaded, self.platform == "bedrock")
        meta = (
            SearchMetadata.from_json(stored, message.parts, what)
            if stored is not None
            else SearchMetadata()
        )
        namespaces = dict(meta.namespaces or {})
        stray = set(namespaces) - {call.call_id for call in message.tool_calls()}
        if stray:
            raise HistoryReplayError(
                f"{what} records namespaces for calls it does not hold: {sorted(stray)}"
            )
        native = list(interleave(message.parts, meta.records))
        reasoning = read_reasoning(message, len(native), what, self.model)
        # The output-item IDs go back only with the reasoning items they pair with.
        ids = reasoning.ids if reasoning is not None else (None,) * len(message.parts)
        thoughts = reasoning.items if reasoning is not None else ()
        # Told apart from search records by identity: a search record that claims to be a
        # reasoning item is still refused as one.
        mine = {id(item) for _, item in thoughts}
        index = 0
        for element in interleave(native, thoughts):
            if isinstance(element, dict) and id(element) in mine:
                self.replay.input.append(element)
            elif isinstance(element, dict):
                self._record(what, element, with_id=reasoning is not None)
            elif isinstance(element, TextPart):
                item_id, index = ids[index], index + 1
                if item_id is not None:
                    self.replay.input.append(output_message(element, item_id))
                elif element.text:
                    self.replay.input.append(assistant_message(element))
            elif isinstance(element, ToolCallPart):
                item_id, index = ids[index], index + 1
                self._call(what, element, namespaces.get(element.call_id), item_id)
            else:
                raise HistoryReplayError(
                    f"{what} holds a tool result; results belong in a 'tool' message"
                )
        if stored is not None:
            SearchMetadata.verify(stored, message.parts, what)

    def _plain(self, what: str, message: Message) -> None:
        if message.role == "tool":
            for part in message.parts:
                if not isinstance(part, ToolResultPart):
                    raise HistoryReplayError(f"{what} may only hold tool results")
                item = {"type": "function_call_output", "call_id": part.call_id}
                self.replay.input.append({**item, "output": part.content})
            return
        if any(not isinstance(part, TextPart) for part in message.parts):
            raise HistoryReplayError(f"{what} may only hold text")
        self.replay.input.append({"type": "message", "role": message.role, "content": message.text})

    def _record(self, what: str, item: dict[str, Any], *, with_id: bool) -> None:
        kind = item.get("type")
        if kind == "tool_search_call":
            call = parse_search_call(item, what, stored=True)
            if call.call_id in self.replay.search_call_ids:
                raise HistoryReplayError(
                    f"{what}: tool search call ID {call.call_id!r} appears twice in the history"
                )
            self.replay.search_call_ids.add(call.call_id)
            self.unresolved[call.call_id] = what
            # Without its output-item ID unless the reasoning items of its message go back
            # too: the API refuses an item ID replayed without its reasoning item.
            sent = {k: v for k, v in call.record.items() if with_id or k != "id"}
            self.replay.input.append(sent)
        elif kind == "tool_search_output":
            output = parse_search_output(item, what)
            if self.unresolved.pop(output.call_id, None) is None:
                raise HistoryReplayError(
                    f"{what}: tool_search_output {output.call_id!r} has no earlier unanswered "
                    "tool_search_call"
                )
            kept = []
            for loaded in output.tools:
                self.loaded_as[loaded.name] = loaded.form
                if _retained(loaded, self.current):
                    kept.append(loaded.entry)
                    namespaced = loaded.form == "namespace"
                    (self.replay.namespaces if namespaced else self.replay.bare).add(loaded.name)
            self.replay.input.append({**item, "tools": kept})
        else:
            raise HistoryReplayError(f"{what}: unsupported tool search record type {kind!r}")

    def _call(
        self, what: str, part: ToolCallPart, namespace: str | None, item_id: str | None
    ) -> None:
        name = self.names.add(part.tool_id)
        item: dict[str, Any] = {
            "type": "function_call",
            "call_id": part.call_id,
            "name": name,
            "arguments": part.arguments,
        }
        if item_id is not None:
            item["id"] = item_id
        if namespace is not None:
            if namespace != name:
                raise HistoryReplayError(
                    f"{what}: call {part.call_id!r} to {part.tool_id!r} carries namespace "
                    f"{namespace!r}, but loaded tools live in a namespace named after them "
                    f"({name!r}); {REMEDY}"
                )
            if name not in self.loaded_as:
                raise HistoryReplayError(
                    f"{what}: call {part.call_id!r} to {part.tool_id!r} was made in namespace "
                    f"{namespace!r}, which no search output kept in the transcript declares "
                    "(the exchange whose search loaded it was dropped, by compact() for "
                    "instance): compact from an earlier exchange, or start a new conversation"
                )
            item["namespace"] = namespace
        else:
            form = self.loaded_as.get(name)
            # A plain call to a tool this request declares in a namespace is looked up in the
            # default namespace, where it is not; Bedrock also rejects plain calls to loaded
            # bare functions.
            if (form == "namespace" and name in self.replay.namespaces) or (
                form == "function" and self.platform == "bedrock"
            ):
                where = "Bedrock rejects" if self.platform == "bedrock" else "the API rejects"
                raise MissingNamespaceHistoryError(
                    f"{what}: call {part.call_id!r} to dynamically loaded tool {part.tool_id!r} "
                    f"has no namespace, which {where} on replay; {REMEDY}"
                )
        self.replay.input.append(item)

    def finish(self) -> Replay:
        if self.unresolved:
            call_id, what = next(iter(self.unresolved.items()))
            raise HistoryReplayError(
                f"{what}: tool_search_call {call_id!r} has no tool_search_output; the "
                f"transcript lost part of an exchange: {REMEDY}"
            )
        return self.replay


def encode_history(
    provider: str,
    messages: Sequence[Message],
    names: NameMap,
    current: Mapping[str, dict[str, Any]],
    platform: Platform,
    eager: Collection[str] = (),
    *,
    model: str,
) -> Replay:
    """Encode ``messages`` as input items, after the checks every adapter makes
    (:mod:`.history`).

    ``current`` maps the provider name of every tool the request permits to the namespace
    entry a search would load for it now; historical definitions equal to it are kept.
    ``eager`` are the IDs of the tools the request sends up front (callable without a search).
    Historical tool IDs are added to ``names``, so that a removed tool still named in the
    history cannot share a provider name with a current one. ``model`` is the request's: the
    reasoning items a message kept (and its output-item IDs) go back only to the model that
    produced them (:mod:`.openai_reasoning`).
    """
    call_ids = check_history(provider, messages)
    encoder = _Encoder(provider, names, current, platform, eager, model)
    for index, message in enumerate(messages):
        encoder.message(index, message)
    replay = encoder.finish()
    replay.call_ids = call_ids
    return replay
