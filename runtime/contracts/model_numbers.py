"""A compiled tool's arguments, their numbers made ready for pydantic's strict JSON mode.

Arguments are parsed exactly (non-integers as ``Decimal``) and then validated by the tool's
generated pydantic model in strict mode, which nothing converts. Two of JSON's numbers do not
survive that as JSON Schema reads them:

- ``10.0`` where the model wants an ``int``: the schema advertised to the model says
  ``"type": "integer"``, which in JSON Schema 2020-12 includes ``10.0`` (registry tools take it),
  but strict pydantic refuses any number written with a point. Where the model's schema allows
  an integer and no other number, an integral number is handed over as the integer it is.
- ``1e400`` anywhere else: beyond a double's range, pydantic reads it as infinity (JSON has no
  infinity), the tool ran with ``inf`` and a person confirmed ``null``. It is refused, naming
  where it is.

pydantic also reads a number for a ``Decimal`` field as a double first:
``12345678901234567.89`` became ``Decimal('12345678901234568')``, and the tool ran with it.
Such a field gets the number as written (:func:`exact_decimals`).

And one of JSON's booleans: pydantic compares a ``Literal`` (or an integer enum) with Python's
``==``, for which ``True`` is ``1``, so ``Literal[1]`` took ``true`` and ``Literal[True]`` took
``1``, strict mode or not, and ran with the literal. Where the model's schema holds such values
in an ``enum`` or ``const``, they are compared as JSON Schema compares them first
(:func:`literal_mismatch`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from agentgen.runtime.contracts.json_equality import identity
from agentgen.runtime.contracts.subschemas import item_subschemas
from agentgen.runtime.json_pointer import resolve_reference

__all__ = [
    "Beyond",
    "Place",
    "decimals_as_numbers",
    "exact_decimals",
    "has_literals",
    "literal_mismatch",
    "prepared",
]

#: Keys and indexes from the arguments' root to a value.
Place = tuple[str | int, ...]

#: Where a number beyond a double's range is, and the number.
Beyond = tuple[Place, Decimal]

#: Digits of the largest integer handed over (Python's limit for writing integers as text).
_MAX_DIGITS = 4300

#: Subschemas one position may combine (``anyOf`` of ``$ref`` of ``allOf``...): a generated
#: model's schema has a handful; past this, the position is read as taking any number.
_MAX_BRANCHES = 256


def prepared(value: Any, schema: Mapping[str, Any] | None) -> tuple[Any, Beyond | None]:
    """``value`` with every integral number at an integer-only position of ``schema`` (the
    model's JSON Schema; None when it has none) as an ``int``, and the first number beyond
    a double's range left, with its place (None when there is none). ``value`` itself is not
    changed; one without non-integer numbers is returned as it is."""
    if not _has_decimal(value):
        return value, None
    reader = _Reader(schema)
    return reader.walk(value, [schema] if schema is not None else [], ())


def _has_decimal(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, Decimal):
            return True
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


class _Reader:
    def __init__(self, root: Mapping[str, Any] | None) -> None:
        self.root = root
        self.beyond: Beyond | None = None

    def walk(self, value: Any, schemas: list[Any], place: Place) -> tuple[Any, Beyond | None]:
        return self._walk(value, schemas, place), self.beyond

    def _walk(self, value: Any, schemas: list[Any], place: Place) -> Any:
        if isinstance(value, Decimal):
            return self._number(value, schemas, place)
        if isinstance(value, dict):
            branches = self._branches(schemas)
            return {
                key: self._walk(item, self._property(branches, key), (*place, key))
                for key, item in value.items()
            }
        if isinstance(value, list):
            branches = self._branches(schemas)
            return [
                self._walk(item, item_subschemas(branches, index), (*place, index))
                for index, item in enumerate(value)
            ]
        return value

    def _number(self, value: Decimal, schemas: list[Any], place: Place) -> Any:
        if (
            value == value.to_integral_value()
            and value.adjusted() < _MAX_DIGITS
            and self._integer_only(schemas)
        ):
            return int(value)
        if math.isinf(float(value)) and self.beyond is None:
            self.beyond = (place, value)
        return value

    def _integer_only(self, schemas: list[Any]) -> bool:
        types: set[str] = set()
        for branch in self._branches(schemas):
            if not isinstance(branch, Mapping) or _combines(branch):
                continue
            found = branch.get("type")
            if found is None:
                return False  # any type, numbers with a point included
            types.update([found] if isinstance(found, str) else found)
        return "integer" in types and "number" not in types

    def _branches(self, schemas: list[Any]) -> list[Any]:
        """The schemas that apply at one position: the given ones and every schema they
        combine (``$ref``, ``allOf``, ``anyOf``, ``oneOf``), references resolved."""
        found: list[Any] = []
        seen: set[int] = set()
        stack = list(schemas)
        while stack and len(found) < _MAX_BRANCHES:
            schema = stack.pop()
            if not isinstance(schema, Mapping) or id(schema) in seen:
                continue
            seen.add(id(schema))
            found.append(schema)
            reference = schema.get("$ref")
            if isinstance(reference, str):
                stack.append(self._resolve(reference))
            for keyword in ("allOf", "anyOf", "oneOf"):
                members = schema.get(keyword)
                if isinstance(members, list):
                    stack.extend(members)
        return found

    def _resolve(self, reference: str) -> Any:
        try:
            return resolve_reference(self.root, reference)
        except LookupError:  # pydantic's references resolve; any other reads as no schema
            return None

    @staticmethod
    def _property(branches: list[Any], key: str) -> list[Any]:
        found = []
        for branch in branches:
            properties = branch.get("properties")
            if isinstance(properties, Mapping) and key in properties:
                found.append(properties[key])
                continue
            additional = branch.get("additionalProperties")
            if isinstance(additional, Mapping):
                found.append(additional)
        return found


def _combines(schema: Mapping[str, Any]) -> bool:
    """Whether the schema only stands for the schemas it combines (its own ``type``, if any,
    is read with theirs)."""
    return "type" not in schema and any(
        keyword in schema for keyword in ("$ref", "allOf", "anyOf", "oneOf")
    )


def decimals_as_numbers(payload: BaseModel, value: Any) -> Any:
    """``value``, the JSON of ``payload`` parsed exactly, with each string pydantic wrote for a
    finite ``Decimal`` as that number again: the model wrote a number, and the payload that
    executes is what a person confirms (a template's ``{{ amount * 1.2 }}`` failed on the
    string) and what an agent tool's child run receives. ``value`` is returned as it is for a
    model without ``Decimal`` fields."""
    if not _holds_decimal(type(payload)):
        return value
    python = type(payload).__pydantic_serializer__.to_python(payload, by_alias=True)
    return _numbers_kept(value, python)


def _numbers_kept(value: Any, python: Any) -> Any:
    if isinstance(python, Decimal):
        return python if isinstance(value, str) and python.is_finite() else value
    if isinstance(value, dict) and isinstance(python, Mapping):
        return {
            key: _numbers_kept(item, python[key]) if key in python else item
            for key, item in value.items()
        }
    if isinstance(value, list) and isinstance(python, list | tuple) and len(python) == len(value):
        return [_numbers_kept(item, each) for item, each in zip(value, python, strict=True)]
    return value


@lru_cache(maxsize=1024)
def _holds_decimal(model: type[BaseModel]) -> bool:
    """Whether the model's core schema has a ``decimal`` anywhere (nested models included)."""
    stack: list[Any] = [model.__pydantic_core_schema__]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Mapping):
            if node.get("type") == "decimal":
                return True
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return False


