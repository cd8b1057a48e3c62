"""A planning answer's tool call arguments, written once instead of three times.

A planning activity answers with ``Planned``: the model's reply (its tool calls in its parts),
and a decision per call, which holds the call again and, when accepted, the call's checkpoint
(``AcceptedCall.to_json()``), which holds it a third time. Arguments are the model's JSON text
and can be large (a document to write, a file to patch): written three times, a call with
about 700 KB of arguments already made the answer exceed Temporal's 2 MiB payload limit.

So when the calls' arguments are large, each decision is written as the index of its call in
the reply's parts (``"part"``), with the checkpoint without its call; the reader puts both back
from the part, and the workflow sees the same ``Planned`` as before. Answers whose arguments
are small (:data:`SHARED_FROM` characters together, at most twice that wasted) are written
exactly as the release before wrote them, so that its workers read every payload of a run
whose calls carry nothing large; a worker of that release refuses a shared answer
(``Decision has no fields ['part']``), so workers of both releases must not poll one queue at
once (arguments between the threshold and about 700 KB it did send). Both forms are read, so
histories recorded before replay as they ran.

Both functions work on the JSON the data converter writes for ``Planned`` (its decisions as
``{"call", "accepted", "refused"}``, checkpoints as ``{"json": ...}`` or ``{"exact": ...}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentgen.runtime.contracts.codecs import decode_exact, encode_exact

__all__ = ["SHARED_FROM", "share", "unshare"]

#: The characters of arguments (a reply's calls together) from which they are written once.
SHARED_FROM = 16 * 1024

#: The fields of a tool call part that a checkpoint's ``call`` holds.
_CALL_FIELDS = ("call_id", "tool_id", "arguments")


def share(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a ``Planned`` in JSON) with each decision referring to its call in the reply
    when the arguments are large; as it is otherwise, or when a decision's call is not in the
    reply as it is (every part of the answer is then written as it was)."""
    decisions = data.get("decisions") or []
    if sum(len(d["call"]["arguments"]) for d in decisions) < SHARED_FROM:
        return data
    parts = data["message"]["parts"]
    shared = []
    for decision in decisions:
        index = _index(parts, decision["call"])
        accepted = decision["accepted"]
        if index is None or (accepted is not None and _own_call(accepted) != _call(parts[index])):
            return data
        shared.append(
            {"part": index, "accepted": _without_call(accepted), "refused": decision["refused"]}
        )
    return {**data, "decisions": shared}


def unshare(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """``data`` (a ``Planned`` in JSON, in either form) with every decision holding its call
    and its checkpoint's call, as :func:`share` found them."""
    decisions = data.get("decisions") or []
    if not any("part" in d for d in decisions):
        return data
    parts = data["message"]["parts"]
    whole = []
    for position, decision in enumerate(decisions):
        if "part" not in decision:
            whole.append(decision)
            continue
        rest = {k: v for k, v in decision.items() if k != "part"}
        index = decision["part"]
        if not (type(index) is int and 0 <= index < len(parts)) or (
            parts[index].get("kind") != "tool_call"
        ):
            raise ValueError(
                f"decision {position} refers to part {index!r} of the reply, which is not "
                "one of its tool calls"
            )
        part = parts[index]
        accepted = rest.get("accepted")
        whole.append(
            {
                "call": part,
                "accepted": _with_call(accepted, _call(part)) if accepted is not None else None,
                "refused": rest.get("refused"),
            }
        )
    return {**data, "decisions": whole}


def _index(parts: list[dict[str, Any]], call: dict[str, Any]) -> int | None:
    for index, part in enumerate(parts):
        if part == call:
            return index
    return None


def _call(part: Mapping[str, Any]) -> dict[str, Any]:
    return {name: part[name] for name in _CALL_FIELDS}


def _own_call(accepted: Mapping[str, Any]) -> Any:
    checkpoint = _checkpoint(accepted)
    return checkpoint.get("call") if isinstance(checkpoint, dict) else None


def _checkpoint(accepted: Mapping[str, Any]) -> Any:
    if "exact" in accepted:
        return decode_exact(accepted["exact"])
    return accepted.get("json")


def _without_call(accepted: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if accepted is None:
        return None
    checkpoint = {k: v for k, v in _checkpoint(accepted).items() if k != "call"}
    return {"exact": encode_exact(checkpoint)} if "exact" in accepted else {"json": checkpoint}


def _with_call(accepted: Mapping[str, Any], call: dict[str, Any]) -> Mapping[str, Any]:
    checkpoint = _checkpoint(accepted)
    if not isinstance(checkpoint, dict) or "call" in checkpoint:
        raise ValueError("a shared decision's checkpoint must be an object without its call")
    whole = {"call": call, **checkpoint}
    return {"exact": encode_exact(whole)} if "exact" in accepted else {"json": whole}
