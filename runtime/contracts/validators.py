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
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from fractions import Fraction
from typing import Any

import jsonschema  # type: ignore[import-untyped, unused-ignore]
from jsonschema._utils import equal  # type: ignore[import-untyped, unused-ignore]
from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped, unused-ignore]

from agentgen.runtime.contracts.exact_numbers import ExactNumber, decimal_of
from agentgen.runtime.contracts.json_equality import identity
from agentgen.runtime.contracts.limits import MAX_VALIDATION_STEPS
from agentgen.runtime.contracts.regex import PatternError, search

__all__ = ["RE2Validator", "ValidationBudgetError", "validation_budget"]


class ValidationBudgetError(Exception):
    """Validating one value took more than :data:`~.limits.MAX_VALIDATION_STEPS` keyword
    evaluations (a schema applying itself several times to the same part of the value)."""


#: Keyword evaluations left to the validation under way (None: no budget, outside one).
_STEPS: ContextVar[list[int] | None] = ContextVar("agentgen_validation_steps", default=None)


@contextmanager
def validation_budget() -> Iterator[None]:
    """Hold the validations run inside to :data:`~.limits.MAX_VALIDATION_STEPS` keyword
    evaluations in all: past it, the keyword under way raises :class:`ValidationBudgetError`.

    Inspection refuses schemas whose references fan out (:mod:`.schema_inspection`), but a
    recursive schema that applies itself twice to the same property is only a few bytes and
    takes 2**depth evaluations for a value ``depth`` levels deep (12 levels: 2 s, 20: minutes):
    how much work a schema needs depends on the value, so the value's validation is what is
    bounded."""
    token = _STEPS.set([MAX_VALIDATION_STEPS])
    try:
        yield
    finally:
        _STEPS.reset(token)


def _spend() -> None:
    left = _STEPS.get()
    if left is not None:
        left[0] -= 1
        if left[0] < 0:
            raise ValidationBudgetError(
                f"validating it took more than {MAX_VALIDATION_STEPS} steps (the limit; a "
                "step is a schema keyword applied to a part of the value, or an error passed "
                "on by one): the tool's schema applies parts of itself several times to the "
                "same part of the value"
            )


def _passed_on(errors: Any) -> Iterator[Any]:
    for error in errors:
        _spend()
        yield error


def _counted(function: Callable[..., Any]) -> Callable[..., Any]:
    """The keyword, spending one step per evaluation and one per error it passes on (errors of
    nested subschemas are passed on by every keyword above them: building and passing them
    on is most of the work of a schema that applies itself many times)."""

    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _spend()
        errors = function(validator, value, instance, schema)
        return None if errors is None else _passed_on(errors)

    return keyword


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


_VALUES = reprlib.Repr()
_VALUES.maxlist = _VALUES.maxtuple = 10
_VALUES.maxstring = _VALUES.maxother = 80


#: Identities of the enums validated lately, by ``id`` of the schema's list (kept with the list,
#: so that the ``id`` of a list still held cannot be another list's): a schema's enum is
#: turned into a set once, not once per value checked.
_ENUM_SETS: dict[int, tuple[Any, frozenset[Hashable]]] = {}
_ENUM_SETS_KEPT = 128
_ENUM_SETS_LOCK = threading.Lock()


def _enum_identities(enums: Any) -> frozenset[Hashable]:
    with _ENUM_SETS_LOCK:
        kept = _ENUM_SETS.get(id(enums))
        if kept is not None and kept[0] is enums:
            return kept[1]
    found = frozenset(identity(each) for each in enums)
    with _ENUM_SETS_LOCK:
        if len(_ENUM_SETS) >= _ENUM_SETS_KEPT:
            del _ENUM_SETS[next(iter(_ENUM_SETS))]
        _ENUM_SETS[id(enums)] = (enums, found)
    return found


def _enum(validator: Any, enums: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``enum``, decided by one set lookup (:mod:`.json_equality`: a comparison
    with every value made a 40,000-value enum cost 25 ms per value checked), and whose message
    no longer lists every value: the repr of a 15,000 value enum, built for each refused
    value, was a quarter of a megabyte of tool error."""
    if identity(instance) not in _enum_identities(enums):
        listed = _VALUES.repr(enums)
        if isinstance(enums, list) and len(enums) > _VALUES.maxlist:
            listed += f" ({len(enums)} values)"
        yield ValidationError(f"{_SHORT.repr(instance)} is not one of {listed}")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``uniqueItems``, decided by hashing each item's identity
    (:mod:`.json_equality`): jsonschema compares every pair of items it cannot sort (objects),
    and 2,000 small objects took seconds; its message showed the whole array."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: dict[Hashable, int] = {}
    for index, item in enumerate(instance):
        first = seen.setdefault(identity(item), index)
        if first != index:
            yield ValidationError(
                f"{_VALUES.repr(instance)} has non-unique elements (items {first} and {index} "
                "are equal)"
            )
            return


def _const(validator: Any, const: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``const``, its value shown shortened."""
    if not equal(instance, const):
        yield ValidationError(f"{_VALUES.repr(const)} was expected")


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """``multipleOf`` decided exactly, each number counting as the decimal written for it
    (``0.01`` is one hundredth; a double holds the shortest decimal that reads back as it).
    jsonschema divides doubles: 19.99 / 0.01 is 1998.9999999999998, so ``"multipleOf": 0.01``
    (what pydantic writes for ``Field(multiple_of=0.01)``) refused prices a compiled tool
    takes; and it raised ``OverflowError`` for an integer beyond a double's range."""
    if not validator.is_type(instance, "number"):
        return
    if isinstance(instance, ExactNumber):
        # Nonzero, and smaller than the divisor: not a multiple. Checked first, since the
        # fraction of ``1e-999999999`` is a billion digits.
        bound = decimal_of(divisor)
        small = bound is not None and abs(instance.exact) < abs(bound)
        if small or (Fraction(instance.exact) / _exact(divisor)).denominator != 1:
            yield ValidationError(f"{instance!r} is not a multiple of {divisor!r}")
    elif (_exact(instance) / _exact(divisor)).denominator != 1:
        yield ValidationError(f"{instance!r} is not a multiple of {divisor!r}")


def _exact(number: Any) -> Fraction:
    return Fraction(repr(number)) if isinstance(number, float) else Fraction(number)


_KEYWORDS = {
    **jsonschema.Draft202012Validator.VALIDATORS,
    "multipleOf": _multiple_of,
    "enum": _enum,
    "const": _const,
    "uniqueItems": _unique_items,
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "unevaluatedProperties": _unevaluated_properties,
}
#: Every keyword evaluation counts one step of :func:`validation_budget`.
RE2Validator: Any = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    validators={name: _counted(function) for name, function in _KEYWORDS.items()},
)
