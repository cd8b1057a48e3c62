"""``enum``, ``uniqueItems`` and ``multipleOf`` of schema-typed tools: JSON Schema's meaning,
decided in work linear in the value (enum and uniqueItems) and exactly (multipleOf).

jsonschema compared values one pair at a time with its ``equal()``: every value of an enum for
each value checked (a 40,000-value enum cost 25 ms per array item) and every pair of items for
``uniqueItems`` over objects (2,000 objects: seconds), each counted as one step of the
validation budget. The work is counted here as comparisons made, never timed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import jsonschema._utils
import pytest
from pydantic import BaseModel, Field

from agentgen.runtime.contracts import validators
from agentgen.runtime.contracts.codecs import ModelCodec, PayloadError, SchemaCodec, parse_arguments
from agentgen.runtime.contracts.json_equality import identity


@pytest.fixture
def comparisons(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many pairs jsonschema's ``equal()`` compares, wherever a keyword calls it."""
    count = [0]
    real = jsonschema._utils.equal

    def counted(one: Any, two: Any) -> bool:
        count[0] += 1
        return bool(real(one, two))

    monkeypatch.setattr(jsonschema._utils, "equal", counted)
    monkeypatch.setattr(validators, "equal", counted)
    yield count


def decode_arguments(schema: dict[str, Any], arguments: Any) -> Any:
    codec = SchemaCodec(schema, "arguments of sheet.write")
    return codec.decode_arguments(parse_arguments(json.dumps(arguments), codec.what))


# --------------------------------------------------------------------------- uniqueItems


def test_unique_items_over_objects_compares_no_pairs(comparisons: list[int]) -> None:
    schema = {"type": "object", "properties": {"rows": {"type": "array", "uniqueItems": True}}}
    rows = [{"a": i} for i in range(600)]
    assert decode_arguments(schema, {"rows": rows}) == {"rows": rows}
    # jsonschema compared every pair: 179,700 comparisons for 600 objects.
    assert comparisons[0] == 0


def test_a_repeated_object_is_found_and_named_whatever_its_key_order() -> None:
    schema = {"type": "object", "properties": {"rows": {"type": "array", "uniqueItems": True}}}
    rows: list[Any] = [{"a": i, "b": [i]} for i in range(500)]
    rows.append({"b": [7.0], "a": 7})
    with pytest.raises(PayloadError) as raised:
        decode_arguments(schema, {"rows": rows})
    (issue,) = raised.value.issues
    assert issue.path == "rows"
    assert "(items 7 and 500 are equal)" in issue.message
    assert len(issue.message) < 400  # the array is shown shortened, not in full


@pytest.mark.parametrize(
    ("items", "unique"),
    [
        ([1, 1.0], False),
        ([Decimal("1.0"), 1], False),
        ([True, 1], True),
        ([False, 0], True),
        ([None, False], True),
        (["1", 1], True),
        ([[1], [1.0]], False),
        ([[True], [1]], True),
        ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False),
        ([{"a": 1}, {"a": 1, "b": 2}], True),
        ([{"a": [True]}, {"a": [1]}], True),
        ([0.5, 0.25, 0.5], False),
        ([], True),
    ],
)
def test_unique_items_keeps_json_schemas_equality(items: list[Any], unique: bool) -> None:
    codec = SchemaCodec({"type": "array", "uniqueItems": True}, "value")
    reference = jsonschema.Draft202012Validator({"type": "array", "uniqueItems": True})
    assert reference.is_valid(items) == unique  # jsonschema's own verdict
    if unique:
        codec.check(items)
    else:
        with pytest.raises(PayloadError, match="non-unique elements"):
            codec.check(items)


def test_unique_items_false_takes_repeats() -> None:
    SchemaCodec({"type": "array", "uniqueItems": False}, "value").check([{"a": 1}, {"a": 1}])


# --------------------------------------------------------------------------- enum


