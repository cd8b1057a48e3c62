"""Conversation messages and the metadata they carry.

Provider-native records (tool search calls and outputs, hosted search blocks) live in message
metadata, never in a separate store of loaded tools: storing or compacting a transcript keeps
them as long as it keeps the messages (``to_json`` / ``from_json`` round-trip everything).
"""

from __future__ import annotations

import copy
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from agentgen.runtime.visible import quoted
from agentgen.runtime.wire_fields import ADDED

__all__ = [
    "PHASES",
    "Message",
    "Part",
    "Phase",
    "Role",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
]

Role = Literal["system", "user", "assistant", "tool"]
#: How a provider labels assistant text (OpenAI Responses' ``phase``): ``commentary`` is said
#: on the way (before a search or a call), ``final_answer`` is the answer.
Phase = Literal["commentary", "final_answer"]
PHASES: tuple[Phase, ...] = ("commentary", "final_answer")


@dataclass(frozen=True)
class TextPart:
    """One block of text (one provider text block or output message).

    ``phase`` is the provider's own label of assistant text, kept so that the adapter that got
    it sends it back on replay (OpenAI asks for that); ``None`` when the provider gave none.
    """

    text: str
    kind: Literal["text"] = "text"
    phase: Phase | None = field(default=None, metadata=ADDED)


@dataclass(frozen=True)
class ToolCallPart:
    """A call the model made: ``arguments`` is the JSON text the model produced."""

    call_id: str
    tool_id: str
    arguments: str
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class ToolResultPart:
    """A tool's answer to a call: ``content`` is JSON text (an error object when ``is_error``)."""

    call_id: str
    tool_id: str
    content: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"


Part = TextPart | ToolCallPart | ToolResultPart
_PARTS = (TextPart, ToolCallPart, ToolResultPart)
_ROLES = ("system", "user", "assistant", "tool")


def _frozen(metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    # A deep copy: changing the dict a message was built from (or the JSON it wrote) must not
    # change the stored records.
    return MappingProxyType(copy.deepcopy(dict(metadata)))


@dataclass(frozen=True)
class Message:
    role: Role
    parts: tuple[Part, ...]
    #: JSON-serialisable provider records keyed by adapter (e.g. OpenAI tool search items).
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise ValueError(f"message role {self.role!r} is not one of {', '.join(_ROLES)}")
        if not isinstance(self.parts, tuple) or not all(
            isinstance(part, _PARTS) for part in self.parts
        ):
            raise TypeError(
                f"Message({self.role!r}, ...): parts must be a tuple of TextPart, ToolCallPart "
                f"or ToolResultPart, not {reprlib.repr(self.parts)}; for text, pass "
                "(TextPart(text),) or use Message.user(text)"
            )
        object.__setattr__(self, "metadata", _frozen(self.metadata))

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (TextPart(text),))

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", (TextPart(text),))

    @property
    def text(self) -> str:
        """The message's text: its text parts, a blank line between two of them, leaving out
        those the provider labelled commentary when others remain (the run's final text and
        a structured answer are the answer, not what the model said on the way).

        Each part is a separate block (a provider text block, an output message, a search
        round's text): glued together, the last sentence of one would run into the next.
        """
        texts = [p for p in self.parts if isinstance(p, TextPart) and p.text]
        answer = [p for p in texts if p.phase != "commentary"] or texts
        return "\n\n".join(p.text for p in answer)

    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    def with_metadata(self, key: str, value: Any) -> Message:
        return Message(self.role, self.parts, {**self.metadata, key: value})

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "parts": [_part_json(p) for p in self.parts],
            "metadata": copy.deepcopy(dict(self.metadata)),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Message:
        if not isinstance(data, Mapping):
            raise ValueError(f"a message must be a JSON object, not {type(data).__name__}")
        unknown = set(data) - {"role", "parts", "metadata"}
        if unknown:
            raise ValueError(f"message has unknown fields: {sorted(unknown)}")
        missing = {"role", "parts"} - set(data)
        if missing:
            raise ValueError(f"message is missing fields: {sorted(missing)}")
        role = data["role"]
        if role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"message role {role!r} is not one of system, user, assistant, tool")
        parts, metadata = data["parts"], data.get("metadata", {})
        if not isinstance(parts, list | tuple):
            raise ValueError("message parts must be a list")
        if not isinstance(metadata, Mapping):
            raise ValueError("message metadata must be an object")
        return cls(role, tuple(_part(p) for p in parts), metadata)


def _part_json(part: Part) -> dict[str, Any]:
    # A text part without a phase is stored as before phases existed.
    return {k: v for k, v in part.__dict__.items() if not (k == "phase" and v is None)}


_PART_FIELDS: dict[str, tuple[type[Part], dict[str, type], frozenset[str]]] = {
    "text": (TextPart, {"text": str, "phase": str}, frozenset({"phase"})),
    "tool_call": (ToolCallPart, {"call_id": str, "tool_id": str, "arguments": str}, frozenset()),
    "tool_result": (
        ToolResultPart,
        {"call_id": str, "tool_id": str, "content": str, "is_error": bool},
        frozenset({"is_error"}),
    ),
}


def _part(data: Mapping[str, Any]) -> Part:
    if not isinstance(data, Mapping):
        raise ValueError("message part must be an object")
    kind = data.get("kind")
    # An object or list is not hashable: checked first, so it is a ValueError like any kind.
    if not isinstance(kind, str) or kind not in _PART_FIELDS:
        shown = quoted(kind)
        raise ValueError(f"unknown message part kind {shown} (one of {', '.join(_PART_FIELDS)})")
    cls, types, optional = _PART_FIELDS[kind]
    fields = {k: v for k, v in data.items() if k != "kind"}
    unknown = set(fields) - set(types)
    missing = set(types) - optional - set(fields)
    if unknown or missing:
        detail = f"unknown fields {sorted(unknown)}" if unknown else f"missing {sorted(missing)}"
        raise ValueError(f"{kind} part has {detail}")
    for name, value in fields.items():
        if not isinstance(value, types[name]):
            raise ValueError(f"{kind} part field {name!r} must be a {types[name].__name__}")
    if fields.get("phase", PHASES[0]) not in PHASES:
        raise ValueError(f"text part phase {fields['phase']!r} is not one of {', '.join(PHASES)}")
    return cls(**fields)
