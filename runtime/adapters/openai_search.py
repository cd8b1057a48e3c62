"""Wire shapes of OpenAI's client-executed tool search, and how they are stored.

The Responses API lets the client run the search: the request carries one ``tool_search``
tool with ``execution: "client"``, the model emits ``tool_search_call`` items, and the client
answers each with a ``tool_search_output`` holding the definitions it chose to load. Every
loaded function is wrapped in a namespace named after the function, because Bedrock drops the
namespace of a bare dynamically loaded function from its calls and then rejects those calls
on replay; with the wrapper, every call to a loaded tool names its namespace.

Records are stored in the assistant message's metadata under :data:`METADATA_KEY`::

    {"version": 2,
     "records": [{"at": 0, "item": {"type": "tool_search_call", ...}},
                 {"at": 0, "item": {"type": "tool_search_output", ...}}],
     "namespaces": {"call_b1": "weather_lookup"},
     "fingerprint": "<sha-256 of the records and the message's calls>"}

``at`` anchors each item between the message's parts (see :mod:`.anchors`); ``namespaces``
holds the namespace each of the message's tool calls carried, which replay must send back;
``fingerprint`` (see :mod:`.history`) finds records or calls changed after storing. Every
assistant message the adapter returns with tool calls carries these records, even without a
search, so that a message whose records were lost is recognised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentgen.runtime.adapters.anchors import Anchored, read_anchored, require_mapping
from agentgen.runtime.adapters.errors import HistoryReplayError
from agentgen.runtime.adapters.history import read_sealed, seal, verify
from agentgen.runtime.messages import Part
from agentgen.runtime.model_client import ModelError, ToolDefinition

__all__ = [
    "METADATA_KEY",
    "SEARCH_TOOL",
    "LoadedTool",
    "SearchCall",
    "SearchMetadata",
    "SearchOutput",
    "function_tool",
    "namespace_tool",
    "parse_search_call",
    "parse_search_output",
    "search_output",
]

METADATA_KEY = "openai.tool_search"
_VERSION = 2
_KEYS = frozenset({"version", "records", "namespaces", "fingerprint"})

_CALL_KEYS = frozenset({"type", "id", "call_id", "execution", "status", "arguments"})
_OUTPUT_KEYS = frozenset({"type", "call_id", "execution", "status", "tools"})
_NAMESPACE_KEYS = frozenset({"type", "name", "description", "tools"})
_FUNCTION_KEYS = frozenset({"type", "name", "description", "parameters", "strict", "defer_loading"})

#: The one search tool of a request. Its schema admits only a query, and neither it nor the
#: rest of the request lists deferred tools: the model learns about them only by searching.
SEARCH_TOOL: Mapping[str, Any] = {
    "type": "tool_search",
    "execution": "client",
    "description": (
        "Find more tools by what they do. Describe the capability you need in a few keywords; "
        "the matching tools' complete definitions are returned and can then be called."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "Keywords describing the capability you need.",
            }
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}


def _description(tool: ToolDefinition) -> str:
    # Namespaces require a description; a tool without one is described by its title.
    return tool.description or tool.title


def function_tool(tool: ToolDefinition, name: str) -> dict[str, Any]:
    """A function declaration sent up front.

    ``strict`` is off: strict mode would require rewriting each payload schema (every property
    required, no additional properties), which would change the tool's contract.
    """
    return {
        "type": "function",
        "name": name,
        "description": _description(tool),
        "parameters": tool.parameters(),
        "strict": False,
    }


def namespace_tool(tool: ToolDefinition, name: str) -> dict[str, Any]:
    """A searched tool as loaded: one deferred function inside a namespace of the same name."""
    description = _description(tool)
    function = {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": tool.parameters(),
        "strict": False,
        "defer_loading": True,
    }
    return {"type": "namespace", "name": name, "description": description, "tools": [function]}


def search_output(call_id: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The client's answer to one search call."""
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": tools,
    }


@dataclass(frozen=True)
class SearchCall:
    call_id: str
    query: str
    #: The call as it is replayed: only the fields the API needs back (no ``created_by``).
    record: dict[str, Any]


def parse_search_call(item: Mapping[str, Any], what: str, *, stored: bool) -> SearchCall:
    """Validate a ``tool_search_call``: a completed client call with IDs and a query.

    A call read from a live response may carry fields the API adds (``created_by``); they are
    not replayed. A stored record must have exactly the replayed fields, since anything else
    means it was not written by this adapter.
    """
    error = HistoryReplayError if stored else ModelError
    keys = set(item)
    if stored and not keys <= _CALL_KEYS:
        raise error(f"{what}: tool_search_call has unknown fields {sorted(keys - _CALL_KEYS)}")
    for field in ("id", "call_id"):
        if not isinstance(item.get(field), str) or not item[field]:
            raise error(f"{what}: tool_search_call has no {field}")
    if item.get("execution") != "client":
        raise error(
            f"{what}: tool_search_call {item['call_id']!r} has execution "
            f"{item.get('execution')!r}; only client-executed search is used"
        )
    if item.get("status") != "completed":
        raise error(
            f"{what}: tool_search_call {item['call_id']!r} has status {item.get('status')!r}, "
            "not 'completed' (the response was cut short)"
        )
    arguments = item.get("arguments")
    query = arguments.get("query") if isinstance(arguments, Mapping) else None
    if not isinstance(query, str) or not query.strip() or set(arguments or {}) != {"query"}:
        raise error(
            f"{what}: tool_search_call {item['call_id']!r} must have arguments "
            f'{{"query": <non-empty text>}}, got {arguments!r}'
        )
    record = {key: item[key] for key in sorted(_CALL_KEYS)}
    return SearchCall(item["call_id"], query, record)


