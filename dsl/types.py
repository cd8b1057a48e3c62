"""What the validator needs to know about tool payload and result types: their JSON property
names (the canonical argument names templates and paging fields refer to)."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import weakref
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

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


def _json_native(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json_native(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_native(v) for k, v in value.items())
    return False


class _SchemaGenerator(GenerateJsonSchema):
    """Pydantic's generator, without building a serializer for every plain default value.

    Pydantic encodes each default through a new ``TypeAdapter``; for values that are already
    JSON (numbers, strings, booleans, null, lists and string-keyed objects of them) the result
    is the value itself, and skipping the adapter makes large designs generate much faster.
    """

    def encode_default(self, dft: Any) -> Any:
        if _json_native(dft):
            return copy.deepcopy(dft)
        return super().encode_default(dft)


#: Below this many schemas a fork costs more than it saves.
_PARALLEL_THRESHOLD = 200
#: Schemas by model and mode, as JSON text; weak, so classes of finished loads can go.
_SCHEMAS: weakref.WeakKeyDictionary[type[BaseModel], dict[str, str]] = weakref.WeakKeyDictionary()

Mode = Literal["validation", "serialization"]


def _compute(model: type[BaseModel], mode: Mode) -> str:
    try:
        return json.dumps(
            model.model_json_schema(by_alias=True, mode=mode, schema_generator=_SchemaGenerator)
        )
    except Exception as exc:  # pydantic raises several unrelated types here
        raise SchemaProblem(str(exc).splitlines()[0]) from exc


def _schema_text(model: type[BaseModel], mode: Mode) -> str:
    cached = _SCHEMAS.setdefault(model, {})
    text = cached.get(mode)
    if text is None:
        text = cached[mode] = _compute(model, mode)
    return text


def prefetch_schemas(wanted: list[tuple[type[BaseModel], Mode]]) -> None:
    """Compute many schemas at once, half of them in a forked child process.

    Pydantic's schema generation dominates the generation of large designs and runs on one
    core; the design's classes cannot be pickled (they live in a module of one load), but a
    forked child inherits them. Where ``fork`` is missing, or for few models, nothing happens
    here and schemas are computed one by one when asked for.
    """
    pending = [
        (model, mode)
        for model, mode in dict.fromkeys(wanted)
        if mode not in _SCHEMAS.get(model, {})
    ]
    if len(pending) < _PARALLEL_THRESHOLD or not hasattr(os, "fork"):
        return
    mine, theirs = pending[: len(pending) // 2], pending[len(pending) // 2 :]
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: compute its half, send it back as JSON lines, exit at once
        os.close(read_end)
        status = 0
        try:
            lines = []
            for model, mode in theirs:
                try:
                    lines.append(json.dumps(_compute(model, mode)))
                except SchemaProblem:
                    lines.append("null")  # the parent computes it again and reports it
            # Written only at the end: a pipe holds 64 KiB, and the parent reads only once
            # its own half is done.
            with os.fdopen(write_end, "w") as out:
                out.write("\n".join(lines) + "\n")
        except BaseException:
            status = 1
        os._exit(status)
    os.close(write_end)
    for model, mode in mine:
        with contextlib.suppress(SchemaProblem):
            _schema_text(model, mode)
    with os.fdopen(read_end) as results:
        lines = results.read().splitlines()
    _, status = os.waitpid(pid, 0)
    if status != 0 or len(lines) != len(theirs):
        return  # the child failed: the rest is computed one by one when asked for
    for (model, mode), line in zip(theirs, lines, strict=True):
        text = json.loads(line)
        if text is not None:
            _SCHEMAS.setdefault(model, {})[mode] = text


def model_schema(model: type[BaseModel], mode: Mode) -> dict[str, Any]:
    """A fresh copy of ``model``'s JSON Schema, computed once per model and mode (the
    validator and the generator both need it, and pydantic's schema generation is slow)."""
    value: dict[str, Any] = json.loads(_schema_text(model, mode))
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
