"""Encoding a transcript as Claude messages, with its hosted search blocks.

Search blocks are replayed verbatim, after checking that each result answers a search call of
the same message, that call IDs are unique and that every referenced tool has a saved
definition. The references are expanded by the API from the current request's ``tools``, so:

* a referenced tool that is still offered must have the same definition as when it was found,
  otherwise the model would see a different tool under the old name: that is refused with
  :class:`~agentgen.runtime.model_client.ToolSearchUnsupportedError` naming the tool (a by-reference
  change cannot say "the old definition before, the new one after");
* a referenced tool that is no longer offered is sent again, deferred, with its saved
  definition, and withdrawn by a ``tool_removal`` change; one that comes back is announced by a
  ``tool_addition``. Changes already in the transcript are replayed where they were made.

The transcript is never reset or trimmed to avoid any of this. Thinking blocks a message kept
go back where they were, unchanged, to the model that produced them only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgen.runtime.adapters.anchors import describe, interleave
from agentgen.runtime.adapters.anthropic_search import (
    METADATA_KEY,
    Change,
    Definition,
    SearchMetadata,
    change_message,
    parse_search_result,
    parse_server_tool_use,
)
from agentgen.runtime.adapters.anthropic_thinking import THINKING_KINDS, read_thinking
from agentgen.runtime.adapters.errors import HistoryReplayError, blank, call_arguments
from agentgen.runtime.adapters.history import check_history, require_records
from agentgen.runtime.adapters.names import NameMap, provider_name
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import ModelError, ToolSearchUnsupportedError

__all__ = ["Replay", "encode_history", "validate_blocks"]


@dataclass
class Replay:
    """The encoded conversation and what it implies for this request's tools."""

    system: list[str] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    #: Whether the history holds hosted search blocks (the search tool must then be sent).
    searched: bool = False
    #: Whether the history already holds availability changes.
    changed: bool = False
    #: Referenced tools no longer offered: re-sent deferred with their saved definitions.
    resent: list[Definition] = field(default_factory=list)
    #: Changes this request must add (before the model's reply), sorted by tool name.
    changes: tuple[Change, ...] = ()
    #: Every historical tool call ID, so that new calls cannot reuse one.
    call_ids: frozenset[str] = frozenset()


def validate_blocks(
    blocks: Sequence[Mapping[str, Any]], what: str, *, stored: bool
) -> tuple[list[str], list[str]]:
    """Check one message's search blocks; return the names they found and the unanswered calls.

    Each result must answer an earlier call of the same message, and call IDs are unique.
    Unanswered calls are returned rather than refused, since the caller words that case: in a
    stored message it is a broken transcript, in a live reply a paused turn.
    """
    error = HistoryReplayError if stored else ModelError
    open_calls: list[str] = []
    seen: set[str] = set()
    referenced: list[str] = []
    for block in blocks:
        if block.get("type") == "server_tool_use":
            block_id = parse_server_tool_use(block, what, stored=stored)
            if block_id in seen:
                raise error(f"{what}: server_tool_use ID {block_id!r} appears twice")
            seen.add(block_id)
            open_calls.append(block_id)
        elif block.get("type") == "tool_search_tool_result":
            tool_use_id, names = parse_search_result(block, what, stored=stored)
            if tool_use_id not in open_calls:
                raise error(
                    f"{what}: tool_search_tool_result {tool_use_id!r} answers no earlier "
                    "server_tool_use of the same message"
                )
            open_calls.remove(tool_use_id)
            referenced.extend(name for name in names if name not in referenced)
        else:
            raise error(f"{what}: unsupported search record type {block.get('type')!r}")
    return referenced, open_calls


