"""What the validator needs to know about tool payload and result types: their JSON property
names (the canonical argument names templates and paging fields refer to)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel

from agentgen.dsl.expr import TypeExpr


@dataclass(frozen=True)
class Property:
    name: str
    required: bool
    is_string: bool


class SchemaProblem(Exception):
    """The type cannot be turned into a JSON Schema; the message says why."""


def type_name(expr: TypeExpr) -> str:
    value = expr.value
    return value.__name__ if isinstance(value, type) else "JSON Schema"


def json_schema(expr: TypeExpr) -> dict[str, Any]:
    """The type's JSON Schema (validation mode, aliases as property names)."""
    value = expr.value
    if isinstance(value, dict):
        return value
    return model_schema(value, "validation")


@lru_cache(maxsize=4096)
def _model_schema(model: type[BaseModel], mode: Literal["validation", "serialization"]) -> str:
    try:
        return json.dumps(model.model_json_schema(by_alias=True, mode=mode))
    except Exception as exc:  # pydantic raises several unrelated types here
        raise SchemaProblem(str(exc).splitlines()[0]) from exc


def model_schema(
    model: type[BaseModel], mode: Literal["validation", "serialization"]
) -> dict[str, Any]:
    """A fresh copy of ``model``'s JSON Schema, computed once per model and mode (the
    validator and the generator both need it, and pydantic's schema generation is slow)."""
    value: dict[str, Any] = json.loads(_model_schema(model, mode))
    return value


def _is_string(schema: dict[str, Any]) -> bool:
    if schema.get("type") == "string":
        return True
    variants = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(variants, list):
        kinds = [v.get("type") for v in variants if isinstance(v, dict)]
        return "string" in kinds and all(k in ("string", "null") for k in kinds)
    return False


def properties(expr: TypeExpr) -> dict[str, Property]:
    """Top-level properties by JSON name. Raises :class:`SchemaProblem`."""
    schema = json_schema(expr)
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    if not isinstance(props, dict):
        return {}
    return {
        name: Property(name, name in required, isinstance(sub, dict) and _is_string(sub))
        for name, sub in props.items()
    }
