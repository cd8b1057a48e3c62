"""Whether a server's schema has the form JSON Schema gives the keywords the match reads.

The start-up check (:mod:`agentgen.runtime.contracts.schema_match`) reads a server's input
schema keyword by keyword. A keyword of the wrong form (``"type": 7``, ``"enum": "abc"``,
``anyOf`` given as an object, ``properties`` as a list, the tuple form of ``items``) would be
read as no constraint at all, or crash the reading; an MCP server's schema is outside input, so
each is reported as a problem of its own, naming the keyword, rather than passed unseen.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["JSON_TYPES", "is_schema", "malformed", "not_a_schema", "shown"]

#: The type names JSON Schema's ``type`` takes.
JSON_TYPES = frozenset({"null", "boolean", "object", "array", "number", "integer", "string"})
#: Keywords whose value is one subschema.
_ONE_SCHEMA = ("additionalProperties", "unevaluatedProperties", "items")
#: Keywords whose value is a non-empty list of subschemas.
_SCHEMA_LISTS = ("anyOf", "oneOf")

_Problem = tuple[tuple[str, ...], str]


def is_schema(value: object) -> bool:
    """A JSON Schema is an object or a boolean."""
    return isinstance(value, (Mapping, bool))


def not_a_schema(value: object) -> str:
    return (
        f"the server's schema is {_kind(value)} {shown(value)}, not a JSON Schema (an object "
        "or a boolean)"
    )


def malformed(schema: Mapping[str, Any]) -> list[_Problem]:
    """Every keyword of ``schema`` (one level: subschemas are checked where they are read)
    whose value has a form JSON Schema (2020-12) does not give it, with its path."""
    problems: list[_Problem] = []
    if "type" in schema and not _type_form(schema["type"]):
        problems.append(
            (
                (),
                f"the server's type {shown(schema['type'])} is not a JSON type name "
                f"({', '.join(sorted(JSON_TYPES))}) or a list of them",
            )
        )
    if "enum" in schema and not isinstance(schema["enum"], list):
        problems.append(((), f"the server's enum {shown(schema['enum'])} is not a list"))
    if "required" in schema:
        required = schema["required"]
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            problems.append(((), f"the server's required {shown(required)} is not a list of names"))
    if "properties" in schema:
        properties = schema["properties"]
        if not isinstance(properties, Mapping):
            problems.append(((), f"the server's properties {shown(properties)} is not an object"))
        else:
            for name, value in properties.items():
                if not is_schema(value):
                    problems.append(((str(name),), not_a_schema(value)))
    for keyword in _ONE_SCHEMA:
        value = schema.get(keyword, True)
        if is_schema(value):
            continue
        if keyword == "items" and isinstance(value, list):
            problems.append(
                (
                    ("[]",),
                    "the server's items is a list of schemas (the tuple form of JSON Schema "
                    "up to 2019-09), which the check does not compare: have the server "
                    "publish prefixItems (2020-12), or items as one schema",
                )
            )
        else:
            problems.append(
                (
                    (),
                    f"the server's {keyword} is {_kind(value)} {shown(value)}, not a JSON "
                    "Schema (an object or a boolean)",
                )
            )
    for keyword in _SCHEMA_LISTS:
        if keyword not in schema:
            continue
        branches = schema[keyword]
        if not isinstance(branches, list) or not branches:
            problems.append(
                ((), f"the server's {keyword} {shown(branches)} is not a non-empty list")
            )
            continue
        for index, branch in enumerate(branches):
            if not is_schema(branch):
                problems.append(((), f"{keyword}[{index}]: {not_a_schema(branch)}"))
    return problems


def _type_form(kind: object) -> bool:
    if isinstance(kind, str):
        return kind in JSON_TYPES
    return (
        isinstance(kind, list)
        and all(isinstance(k, str) and k in JSON_TYPES for k in kind)
        and len(set(kind)) == len(kind)
    )


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def shown(value: object) -> str:
    """A schema value as a problem quotes it: its JSON, cut short."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 120 else text[:117] + "..."