def test_enum_membership_compares_no_values(comparisons: list[int]) -> None:
    schema = {
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"enum": list(range(3000))}}},
    }
    assert decode_arguments(schema, {"ids": [2999] * 50}) == {"ids": [2999] * 50}
    # jsonschema compared each item with every value: 150,000 comparisons.
    assert comparisons[0] == 0


@pytest.mark.parametrize(
    ("enum", "value", "member"),
    [
        ([1, 2], 1.0, True),
        ([1.0], 1, True),
        ([1], True, False),
        ([True], 1, False),
        ([0], False, False),
        ([None], False, False),
        (["1"], 1, False),
        ([[1, {"a": 2.0}]], [1.0, {"a": 2}], True),
        ([{"a": 1, "b": 2}], {"b": 2, "a": 1}, True),
        ([{"a": 1}], {"a": 1, "b": 2}, False),
        ([[1, 2]], [2, 1], False),
        ([0.1], 0.1, True),
    ],
)
def test_enum_keeps_json_schemas_equality(enum: list[Any], value: Any, member: bool) -> None:
    reference = jsonschema.Draft202012Validator({"enum": enum})
    assert reference.is_valid(value) == member  # jsonschema's own verdict
    codec = SchemaCodec({"enum": enum}, "value")
    if member:
        codec.check(value)
    else:
        with pytest.raises(PayloadError, match="is not one of"):
            codec.check(value)


def test_an_enum_changed_between_validators_is_read_again() -> None:
    # The enum's set is kept by the identity of the schema's list: another list (another
    # schema) is another set, even when an earlier list was freed.
    for allowed in range(20):
        codec = SchemaCodec({"enum": [allowed]}, "value")
        codec.check(allowed)
        with pytest.raises(PayloadError):
            codec.check(allowed + 1)


def test_identities_are_equal_exactly_when_json_schema_says_so() -> None:
    assert identity({"a": [1, 2.0]}) == identity({"a": [1.0, 2]})
    assert identity(True) != identity(1)
    assert identity([]) != identity({})
    assert identity(None) != identity(False)
    assert identity("a") != identity(["a"])


# --------------------------------------------------------------------------- multipleOf


class Buy(BaseModel):
    price: float = Field(multiple_of=0.01)


@pytest.mark.parametrize("price", ["19.99", "0.07", "4.35", "0.29", "1e2", "-3.10", "0"])
def test_multiple_of_a_decimal_takes_what_pydantic_takes(price: str) -> None:
    # pydantic writes "multipleOf": 0.01 for Field(multiple_of=0.01); jsonschema's float
    # quotient 19.99 / 0.01 = 1998.9999999999998 refused it for the registry tool.
    text = f'{{"price": {price}}}'
    ModelCodec(Buy, "arguments of shop.buy").decode_arguments(parse_arguments(text, "a"))
    codec = SchemaCodec(Buy.model_json_schema(), "arguments of shop.buy")
    value = parse_arguments(text, "a")
    assert codec.decode_arguments(value) == value
    codec.check(value)


@pytest.mark.parametrize("price", ["2.675", "0.001", "19.991", "1e-3"])
def test_multiple_of_still_refuses_other_numbers(price: str) -> None:
    codec = SchemaCodec(Buy.model_json_schema(), "arguments of shop.buy")
    with pytest.raises(PayloadError, match=r"price: .* is not a multiple of 0\.01"):
        codec.decode_arguments(parse_arguments(f'{{"price": {price}}}', "a"))


@pytest.mark.parametrize(
    ("divisor", "number", "multiple"),
    [
        (3, "9", True),
        (3, "10", False),
        (0.5, "1e400", True),
        (7, "1" + "0" * 400, False),
        (2.5, "7.5", True),
        (0.1, "0.3", True),
    ],
)
def test_multiple_of_integers_and_numbers_beyond_a_double(
    divisor: Any, number: str, multiple: bool
) -> None:
    codec = SchemaCodec({"multipleOf": divisor}, "value")
    if multiple:
        codec.decode(number)
    else:
        with pytest.raises(PayloadError, match="is not a multiple of"):
            codec.decode(number)
