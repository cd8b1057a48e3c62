"""What every adapter checks in a transcript before encoding it for a provider.

A stored conversation is replayed to the provider on every request, and a provider that gets
a broken one either rejects it with an error far from its cause or, worse, accepts it and
shows the model something that did not happen. So before encoding, every adapter checks:

* order and pairing (:func:`check_history`): the conversation starts with the user; every
  call has an ID no other call has; every call is answered, once, by a result naming the
  same tool, before the conversation goes on; no result answers a call that was not made;
  and no part holds text that is not valid Unicode, which no SDK can send;
* record integrity (:func:`seal` / :func:`verify`): the search records an adapter stores
  with an assistant message carry a fingerprint of them and of the message's calls, so a
  call switched to another tool or a saved definition changed after storing is found;
* records present (:func:`require_records`): a call to a tool that only a search could have
  loaded, in a message whose search records are gone, cannot be replayed as it happened.

Provider specifics (record shapes, namespaces, tool changes) stay in each adapter's replay
module. Every refusal says what is wrong and what to do; nothing is patched or reset.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from agentgen.runtime.adapters.anchors import describe, require_mapping
from agentgen.runtime.adapters.errors import (
    BrokenHistoryError,
    DuplicateCallIdError,
    HistoryReplayError,
    MissingSearchRecordsError,
    TamperedHistoryError,
    broken_reply,
)
from agentgen.runtime.contracts.canonical import canonical_bytes
from agentgen.runtime.contracts.json_values import find_lone_surrogate, lone_surrogate
from agentgen.runtime.messages import Message, Part, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import ModelError
from agentgen.runtime.visible import quoted

__all__ = [
    "FINGERPRINT_KEY",
    "REMEDY",
    "check_history",
    "check_system",
    "claim_call_id",
    "read_sealed",
    "require_records",
    "require_unicode",
    "seal",
    "verify",
]

#: What a user can do about a transcript that cannot be replayed.
REMEDY = "start a new conversation, or remove that whole exchange from the transcript"

#: The key of the fingerprint inside an adapter's stored search records.
FINGERPRINT_KEY = "fingerprint"


def check_history(provider: str, messages: Sequence[Message]) -> frozenset[str]:
    """Check order and pairing; return every tool-call ID of the transcript (new calls may
    not reuse one)."""
    calls: dict[str, int] = {}
    answered: set[str] = set()
    pending: dict[str, tuple[str, int]] = {}
    started = False
    for index, message in enumerate(messages):
        what = f"{provider}: {describe(index, message)}"
        _require_unicode_parts(what, message)
        if message.role != "system" and not started:
            started = True
            if message.role != "user":
                raise BrokenHistoryError(
                    f"{what}: a conversation starts with a user message (after any system "
                    f"messages), not with a {message.role} message; the transcript lost its "
                    f"beginning: {REMEDY}"
                )
        if message.role == "tool":
            for part in message.parts:
                if isinstance(part, ToolResultPart):
                    _answer(what, part, calls, answered, pending)
            continue
        if pending:
            call_id, (tool_id, at) = next(iter(pending.items()))
            raise BrokenHistoryError(
                f"{what} comes before the result of call {call_id!r} to {tool_id!r} (message "
                f"{at}): results were dropped or messages reordered; {REMEDY}"
            )
        if message.role == "assistant":
            for call in message.tool_calls():
                _call(what, index, call, calls, pending)
    if pending:
        call_id, (tool_id, at) = next(iter(pending.items()))
        raise BrokenHistoryError(
            f"{provider}: the transcript ends before the result of call {call_id!r} to "
            f"{tool_id!r} (message {at}); a conversation continues only once every call is "
            f"answered: add the results, or {REMEDY}"
        )
    return frozenset(calls)


def _require_unicode_parts(what: str, message: Message) -> None:
    """Refuse a message whose parts hold text that is not valid Unicode (a lone UTF-16
    surrogate: a tool result or user text cut in the middle of an emoji): the SDKs encode the
    request as UTF-8 and would fail with a bare ``UnicodeEncodeError`` naming nothing."""
    for position, part in enumerate(message.parts):
        for field in dataclasses.fields(part):
            value = getattr(part, field.name)
            found = lone_surrogate(value) if isinstance(value, str) else None
            if found is not None:
                raise HistoryReplayError(
                    f"{what}: part {position} ({part.kind}) holds text that is not valid "
                    f"Unicode in its {field.name} (a lone UTF-16 surrogate, {found[1]}, such "
                    "as half of an emoji), which cannot be sent to any provider: correct that "
                    f"text (the code that built the message), or {REMEDY}"
                )


def check_system(provider: str, model: str, system: str | None) -> None:
    """Refuse a request whose system text is not valid Unicode (a lone UTF-16 surrogate), as
    :func:`check_history` refuses such text in the transcript: the SDKs encode the request as
    UTF-8 and would fail with a bare ``UnicodeEncodeError`` naming nothing."""
    found = lone_surrogate(system) if system is not None else None
    if found is not None:
        raise ModelError(
            f"{provider}: the system text of the request for model {model!r} is not valid "
            f"Unicode (a lone UTF-16 surrogate, {found[1]}, such as half of an emoji), which "
            "cannot be sent to any provider: correct the planner's system text "
            "(ModelPlanner(system=...)) or the code that built it"
        )


def claim_call_id(
    what: str, name: object, call_id: object, field: str, *taken: Collection[str]
) -> str:
    """The call ID of one call in a new reply, refused when it is empty or one an earlier call
    has (any of ``taken``: the transcript's IDs, and those of the reply so far)."""
    if not isinstance(call_id, str) or not call_id or any(call_id in ids for ids in taken):
        problem = "is empty" if not call_id else "an earlier call already has"
        raise DuplicateCallIdError(
            f"{what} calls {quoted(name)} with {field} {quoted(call_id)}, which {problem}; call "
            "IDs must be unique within a conversation, so the reply is refused"
        )
    return call_id


def _call(
    what: str,
    index: int,
    call: ToolCallPart,
    calls: dict[str, int],
    pending: dict[str, tuple[str, int]],
) -> None:
    if not call.call_id:
        raise BrokenHistoryError(f"{what} holds a call to {call.tool_id!r} without a call ID")
    earlier = calls.get(call.call_id)
    if earlier is not None:
        raise BrokenHistoryError(
            f"{what} repeats call ID {call.call_id!r} of message {earlier}; every call has its "
            f"own ID: {REMEDY}"
        )
    calls[call.call_id] = index
    pending[call.call_id] = (call.tool_id, index)


def _answer(
    what: str,
    part: ToolResultPart,
    calls: Mapping[str, int],
    answered: set[str],
    pending: dict[str, tuple[str, int]],
) -> None:
    call_id = part.call_id
    if call_id in pending:
        tool_id, at = pending.pop(call_id)
        if part.tool_id != tool_id:
            raise BrokenHistoryError(
                f"{what} answers call {call_id!r} as a result of {part.tool_id!r}, but message "
                f"{at} called {tool_id!r}; {REMEDY}"
            )
        answered.add(call_id)
    elif call_id in answered:
        raise BrokenHistoryError(f"{what} answers call {call_id!r} a second time; {REMEDY}")
    elif call_id in calls:
        raise BrokenHistoryError(
            f"{what} answers call {call_id!r} of message {calls[call_id]}, but the "
            f"conversation went on in between (messages reordered); {REMEDY}"
        )
    else:
        raise BrokenHistoryError(
            f"{what} answers call {call_id!r}, which no earlier assistant message made (an "
            f"orphan result); {REMEDY}"
        )


# --------------------------------------------------------------------------- integrity


def _fingerprint(parts: Sequence[Part], record: Mapping[str, Any]) -> str:
    body = {
        "parts": len(parts),
        "calls": [[p.call_id, p.tool_id] for p in parts if isinstance(p, ToolCallPart)],
        "record": {key: value for key, value in record.items() if key != FINGERPRINT_KEY},
    }
    return hashlib.sha256(canonical_bytes(body)).hexdigest()


def seal(
    parts: Sequence[Part], record: Mapping[str, Any], what: str = "the model's reply"
) -> dict[str, Any]:
    """The record to store with a message, with the fingerprint of it and of the message's
    calls (their IDs and tools, and where records sit between the parts).

    ``what`` names the reply the records come from: text that is not valid Unicode (a lone
    UTF-16 surrogate, which JSON can spell as ``\\ud83d``) can be neither fingerprinted nor
    stored, and the reply is refused naming where it is.
    """
    try:
        fingerprint = _fingerprint(parts, record)
    except UnicodeEncodeError:
        calls = [[p.call_id, p.tool_id] for p in parts if isinstance(p, ToolCallPart)]
        require_unicode({"calls": calls, "records": record}, what)
        raise  # pragma: no cover - require_unicode found the text UTF-8 cannot encode
    return {**record, FINGERPRINT_KEY: fingerprint}


def require_unicode(value: object, what: str) -> None:
    """Refuse provider output holding text that is not valid Unicode: a lone UTF-16
    surrogate (JSON can spell one, ``\\ud83d``: half of an emoji) can be neither sent back
    nor stored as UTF-8, so the reply is refused naming where it is, rather than failing later
    with a bare ``UnicodeEncodeError``."""
    where = _lone_surrogate(value, "$")
    if where is not None:
        raise broken_reply(
            f"{what} holds text that is not valid Unicode (a lone UTF-16 surrogate, such as "
            f"half of an emoji) at {where}, which can be neither replayed nor stored"
        )


def _lone_surrogate(value: object, root: str) -> str | None:
    """Where the first text in ``value`` that UTF-8 cannot encode is (``$.output[0].text``,
    or the mapping holding a key that cannot), with that text, if any."""
    found = find_lone_surrogate(value)
    if found is None:
        return None
    path = root + "".join(f".{k}" if isinstance(k, str) else f"[{k}]" for k in found.path)
    return f"{path} ({found.text!r})"


def read_sealed(value: object, where: str, version: int, keys: Collection[str]) -> dict[str, Any]:
    """A stored record of this ``version`` with exactly ``keys`` (its fingerprint included),
    before its fields are read; the fingerprint itself is checked by :func:`verify`, once the
    record's shape is known to be right."""
    data = require_mapping(value, where)
    if data.get("version") != version:
        raise HistoryReplayError(
            f"{where} must be version {version}, got {data.get('version')!r} (records stored by "
            f"earlier versions carry no fingerprint): {REMEDY}"
        )
    if set(data) != set(keys):
        raise HistoryReplayError(f"{where} must have exactly the keys {sorted(keys)}")
    return data


def verify(what: str, parts: Sequence[Part], record: Mapping[str, Any]) -> None:
    """Refuse a stored record that no longer matches its message."""
    if record.get(FINGERPRINT_KEY) != _fingerprint(parts, record):
        raise TamperedHistoryError(
            f"{what}: its stored search records do not match the message (their fingerprint "
            "differs): a call was switched to another tool, or a saved definition or search "
            f"record was changed, after the transcript was stored; {REMEDY}"
        )


def require_records(
    what: str, message: Message, callable_without_search: Collection[str], bedrock: bool = False
) -> None:
    """For an assistant message that has none of the adapter's search records: every call
    must be to a tool the model could call without searching (eager now, or loaded by an
    earlier search of the transcript)."""
    for call in message.tool_calls():
        if call.tool_id in callable_without_search:
            continue
        foreign = sorted(key for key in message.metadata if key.endswith(".tool_search"))
        if foreign:  # a conversation held by another adapter: no record was lost
            raise MissingSearchRecordsError(
                f"{what}: call {call.call_id!r} to {call.tool_id!r} was loaded by another "
                f"provider's tool search (the message holds {', '.join(map(repr, foreign))} "
                "records, which this adapter cannot replay): a conversation that used tool "
                "search stays with the provider that ran it; continue it there, or start a "
                "new conversation"
            )
        extra = ", and Bedrock rejects such a call without its namespace" if bedrock else ""
        raise MissingSearchRecordsError(
            f"{what}: call {call.call_id!r} to {call.tool_id!r} has no search records, though "
            f"{call.tool_id!r} is not a tool the model can call without searching: the "
            "message's search metadata was lost (stripped when the transcript was stored?), "
            f"so the call cannot be replayed as it happened{extra}; {REMEDY}"
        )
