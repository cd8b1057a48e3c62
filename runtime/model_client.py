"""The model client seam: what planners hand to provider adapters and get back.

Adapters do tool search inside ``complete``: a request may carry deferred definitions, and the
response only ever holds ordinary tool calls. An adapter that cannot search raises
:class:`ToolSearchUnsupportedError` for requests with deferred definitions; it never loads them
eagerly instead.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agentgen.runtime.messages import Message
from agentgen.runtime.search.document import SearchDocument

__all__ = [
    "ModelClient",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ToolChoice",
    "ToolDefinition",
    "ToolSearchUnsupportedError",
    "Usage",
]


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as advertised to a model for one planning activity."""

    id: str
    title: str
    description: str
    parameters_json: str
    search: SearchDocument
    deferred: bool = False
    tags: tuple[str, ...] = ()

    def parameters(self) -> dict[str, Any]:
        """A fresh copy of the payload JSON Schema."""
        value: dict[str, Any] = json.loads(self.parameters_json)
        return value


@dataclass(frozen=True)
class ToolChoice:
    """``auto`` (default), ``none`` (no tools, no discovery), ``any`` (some tool), or ``tool``
    (exactly ``name``, which is then sent immediately even when deferred)."""

    mode: Literal["auto", "none", "any", "tool"] = "auto"
    name: str | None = None


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )


@dataclass(frozen=True)
class ModelRequest:
    model: str
    messages: Sequence[Message]
    tools: Sequence[ToolDefinition] = ()
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    max_tokens: int | None = None
    system: str | None = None


@dataclass(frozen=True)
class ModelResponse:
    """The assistant message (its metadata holds any native search records) and usage."""

    message: Message
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None


class ModelClient(Protocol):
    async def complete(self, request: ModelRequest) -> ModelResponse: ...


class ModelError(Exception):
    """A model adapter failed; the message names the provider and what to do."""


class ToolSearchUnsupportedError(ModelError):
    """The adapter cannot load deferred tools by search; it refuses rather than loading them
    eagerly (which would change what the model sees without anyone deciding it)."""
