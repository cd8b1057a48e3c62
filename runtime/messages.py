"""Conversation messages and the metadata they carry.

Provider-native records (tool search calls and outputs, hosted search blocks) live in message
metadata, never in a separate store of loaded tools: storing or compacting a transcript keeps
them as long as it keeps the messages (``to_json`` / ``from_json`` round-trip everything).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class TextPart:
    text: str
    kind: Literal["text"] = "text"


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


def _frozen(metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(metadata))


@dataclass(frozen=True)
class Message:
    role: Role
    parts: tuple[Part, ...]
    #: JSON-serialisable provider records keyed by adapter (e.g. OpenAI tool search items).
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", _frozen(self.metadata))

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (TextPart(text),))

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", (TextPart(text),))

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    def with_metadata(self, key: str, value: Any) -> Message:
        return Message(self.role, self.parts, {**self.metadata, key: value})

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "parts": [_part_json(p) for p in self.parts],
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Message:
        unknown = set(data) - {"role", "parts", "metadata"}
        if unknown:
            raise ValueError(f"message has unknown fields: {sorted(unknown)}")
        role = data["role"]
        if role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"message role {role!r} is not one of system, user, assistant, tool")
        return cls(role, tuple(_part(p) for p in data["parts"]), data.get("metadata", {}))


def _part_json(part: Part) -> dict[str, Any]:
    return {k: v for k, v in part.__dict__.items()}


def _part(data: Mapping[str, Any]) -> Part:
    kind = data.get("kind")
    fields = {k: v for k, v in data.items() if k != "kind"}
    if kind == "text":
        return TextPart(**fields)
    if kind == "tool_call":
        return ToolCallPart(**fields)
    if kind == "tool_result":
        return ToolResultPart(**fields)
    raise ValueError(f"unknown message part kind {kind!r}")
