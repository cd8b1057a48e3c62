"""Declarations of tools as published to a registry, and their fingerprints.

``tool_schema`` is the one place that shapes a tool into its wire declaration: generated
packages call it (through :func:`declare`) to answer ``tool_schemas()`` and ``toolset()``, and the
generator calls it to compute the fingerprints it emits, so both always agree.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ParamSpec

from pydantic import ValidationError

from agentgen.runtime.contracts.declarations import (
    ContractError,
    ToolKind,
    ToolSchema,
    ToolsetDeclaration,
)
from agentgen.runtime.contracts.fingerprint import schema_fingerprint
from agentgen.runtime.contracts.specs import (
    BoundsSpec,
    ConfirmationSpec,
    ServerDataSpec,
    ToolSpec,
)
from agentgen.runtime.search.document import SearchDocument

__all__ = [
    "ToolsetDeclarations",
    "declare",
    "field_metadata",
    "fingerprint",
    "tool_schema",
    "tool_schema_json",
]

P = ParamSpec("P")
_JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_MAX_DEPTH = 8


def field_metadata(schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every property reachable from the schema's root, with its path, JSON type and
    description, in the wire form of ``FieldMetadata``. Local ``$ref``s are followed (to a
    bounded depth, so recursion ends)."""
    defs: Mapping[str, Any] = schema.get("$defs", {}) if isinstance(schema, Mapping) else {}
    out: list[dict[str, Any]] = []

    def resolve(node: Any) -> Any:
        seen = 0
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str) and seen < _MAX_DEPTH:
            ref: str = node["$ref"]
            if not ref.startswith("#/$defs/"):
                break
            node = defs.get(ref.removeprefix("#/$defs/"), {})
            seen += 1
        return node

    def json_type(node: Mapping[str, Any]) -> Any:
        kind = node.get("type")
        if isinstance(kind, str) and kind in _JSON_TYPES:
            return kind
        variants = [resolve(v) for v in node.get("anyOf", []) if isinstance(v, Mapping)]
        kinds = {v.get("type") for v in variants} - {"null"}
        if len(kinds) == 1:
            (only,) = kinds
            return only if only in _JSON_TYPES else None
        return None

    def walk(node: Any, path: list[dict[str, Any]], depth: int) -> None:
        node = resolve(node)
        if not isinstance(node, Mapping) or depth > _MAX_DEPTH:
            return
        variants = [resolve(v) for v in node.get("anyOf", []) if isinstance(v, Mapping)]
        for variant in [node, *variants]:
            props = variant.get("properties")
            if isinstance(props, Mapping):
                for name, sub in props.items():
                    sub_path = [*path, {"field": name}]
                    resolved = resolve(sub)
                    if isinstance(resolved, Mapping):
                        description = sub.get("description") if isinstance(sub, Mapping) else None
                        entry: dict[str, Any] = {"path": sub_path}
                        kind = json_type(resolved)
                        if kind is not None:
                            entry["json_type"] = kind
                        description = description or resolved.get("description")
                        if description is not None:
                            entry["description"] = description
                        out.append(entry)
                        walk(resolved, sub_path, depth + 1)
            items = variant.get("items")
            if isinstance(items, Mapping):
                walk(items, [*path, {"element": True}], depth + 1)

    walk(schema, [], 0)
    return out


def _type_contract(name: str | None, schema: Mapping[str, Any]) -> dict[str, Any]:
    contract: dict[str, Any] = {}
    if name is not None:
        contract["name"] = name
    fields = field_metadata(schema)
    if fields:
        contract["fields"] = fields
    return contract