def has_literals(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` has an ``enum`` or ``const`` holding a number or a boolean (the
    values Python's ``==`` mixes up): only then are arguments read with
    :func:`literal_mismatch`."""
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            values = node.get("enum")
            found = list(values) if isinstance(values, list) else []
            if "const" in node:
                found.append(node["const"])
            if any(isinstance(each, int | float) for each in found):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def literal_mismatch(value: Any, schema: Mapping[str, Any]) -> tuple[Place, Any] | None:
    """The place and value of the first boolean or number of ``value`` at a position of
    ``schema`` (the model's JSON Schema) whose ``enum``/``const`` it is not in, as JSON Schema
    compares (``true`` is not ``1``, ``1.0`` is ``1``), when nothing else there takes it; or
    None. What each position's schemas allow is worked out once per call, not per value: a
    list of 5,000 literals costs 5,000 lookups."""
    reader = _Reader(schema)
    positions: dict[tuple[int, ...], list[Any]] = {}
    verdicts: dict[tuple[tuple[int, ...], Any], bool] = {}

    def position(schemas: list[Any]) -> tuple[tuple[int, ...], list[Any]]:
        key = tuple(map(id, schemas))
        held = positions.get(key)
        if held is None:
            held = positions[key] = reader._branches(schemas)
        return key, held

    def allowed(key: tuple[int, ...], held: list[Any], item: Any) -> bool:
        verdict_key = (key, identity(item))
        verdict = verdicts.get(verdict_key)
        if verdict is None:
            verdict = verdicts[verdict_key] = _allowed(held, item)
        return verdict

    # Places are linked (parent, key) pairs, spelled out only for the value reported.
    properties: dict[tuple[tuple[int, ...], str], list[Any]] = {}

    def property_of(key: tuple[int, ...], held: list[Any], name: str) -> list[Any]:
        found = properties.get((key, name))
        if found is None:
            found = properties[key, name] = reader._property(held, name)
        return found

    if not isinstance(value, dict | list):
        return None
    stack: list[tuple[Any, list[Any], Any]] = [(value, [schema], None)]
    while stack:
        node, schemas, link = stack.pop()
        at, held = position(schemas)
        children: Iterable[tuple[str | int, Any, list[Any]]]
        if isinstance(node, dict):
            children = ((k, item, property_of(at, held, k)) for k, item in node.items())
        elif any("prefixItems" in branch for branch in held):
            children = ((i, item, item_subschemas(held, i)) for i, item in enumerate(node))
        else:
            items = item_subschemas(held, len(node))
            children = ((i, item, items) for i, item in enumerate(node))
        for step, item, subschemas in children:
            if not subschemas:
                continue
            if isinstance(item, dict | list):
                stack.append((item, subschemas, (link, step)))
            elif isinstance(item, int | Decimal):
                key, sub = position(subschemas)
                if not allowed(key, sub, item):
                    return _spelled((link, step)), item
    return None


def _spelled(link: Any) -> Place:
    steps: list[str | int] = []
    while link is not None:
        link, step = link
        steps.append(step)
    return tuple(reversed(steps))


def _allowed(branches: list[Any], value: int | Decimal) -> bool:
    if len(branches) >= _MAX_BRANCHES:  # not all read: pydantic judges alone
        return True
    leaves = [branch for branch in branches if not _combines(branch)]
    return not any(_listed(leaf) for leaf in leaves) or any(_admits(leaf, value) for leaf in leaves)


def _listed(schema: Mapping[str, Any]) -> bool:
    return "const" in schema or isinstance(schema.get("enum"), list)


def _admits(schema: Mapping[str, Any], value: int | Decimal) -> bool:
    """Whether ``schema`` may take ``value`` (a boolean or a number): its ``type`` allows it,
    and its ``enum``/``const``, if any, holds it as JSON Schema compares."""
    if isinstance(value, bool):
        kind = "boolean"
    elif isinstance(value, int) or value == value.to_integral_value():
        kind = "integer"
    else:
        kind = "number"
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else types
        if kind not in allowed and not (kind == "integer" and "number" in allowed):
            return False
    if "const" in schema:
        return identity(schema["const"]) == identity(value)
    values = schema.get("enum")
    if isinstance(values, list):
        return identity(value) in {identity(each) for each in values}
    return True


def exact_decimals(payload: BaseModel, value: Any) -> dict[str, Any] | None:
    """The fields of ``payload`` (validated from ``value``, the arguments parsed exactly) as
    pydantic's python values, each ``Decimal`` pydantic read through a double replaced by the
    number written in ``value``, for the model to validate again; None when there is none
    (a model without ``Decimal`` fields, or numbers a double holds)."""
    if not _holds_decimal(type(payload)) or not _has_decimal(value):
        return None
    python = type(payload).__pydantic_serializer__.to_python(
        payload, by_alias=True, exclude_unset=True
    )
    changed = [False]

    def walk(held: Any, written: Any) -> Any:
        if isinstance(held, Decimal):
            if isinstance(written, Decimal) and written != held and held.is_finite():
                changed[0] = True
                return written
            return held
        if isinstance(held, dict) and isinstance(written, dict):
            return {
                key: walk(item, written[key]) if key in written else item
                for key, item in held.items()
            }
        if isinstance(held, list) and isinstance(written, list) and len(held) == len(written):
            return [walk(item, each) for item, each in zip(held, written, strict=True)]
        return held

    fixed = walk(python, value)
    return fixed if changed[0] and isinstance(fixed, dict) else None
