"""Checking request bodies against the SDKs' own parameter types.

``pydantic.TypeAdapter`` over an SDK ``TypedDict`` enforces required keys, literals and union
membership, but it ignores keys the ``TypedDict`` does not declare. :func:`unknown_keys`
walks the value alongside its type and reports every such key, so that together they prove a
body is exactly what the SDK describes: nothing missing, nothing invented.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin, get_type_hints

import typing_extensions
from pydantic import TypeAdapter, ValidationError
from typing_extensions import is_typeddict

# Qualifiers that wrap a field's type without changing what values it accepts.
_WRAPPERS = {typing.Required, typing.NotRequired, typing.Annotated, typing_extensions.ReadOnly}


def _unwrap(annotation: Any) -> Any:
    while get_origin(annotation) in _WRAPPERS:
        annotation = get_args(annotation)[0]
    return annotation


@functools.cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    return get_type_hints(cls, include_extras=True)


def _valid(value: Any, annotation: Any) -> bool:
    try:
        _adapter(annotation).validate_python(value)
    except ValidationError:
        return False
    return True


def unknown_keys(value: Any, annotation: Any, path: str = "$") -> list[str]:
    """Paths of keys in ``value`` that ``annotation`` does not declare (empty if none)."""
    annotation = _unwrap(annotation)
    if is_typeddict(annotation):
        if not isinstance(value, Mapping):
            return [f"{path}: expected an object for {annotation.__name__}"]
        hints = _hints(annotation)
        problems = [
            f"{path}.{key}: not a field of {annotation.__name__}"
            for key in value
            if key not in hints
        ]
        for key, item in value.items():
            if key in hints:
                problems += unknown_keys(item, hints[key], f"{path}.{key}")
        return problems
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        fallback: list[str] | None = None
        for member in get_args(annotation):
            if not _valid(value, member):
                continue
            problems = unknown_keys(value, member, path)
            if not problems:
                return []
            fallback = fallback if fallback is not None else problems
        return fallback if fallback is not None else [f"{path}: matches no member of the union"]
    args = get_args(annotation)
    if isinstance(value, list) and len(args) == 1:
        problems = []
        for index, item in enumerate(value):
            problems += unknown_keys(item, args[0], f"{path}[{index}]")
        return problems
    if isinstance(value, Mapping) and len(args) == 2:
        problems = []
        for key, item in value.items():
            problems += unknown_keys(item, args[1], f"{path}.{key}")
        return problems
    return []


def conformance_problems(value: Any, annotation: Any) -> list[str]:
    """Everything wrong with ``value`` as an ``annotation``: validation errors, unknown keys."""
    try:
        _adapter(annotation).validate_python(value)
    except ValidationError as exc:
        return [str(exc)]
    return unknown_keys(value, annotation)


def assert_conforms(value: Any, annotation: Any) -> None:
    problems = conformance_problems(value, annotation)
    assert not problems, "\n".join(problems)