def tool_schema_json(
    *,
    tool_id: str,
    title: str,
    description: str | None,
    tags: Sequence[str],
    payload_schema: dict[str, Any],
    payload_name: str | None,
    result_schema: dict[str, Any],
    result_name: str | None,
    search: SearchDocument,
    kind: ToolKind = "service",
    agent_id: str | None = None,
    confirmation: ConfirmationSpec | None = None,
    bounds: BoundsSpec | None = None,
    server_data: Iterable[ServerDataSpec] = (),
    server_data_schemas: Sequence[dict[str, Any]] = (),
    required_labels: Sequence[str] = (),
) -> dict[str, Any]:
    """The wire declaration of one tool, consumer contract included, as JSON: exactly what
    ``ToolSchema.to_json()`` gives for it (optional fields left out when empty). The generator
    fingerprints this form directly; :func:`tool_schema` validates it into the model."""
    contract: dict[str, Any] = {
        "kind": kind,
        "title": title,
        "search": {
            "version": search.version,
            **({"terms": search.to_json()["terms"]} if search.terms else {}),
        },
        "payload": _type_contract(payload_name, payload_schema),
    }
    if result_schema.get("type") != "null":
        contract["result"] = _type_contract(result_name, result_schema)
    if required_labels:
        contract["required_labels"] = sorted(required_labels)
    if confirmation is not None:
        contract["confirmation"] = {
            **({"title": confirmation.title} if confirmation.title is not None else {}),
            "prompt_template": confirmation.prompt_template,
            "denied_result_template": confirmation.denied_result_template,
        }
    if bounds is not None:
        paging = bounds.paging
        contract["bounds"] = (
            {
                "paging": {
                    "cursor_field": paging.cursor_field,
                    "next_cursor_field": paging.next_cursor_field,
                    **({"continue_tool": paging.continue_tool} if paging.continue_tool else {}),
                    **({"source_tool": paging.source_tool} if paging.source_tool else {}),
                }
            }
            if paging is not None
            else {}
        )
    data = [
        {
            "kind": item.kind,
            **({"audience": item.audience} if item.audience != "timeline" else {}),
            **({"description": item.description} if item.description is not None else {}),
            "schema": schema,
        }
        for item, schema in zip(server_data, server_data_schemas, strict=True)
    ]
    if data:
        contract["server_data"] = data
    if agent_id is not None:
        contract["agent"] = {"executor": agent_id}
    declaration: dict[str, Any] = {"name": tool_id}
    if description is not None:
        declaration["description"] = description
    if tags:
        declaration["tags"] = list(tags)
    declaration.update(
        payload_schema=payload_schema,
        execution_payload_schema=payload_schema,
        result_schema=result_schema,
        consumer_contract=contract,
    )
    return declaration


def _validated(build: Callable[P, dict[str, Any]]) -> Callable[P, ToolSchema]:
    def validated(*args: P.args, **kwargs: P.kwargs) -> ToolSchema:
        return ToolSchema.model_validate(build(*args, **kwargs))

    return validated


#: The wire declaration of one tool as a validated model (see :func:`tool_schema_json`).
tool_schema = _validated(tool_schema_json)


def declare(spec: ToolSpec) -> ToolSchema:
    """A fresh declaration of a compiled tool (schemas copied: changing it changes nothing
    else)."""
    return tool_schema(
        tool_id=spec.id,
        title=spec.title,
        description=spec.description,
        tags=spec.tags,
        payload_schema=spec.payload.schema(),
        payload_name=spec.payload.name,
        result_schema=spec.result.schema(),
        result_name=spec.result.name,
        search=spec.search,
        kind=spec.kind,
        agent_id=spec.agent_id,
        confirmation=spec.confirmation,
        bounds=spec.bounds,
        server_data=spec.server_data,
        server_data_schemas=[_loads(d.schema_json) for d in spec.server_data],
        required_labels=spec.required_labels,
    )


def _loads(text: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(text)
    return value


def fingerprint(toolset: ToolsetDeclaration | Mapping[str, Any] | None) -> str:
    """The schema fingerprint of a dynamic declaration or of a generated ``toolset()``."""
    if toolset is None:
        raise ContractError("toolset declaration is required")
    if isinstance(toolset, Mapping):
        tools = toolset.get("tools")
        name = toolset.get("name", "?")
        if isinstance(tools, list) and any(t is None for t in tools):
            raise ContractError(f"toolset {name!r} contains a None tool declaration")
        try:
            toolset = ToolsetDeclaration.model_validate(toolset)
        except ValidationError as exc:
            raise ContractError(f"toolset {name!r} declaration: {exc}") from None
    if any(t is None for t in toolset.tools):
        raise ContractError(f"toolset {toolset.name!r} contains a None tool declaration")
    return schema_fingerprint(toolset)


class ToolsetDeclarations:
    """A compiled toolset's registry declarations, built from its generated specs.

    Generated ``declarations.py`` modules bind these methods as their module-level
    ``tool_schemas``/``toolset``/``schema_fingerprint``.
    """

    def __init__(
        self,
        name: str,
        description: str | None,
        tags: Sequence[str],
        specs: Sequence[ToolSpec],
        fingerprint: str,
    ) -> None:
        self._name = name
        self._description = description
        self._tags = tuple(tags)
        self._specs = tuple(specs)
        self._fingerprint = fingerprint

    def tool_schemas(self) -> list[ToolSchema]:
        """Fresh, independent declarations of every tool of the toolset."""
        return [declare(spec) for spec in self._specs]

    def toolset(self) -> ToolsetDeclaration:
        """The full declaration: registration name, description, tags, fresh schemas."""
        return ToolsetDeclaration(
            name=self._name,
            description=self._description,
            tags=list(self._tags),
            tools=self.tool_schemas(),
        )

    def schema_fingerprint(self, name: str | None = None) -> str:
        """The fingerprint of a registration under ``name`` (default: the declared name),
        without description and tags; precomputed for the declared name."""
        if name is None or name == self._name:
            return self._fingerprint
        return fingerprint(ToolsetDeclaration(name=name, tools=self.tool_schemas()))
