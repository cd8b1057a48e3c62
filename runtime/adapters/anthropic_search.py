"""Wire shapes of Claude's hosted tool search, and how they are stored.

Claude searches on the provider's side: the request lists every permitted tool, deferred ones
flagged ``defer_loading``, plus the hosted regex search tool; the reply holds
``server_tool_use`` and ``tool_search_tool_result`` blocks whose ``tool_reference``s the API
expands from the request's ``tools``. Replaying a conversation therefore needs, besides the
blocks themselves, the definitions the references pointed at: a tool that has since left the
catalog must still be sent (deferred) and withdrawn with a ``tool_removal`` change.

An assistant message stores under :data:`METADATA_KEY`::

    {"version": 2,
     "records": [{"at": 0, "block": {"type": "server_tool_use", ...}},
                 {"at": 0, "block": {"type": "tool_search_tool_result", ...}}],
     "definitions": [{"tool_id": "weather.lookup", "name": "weather_lookup",
                      "description": "...", "input_schema": {...}}],
     "changes": [{"type": "tool_removal", "name": "weather_lookup"}],
     "fingerprint": "<sha-256 of the records and the message's calls>"}

``records`` are the native blocks, verbatim and anchored between the message's parts (see
:mod:`.anchors`); ``definitions`` are the definitions of every tool the message's searches
referenced, as sent; ``changes`` are the availability changes sent (as a system message) just
before this message; ``fingerprint`` (see :mod:`.history`) finds a call switched to another
tool, or a saved definition changed, after storing. Every assistant message the adapter
returns with tool calls carries these records, even without a search.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentgen.runtime.adapters.anchors import Anchored, read_anchored, require_mapping
from agentgen.runtime.adapters.errors import HistoryReplayError
from agentgen.runtime.adapters.history import REMEDY, read_sealed, seal, verify
from agentgen.runtime.adapters.names import provider_name
from agentgen.runtime.contracts.limits import MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH
from agentgen.runtime.contracts.schema_inspection import SchemaProblem, check_bounds
from agentgen.runtime.messages import Part
from agentgen.runtime.model_client import ModelError, ToolDefinition

__all__ = [
    "BEDROCK_ANTHROPIC_VERSION",
    "BEDROCK_SEARCH_TOOL_TYPE",
    "BEDROCK_TOOL_SEARCH_BETA",
    "METADATA_KEY",
    "SEARCH_TOOL_NAME",
    "SEARCH_TOOL_TYPE",
    "TOOL_CHANGES_BETA",
    "Change",
    "Definition",
    "SearchMetadata",
    "parse_search_result",
    "parse_server_tool_use",
]

METADATA_KEY = "anthropic.tool_search"
_VERSION = 2
_KEYS = frozenset({"version", "records", "definitions", "changes", "fingerprint"})

SEARCH_TOOL_NAME = "tool_search_tool_regex"
SEARCH_TOOL_TYPE = "tool_search_tool_regex_20251119"
#: Bedrock InvokeModel takes the search tool's type without its date.
BEDROCK_SEARCH_TOOL_TYPE = "tool_search_tool_regex"
#: Bedrock still requires this beta, in the body's ``anthropic_beta``, for tool search.
BEDROCK_TOOL_SEARCH_BETA = "tool-search-tool-2025-10-19"
#: Needed for system messages that add or remove tools mid-conversation.
TOOL_CHANGES_BETA = "mid-conversation-tool-changes-2026-07-01"
#: The SDK's default body version for Bedrock is newer than what AWS documents; pin it.
BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"

_SERVER_TOOL_USE_KEYS = frozenset({"type", "id", "name", "input", "caller"})
_RESULT_KEYS = frozenset({"type", "tool_use_id", "content"})
_SEARCH_RESULT_KEYS = frozenset({"type", "tool_references"})
_ERROR_KEYS = frozenset({"type", "error_code", "error_message"})
_DEFINITION_KEYS = frozenset({"tool_id", "name", "description", "input_schema"})


@dataclass(frozen=True)
class Definition:
    """A tool as Claude sees it; equal definitions are the same tool to the model."""

    tool_id: str
    name: str
    description: str
    input_schema: Mapping[str, Any]

    @classmethod
    def of(cls, tool: ToolDefinition, name: str) -> Definition:
        return cls(tool.id, name, tool.description or tool.title, tool.parameters())

    def param(self, *, deferred: bool) -> dict[str, Any]:
        """The ``tools`` entry."""
        entry: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }
        if deferred:
            entry["defer_loading"] = True
        return entry

    def to_json(self) -> dict[str, Any]:
        return {
            "tool_id": self.tool_id,
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }

    @classmethod
    def from_json(cls, value: object, what: str) -> Definition:
        data = require_mapping(value, what)
        if set(data) != _DEFINITION_KEYS:
            raise HistoryReplayError(
                f"{what} must have exactly the keys {sorted(_DEFINITION_KEYS)}"
            )
        for key in ("tool_id", "name", "description"):
            if not isinstance(data[key], str):
                raise HistoryReplayError(f"{what}.{key} must be text")
        # A saved definition may be sent again (for a tool that left the catalog): it must be
        # the definition of the tool it names, and within the limits of a schema.
        if not data["tool_id"] or data["name"] != provider_name(data["tool_id"]):
            raise HistoryReplayError(
                f"{what} names {data['name']!r}, which is not the provider name of tool "
                f"{data['tool_id']!r}; {REMEDY}"
            )
        schema = require_mapping(data["input_schema"], f"{what}.input_schema")
        try:
            check_bounds(schema, max_bytes=MAX_SCHEMA_BYTES, max_depth=MAX_SCHEMA_DEPTH)
        except SchemaProblem as exc:
            raise HistoryReplayError(f"{what}.input_schema: {exc}; {REMEDY}") from None
        if schema.get("type") != "object":
            raise HistoryReplayError(f"{what}.input_schema must describe an object; {REMEDY}")
        return cls(data["tool_id"], data["name"], data["description"], schema)


@dataclass(frozen=True)
class Change:
    """A tool offered again (``tool_addition``) or withdrawn (``tool_removal``) from here on."""

    kind: Literal["tool_addition", "tool_removal"]
    name: str

    def block(self) -> dict[str, Any]:
        return {"type": self.kind, "tool": {"type": "tool_reference", "name": self.name}}

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, "name": self.name}

    @classmethod
    def from_json(cls, value: object, what: str) -> Change:
        data = require_mapping(value, what)
        kind, name = data.get("type"), data.get("name")
        if set(data) != {"type", "name"} or kind not in ("tool_addition", "tool_removal"):
            raise HistoryReplayError(
                f"{what} must be {{'type': 'tool_addition' | 'tool_removal', 'name': ...}}"
            )
        if not isinstance(name, str) or not name:
            raise HistoryReplayError(f"{what} has no tool name")
        return cls(kind, name)


def change_message(changes: tuple[Change, ...]) -> dict[str, Any]:
    """The system message that tells the model which tools changed availability."""
    return {"role": "system", "content": [change.block() for change in changes]}


@dataclass(frozen=True)
class SearchMetadata:
    """What an assistant message stores under :data:`METADATA_KEY`."""

    records: tuple[Anchored, ...] = ()
    definitions: tuple[Definition, ...] = ()
    changes: tuple[Change, ...] = field(default=())

    def to_json(self, parts: Sequence[Part]) -> dict[str, Any]:
        """The stored form, sealed with the fingerprint of the records and ``parts``."""
        record = {
            "version": _VERSION,
            "records": [{"at": at, "block": block} for at, block in self.records],
            "definitions": [definition.to_json() for definition in self.definitions],
            "changes": [change.to_json() for change in self.changes],
        }
        return seal(parts, record)

    @classmethod
    def from_json(cls, value: object, parts: Sequence[Part], what: str) -> SearchMetadata:
        where = f"{what} metadata {METADATA_KEY!r}"
        data = read_sealed(value, where, _VERSION, _KEYS)
        records = read_anchored(data["records"], "block", len(parts), f"{where}.records")
        definitions, changes = data["definitions"], data["changes"]
        if not isinstance(definitions, list) or not isinstance(changes, list):
            raise HistoryReplayError(f"{where}: definitions and changes must be lists")
        return cls(
            tuple(records),
            tuple(
                Definition.from_json(value, f"{where}.definitions[{index}]")
                for index, value in enumerate(definitions)
            ),
            tuple(
                Change.from_json(value, f"{where}.changes[{index}]")
                for index, value in enumerate(changes)
            ),
        )

    @staticmethod
    def verify(value: Mapping[str, Any], parts: Sequence[Part], what: str) -> None:
        """Refuse records that no longer match their message (after the shape checks)."""
        verify(f"{what} metadata {METADATA_KEY!r}", parts, value)


def _error(stored: bool) -> type[ModelError]:
    return HistoryReplayError if stored else ModelError


def parse_server_tool_use(block: Mapping[str, Any], what: str, *, stored: bool) -> str:
    """Validate a ``server_tool_use`` block of the search tool and return its ID.

    Its ``input`` is opaque (sources disagree on its keys), so it is only required to be an
    object; it is replayed exactly as received.
    """
    error = _error(stored)
    if not set(block) <= _SERVER_TOOL_USE_KEYS:
        raise error(
            f"{what}: server_tool_use has unknown fields "
            f"{sorted(set(block) - _SERVER_TOOL_USE_KEYS)}"
        )
    block_id = block.get("id")
    if not isinstance(block_id, str) or not block_id:
        raise error(f"{what}: server_tool_use has no id")
    if block.get("name") != SEARCH_TOOL_NAME:
        raise error(
            f"{what}: server_tool_use {block_id!r} uses server tool {block.get('name')!r}; only "
            f"{SEARCH_TOOL_NAME!r} is offered"
        )
    if not isinstance(block.get("input"), Mapping):
        raise error(f"{what}: server_tool_use {block_id!r} has no input object")
    caller = block.get("caller")
    if caller is not None and not isinstance(caller, Mapping):
        raise error(f"{what}: server_tool_use {block_id!r} has an invalid caller")
    return block_id


def parse_search_result(
    block: Mapping[str, Any], what: str, *, stored: bool
) -> tuple[str, tuple[str, ...]]:
    """Validate a ``tool_search_tool_result``; return what it answers and the names it found.

    Error results carry an ``error_code``, read as open text: the documented codes and the
    SDK's literal set disagree, and new ones may appear.
    """
    error = _error(stored)
    if not set(block) <= _RESULT_KEYS:
        raise error(
            f"{what}: tool_search_tool_result has unknown fields "
            f"{sorted(set(block) - _RESULT_KEYS)}"
        )
    answered = block.get("tool_use_id")
    if not isinstance(answered, str) or not answered:
        raise error(f"{what}: tool_search_tool_result has no tool_use_id")
    content = block.get("content")
    if not isinstance(content, Mapping):
        raise error(f"{what}: tool_search_tool_result {answered!r} has no content")
    kind = content.get("type")
    if kind == "tool_search_tool_result_error":
        code = content.get("error_code")
        if not set(content) <= _ERROR_KEYS or not isinstance(code, str) or not code:
            raise error(f"{what}: tool_search_tool_result {answered!r} has a malformed error")
        return answered, ()
    references = content.get("tool_references")
    if (
        kind != "tool_search_tool_search_result"
        or not set(content) <= _SEARCH_RESULT_KEYS
        or not isinstance(references, list)
    ):
        raise error(f"{what}: tool_search_tool_result {answered!r} has malformed content")
    names: list[str] = []
    for reference in references:
        name = reference.get("tool_name") if isinstance(reference, Mapping) else None
        if (
            not isinstance(reference, Mapping)
            or set(reference) != {"type", "tool_name"}
            or reference["type"] != "tool_reference"
            or not isinstance(name, str)
            or not name
        ):
            raise error(f"{what}: tool_search_tool_result {answered!r} has a malformed reference")
        if name in names:
            raise error(f"{what}: tool_search_tool_result {answered!r} references {name!r} twice")
        names.append(name)
    return answered, tuple(names)
