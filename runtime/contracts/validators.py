"""The JSON Schema (2020-12) validator of schema-typed tools: jsonschema with RE2 patterns.

jsonschema matches ``pattern``, ``patternProperties`` keys, and the keys ``additionalProperties``
and ``unevaluatedProperties`` must skip, with Python's backtracking ``re``; here those four
keywords match with RE2 instead (see :mod:`.regex`): Python's ``re`` never matches a pattern
from a schema against a value. (Checking a schema against the meta-schema compiles its
patterns, :mod:`.schema_check`; every pattern was first checked to run on RE2,
:mod:`.schema_inspection`.)
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterator
from typing import Any

import jsonschema  # type: ignore[import-untyped, unused-ignore]
from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped, unused-ignore]

from agentgen.runtime.contracts.regex import PatternError, search

__all__ = ["RE2Validator"]

_SHORT = reprlib.Repr()
_SHORT.maxstring = 80
_SHORT.maxother = 80


def _matches(pattern: str, text: str) -> bool:
    try:
        return search(pattern, text)
    except PatternError as exc:
        raise ValidationError(f"pattern {pattern!r} {exc}") from None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _matches(pattern, instance):
        yield ValidationError(f"{_SHORT.repr(instance)} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _unexpected(keys: list[str]) -> str:
    verb = "was" if len(keys) == 1 else "were"
    return f"{', '.join(_SHORT.repr(key) for key in keys)} {verb} unexpected"


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key
        for key in instance
        if key not in properties and not any(_matches(pattern, key) for pattern in patterns)
    ]
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif not additional and extras:
        extras.sort()
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            listed = ", ".join(repr(pattern) for pattern in sorted(patterns))
            yield ValidationError(
                f"{', '.join(_SHORT.repr(key) for key in extras)} {verb} not match any of the "
                f"regexes: {listed}"
            )
        else:
            yield ValidationError(f"Additional properties are not allowed ({_unexpected(extras)})")


def _valid(errors: Iterator[Any]) -> bool:
    return next(errors, None) is None


def _evaluated_keys(validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
    """The keys of ``instance`` that ``schema`` evaluates in place (JSON Schema 2020-12's
    annotation collection for ``unevaluatedProperties``), patterns matched with RE2."""
    if not isinstance(schema, dict):
        return set()
    keys: set[str] = set()
    for keyword in ("$ref", "$dynamicRef"):
        reference = schema.get(keyword)
        if isinstance(reference, str):
            # jsonschema's own resolver (pinned below 5), as its keywords use it.
            resolved = validator._resolver.lookup(reference)
            target = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            keys |= _evaluated_keys(target, instance, resolved.contents)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        keys |= properties.keys() & instance.keys()
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        keys |= {key for key in instance if any(_matches(p, key) for p in patterns)}
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if keyword in schema:
            subschema = schema[keyword]
            keys |= {
                key
                for key, value in instance.items()
                if _valid(validator.descend(value, subschema))
            }
    for name, subschema in (schema.get("dependentSchemas") or {}).items():
        if name in instance:
            keys |= _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "anyOf", "oneOf"):
        for subschema in schema.get(keyword) or []:
            if _valid(validator.descend(instance, subschema)):
                keys |= _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if _valid(validator.descend(instance, schema["if"])):
            keys |= _evaluated_keys(validator, instance, schema["if"])
            keys |= _evaluated_keys(validator, instance, schema.get("then"))
        else:
            keys |= _evaluated_keys(validator, instance, schema.get("else"))
    return keys


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    failing = [
        key
        for key, value in instance.items()
        if key not in evaluated
        and not _valid(validator.descend(value, unevaluated, path=key, schema_path=key))
    ]
    if not failing:
        return
    if unevaluated is False:
        failing.sort()
        yield ValidationError(f"Unevaluated properties are not allowed ({_unexpected(failing)})")
    else:
        yield ValidationError(
            "Unevaluated properties are not valid under the given schema "
            f"({_unexpected(failing).replace('unexpected', 'unevaluated and invalid')})"
        )


RE2Validator: Any = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    validators={
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "unevaluatedProperties": _unevaluated_properties,
    },
)
