"""Tool specs: everything the runtime knows about one tool.

Compiled tools get their specs from generated packages (every fact a literal computed at
generation time); dynamic tools get them from :func:`agentgen.runtime.contracts.compile`.
Either way a spec is immutable and self-contained: an accepted call keeps the spec it was accepted
under, whatever the catalog does afterwards.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from agentgen.runtime.contracts.canonical import compact_json
from agentgen.runtime.contracts.codecs import JSONCodec, ModelCodec, NullCodec, SchemaCodec
from agentgen.runtime.contracts.declarations import Audience, ToolKind
from agentgen.runtime.contracts.schemas import (
    EmptyPayload,
    empty_payload_schema,
    null_result_schema,
)
from agentgen.runtime.search.document import SearchDocument

__all__ = [
    "BoundsSpec",
    "ConfirmationSpec",
    "PagingSpec",
    "ServerDataSpec",
    "SpecIndex",
    "ToolSpec",
    "TypeSpec",
    "empty_payload",
    "model_type",
    "null_result",
    "schema_type",
]


@dataclass(frozen=True, slots=True)
class TypeSpec:
    """A payload or result type: its JSON Schema (as canonical JSON text, so that it cannot be
    mutated through the spec) and the codec that validates values against it."""

    name: str | None
    schema_json: str
    codec: JSONCodec[Any] = field(repr=False, compare=False)

    def schema(self) -> dict[str, Any]:
        """A fresh copy of the schema (callers may change it freely)."""
        value: dict[str, Any] = json.loads(self.schema_json)
        return value


def model_type(model: type[BaseModel], schema_json: str, what: str) -> TypeSpec:
    """A compiled type: values decode into the generated ``model``."""
    return TypeSpec(model.__name__, schema_json, ModelCodec(model, what))


def schema_type(schema_json: str, what: str) -> TypeSpec:
    """A type known only by its JSON Schema (external MCP tools, registry tools)."""
    return TypeSpec(None, schema_json, SchemaCodec(json.loads(schema_json), what))


def empty_payload(what: str) -> TypeSpec:
    """The payload of a tool without Args: an empty object."""
    return TypeSpec(None, compact_json(empty_payload_schema()), ModelCodec(EmptyPayload, what))


def null_result(what: str) -> TypeSpec:
    """The result of a tool without Return: ``null``."""
    return TypeSpec(None, compact_json(null_result_schema()), NullCodec(what))


@dataclass(frozen=True)
class PagingSpec:
    cursor_field: str
    next_cursor_field: str
    #: The tool that fetches further pages (never deferred), when it is not the tool itself.
    continue_tool: str | None = None
    #: For a continuation tool: the tool whose pages it continues.
    source_tool: str | None = None


@dataclass(frozen=True)
class BoundsSpec:
    paging: PagingSpec | None = None


@dataclass(frozen=True)
class ConfirmationSpec:
    prompt_template: str
    denied_result_template: str
    title: str | None = None


@dataclass(frozen=True)
class ServerDataSpec:
    kind: str
    audience: Audience
    schema_json: str
    description: str | None = None


@dataclass(frozen=True)
class ToolSpec:
    id: str
    #: Registration name of the toolset the tool belongs to (``service.toolset``).
    toolset: str
    title: str
    description: str
    payload: TypeSpec
    result: TypeSpec
    search: SearchDocument
    tags: tuple[str, ...] = ()
    kind: ToolKind = "service"
    #: For agents exposed as tools: the agent that runs the call as a child run.
    agent_id: str | None = None
    confirmation: ConfirmationSpec | None = None
    bounds: BoundsSpec | None = None
    server_data: tuple[ServerDataSpec, ...] = ()
    required_labels: tuple[str, ...] = ()


class SpecIndex:
    """Lookups over a generated package's ``SPECS`` (a toolset's, or an agent's union).

    Generated modules bind these methods as their module-level ``names``/``spec``/... so that
    every package shares one implementation.
    """

    def __init__(self, owner: str, specs: tuple[ToolSpec, ...]) -> None:
        self._owner = owner
        self._by_id = {spec.id: spec for spec in specs}

    def names(self) -> tuple[str, ...]:
        """The tool IDs, in declaration order."""
        return tuple(self._by_id)

    def spec(self, tool_id: str) -> ToolSpec:
        """The spec of ``tool_id``; ``KeyError`` naming the owner when it has none."""
        try:
            return self._by_id[tool_id]
        except KeyError:
            raise KeyError(f"{self._owner} has no tool {tool_id!r}") from None

    def payload_schema(self, tool_id: str) -> dict[str, Any]:
        """A fresh copy of the tool's payload JSON Schema."""
        return self.spec(tool_id).payload.schema()

    def result_schema(self, tool_id: str) -> dict[str, Any]:
        """A fresh copy of the tool's result JSON Schema."""
        return self.spec(tool_id).result.schema()