@dataclass(frozen=True)
class LoadedTool:
    """One definition a stored search output loaded."""

    name: str
    #: ``namespace`` (this adapter's form) or ``function`` (a bare function, written by
    #: earlier versions; calls to such tools carry no namespace).
    form: str
    entry: dict[str, Any]


@dataclass(frozen=True)
class SearchOutput:
    call_id: str
    tools: tuple[LoadedTool, ...]


def _function_entry(value: object, what: str) -> dict[str, Any]:
    entry = require_mapping(value, what)
    if entry.get("type") != "function" or not set(entry) <= _FUNCTION_KEYS:
        raise HistoryReplayError(
            f"{what} must be a function with only the fields {sorted(_FUNCTION_KEYS)}"
        )
    if not isinstance(entry.get("name"), str) or not entry["name"]:
        raise HistoryReplayError(f"{what} has no name")
    return entry


def parse_search_output(item: Mapping[str, Any], what: str) -> SearchOutput:
    """Validate a stored ``tool_search_output``: closed fields, namespaces or functions only."""
    keys = set(item)
    if not keys <= _OUTPUT_KEYS:
        raise HistoryReplayError(
            f"{what}: tool_search_output has unknown fields {sorted(keys - _OUTPUT_KEYS)}"
        )
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise HistoryReplayError(f"{what}: tool_search_output has no call_id")
    if item.get("execution") != "client" or item.get("status") != "completed":
        raise HistoryReplayError(
            f"{what}: tool_search_output {call_id!r} must be a completed client output"
        )
    tools = item.get("tools")
    if not isinstance(tools, list):
        raise HistoryReplayError(f"{what}: tool_search_output {call_id!r} has no tools list")
    loaded: list[LoadedTool] = []
    for position, value in enumerate(tools):
        entry_what = f"{what}: tool_search_output {call_id!r} tools[{position}]"
        entry = require_mapping(value, entry_what)
        if entry.get("type") == "function":
            function = _function_entry(entry, entry_what)
            loaded.append(LoadedTool(function["name"], "function", function))
            continue
        if entry.get("type") != "namespace" or set(entry) != _NAMESPACE_KEYS:
            raise HistoryReplayError(
                f"{entry_what} must be a namespace with exactly {sorted(_NAMESPACE_KEYS)} or a "
                "function"
            )
        inner = entry["tools"]
        if not isinstance(inner, list) or len(inner) != 1:
            raise HistoryReplayError(f"{entry_what} must hold exactly one function")
        function = _function_entry(inner[0], f"{entry_what}.tools[0]")
        if entry["name"] != function["name"]:
            raise HistoryReplayError(
                f"{entry_what} is namespace {entry['name']!r} but holds function "
                f"{function['name']!r}; namespaces are named after their function"
            )
        loaded.append(LoadedTool(function["name"], "namespace", entry))
    return SearchOutput(call_id, tuple(loaded))


@dataclass(frozen=True)
class SearchMetadata:
    """What an assistant message stores under :data:`METADATA_KEY`."""

    records: tuple[Anchored, ...] = ()
    namespaces: Mapping[str, str] | None = None

    def to_json(self, parts: Sequence[Part], what: str = "the model's reply") -> dict[str, Any]:
        """The stored form, sealed with the fingerprint of the records and ``parts`` (``what``
        names the reply they come from)."""
        record = {
            "version": _VERSION,
            "records": [{"at": at, "item": item} for at, item in self.records],
            "namespaces": dict(self.namespaces or {}),
        }
        return seal(parts, record, what)

    @classmethod
    def from_json(cls, value: object, parts: Sequence[Part], what: str) -> SearchMetadata:
        where = f"{what} metadata {METADATA_KEY!r}"
        data = read_sealed(value, where, _VERSION, _KEYS)
        records = read_anchored(data["records"], "item", len(parts), f"{where}.records")
        namespaces = require_mapping(data["namespaces"], f"{where}.namespaces")
        for call_id, namespace in namespaces.items():
            if not isinstance(namespace, str) or not namespace:
                raise HistoryReplayError(f"{where}: call {call_id!r} has an invalid namespace")
        return cls(tuple(records), namespaces)

    @staticmethod
    def verify(value: Mapping[str, Any], parts: Sequence[Part], what: str) -> None:
        """Refuse records that no longer match their message (after the shape checks)."""
        verify(f"{what} metadata {METADATA_KEY!r}", parts, value)