class _Encoder:
    def __init__(self, provider: str, names: NameMap, eager: Collection[str], model: str) -> None:
        self.provider = provider
        self.model = model
        self.names = names
        self.eager = frozenset(eager)
        self.replay = Replay()
        self.definitions: dict[str, Definition] = {}
        self.removed: set[str] = set()
        self.started = False

    def _append(self, role: str, content: list[dict[str, Any]]) -> None:
        # Tool results and the user's next words form one user turn.
        last = self.replay.messages[-1] if self.replay.messages else None
        if role == "user" and last is not None and last["role"] == "user":
            last["content"].extend(content)
        else:
            self.replay.messages.append({"role": role, "content": content})

    def message(self, index: int, message: Message) -> None:
        what = f"{self.provider}: {describe(index, message)}"
        stored = message.metadata.get(METADATA_KEY)
        if message.role != "assistant" and stored is not None:
            raise HistoryReplayError(
                f"{what} carries {METADATA_KEY!r} metadata, which only assistant messages have"
            )
        if message.role != "assistant":
            read_thinking(message, 0, what, self.model)  # refuses any on this message
        if message.role == "system":
            if any(not isinstance(part, TextPart) for part in message.parts):
                raise HistoryReplayError(f"{what} may only hold text")
            if self.started:
                self.replay.messages.append({"role": "system", "content": message.text})
            else:
                self.replay.system.append(message.text)
            return
        self.started = True
        if message.role == "user":
            if any(not isinstance(part, TextPart) for part in message.parts):
                raise HistoryReplayError(f"{what} may only hold text")
            if blank(message.text):
                raise HistoryReplayError(
                    f"{what} holds no text (or only whitespace), which Claude rejects: give it "
                    "text or remove it"
                )
            self._append("user", [{"type": "text", "text": message.text}])
        elif message.role == "tool":
            self._append("user", [self._result(what, part) for part in message.parts])
        else:
            self._assistant(what, message, stored)

    def _result(self, what: str, part: object) -> dict[str, Any]:
        if not isinstance(part, ToolResultPart):
            raise HistoryReplayError(f"{what} may only hold tool results")
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": part.call_id,
            "content": part.content,
        }
        if part.is_error:
            block["is_error"] = True
        return block

    def _assistant(self, what: str, message: Message, stored: object) -> None:
        if stored is None:
            # Tools found by earlier searches may be called without a new one.
            loaded = {
                call.tool_id
                for call in message.tool_calls()
                if provider_name(call.tool_id) in self.definitions
            }
            require_records(what, message, self.eager | loaded)
        meta = (
            SearchMetadata.from_json(stored, message.parts, what)
            if stored is not None
            else SearchMetadata()
        )
        if meta.changes:
            self._apply(what, meta.changes)
            self.replay.messages.append(change_message(meta.changes))
            self.replay.changed = True
        saved: dict[str, Definition] = {}
        for definition in meta.definitions:
            if definition.name in saved:
                raise HistoryReplayError(f"{what} saves two definitions of {definition.name!r}")
            saved[definition.name] = definition
        blocks = [block for _, block in meta.records]
        referenced, unanswered = validate_blocks(blocks, what, stored=True)
        if unanswered:
            raise HistoryReplayError(
                f"{what}: hosted search calls {unanswered} have no result (a paused turn, which "
                "is not continued); remove that exchange from the transcript"
            )
        for name in referenced:
            found = saved.get(name)
            if found is None:
                raise HistoryReplayError(
                    f"{what}: a search found {name!r}, but the message saved no definition of "
                    "it, so the reference cannot be replayed; remove that exchange"
                )
            self._remember(found)
        self.replay.searched = self.replay.searched or bool(meta.records)
        content: list[dict[str, Any]] = []
        native = list(interleave(message.parts, meta.records))
        thoughts = read_thinking(message, len(native), what, self.model)
        for element in interleave(native, thoughts):
            if isinstance(element, dict):
                content.append(element)
            elif isinstance(element, TextPart):
                # Claude rejects text blocks of only whitespace (which it writes at times before
                # a call); they say nothing, so they are not sent.
                if not blank(element.text):
                    content.append({"type": "text", "text": element.text})
            elif isinstance(element, ToolCallPart):
                content.append(self._call(what, element))
            else:
                raise HistoryReplayError(
                    f"{what} holds a tool result; results belong in a 'tool' message"
                )
        if isinstance(stored, Mapping):
            SearchMetadata.verify(stored, message.parts, what)
        if all(block["type"] in THINKING_KINDS for block in content):
            raise HistoryReplayError(
                f"{what} holds no call and no text but whitespace (an empty reply, which the "
                "adapters refuse since), and Claude rejects a message without content: remove "
                "it from the transcript"
            )
        self._append("assistant", content)

    def _call(self, what: str, part: ToolCallPart) -> dict[str, Any]:
        arguments = call_arguments(what, part)
        name = self.names.add(part.tool_id)
        return {"type": "tool_use", "id": part.call_id, "name": name, "input": arguments}

    def _remember(self, definition: Definition) -> None:
        earlier = self.definitions.setdefault(definition.name, definition)
        if earlier != definition:
            raise ToolSearchUnsupportedError(
                f"{self.provider}: searches in this transcript found {definition.name!r} with "
                f"two different definitions ({earlier.tool_id!r} and {definition.tool_id!r}); "
                "the conversation cannot be replayed: start a new one or remove the exchange "
                "that found the older definition"
            )

    def _apply(self, what: str, changes: Sequence[Change]) -> None:
        for change in changes:
            known = change.name in self.definitions
            if change.kind == "tool_removal":
                if not known or change.name in self.removed:
                    raise HistoryReplayError(
                        f"{what}: tool_removal of {change.name!r}, which no earlier search found "
                        "or which was already removed"
                    )
                self.removed.add(change.name)
            else:
                if change.name not in self.removed:
                    raise HistoryReplayError(
                        f"{what}: tool_addition of {change.name!r}, which was not removed before"
                    )
                self.removed.discard(change.name)

    def finish(self, current: Mapping[str, Definition], *, frozen: bool = False) -> Replay:
        changes: list[Change] = []
        for name, old in sorted(self.definitions.items()):
            now = current.get(name)
            if now is None:
                self.replay.resent.append(old)
                if name not in self.removed and not frozen:
                    changes.append(Change("tool_removal", name))
                continue
            if now != old:
                raise ToolSearchUnsupportedError(
                    f"{self.provider}: tool {now.tool_id!r} is offered as {name!r} with another "
                    f"definition than the one an earlier search found (then {old.tool_id!r}); "
                    "a changed definition under a name the conversation already loaded cannot "
                    "be replayed. Restore the old definition, start a new conversation, or "
                    "remove the exchange that found it"
                )
            if name in self.removed:
                changes.append(Change("tool_addition", name))
        self.replay.changes = tuple(changes)
        return self.replay


def encode_history(
    provider: str,
    messages: Sequence[Message],
    names: NameMap,
    current: Mapping[str, Definition],
    *,
    frozen: bool = False,
    eager: Collection[str] = (),
    model: str,
) -> Replay:
    """Encode ``messages`` and work out the tools and changes they need, after the checks
    every adapter makes (:mod:`.history`).

    ``current`` maps the provider name of every tool this request offers to its definition;
    ``eager`` are the IDs of the tools it offers without ``defer_loading``.
    Historical tool IDs are added to ``names``, so that a removed tool still called in the
    history cannot share a provider name with a current one. ``frozen`` (tool choice
    ``none``: nothing can be called or found) keeps tools found earlier available, deferred,
    without announcing any change: the conversation is only being answered. ``model`` is the
    request's: the thinking blocks a message kept go back only to the model that produced them
    (:mod:`.anthropic_thinking`).
    """
    call_ids = check_history(provider, messages)
    encoder = _Encoder(provider, names, eager, model)
    for index, message in enumerate(messages):
        encoder.message(index, message)
    replay = encoder.finish(current, frozen=frozen)
    replay.call_ids = call_ids
    return replay
