"""Schema-typed values are validated with their numbers as written, not rounded to doubles.

A registry or MCP tool's arguments keep their numbers exact and go out as written, but were
validated as doubles: ``0.1000000000000000055`` passed ``"maximum": 0.1``,
``9007199254740993.5`` passed ``"type": "integer"`` and ``9007199254740993.0`` a maximum of
``9007199254740992``; the person confirming, and the provider, then saw the number written.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from agentgen.runtime.contracts.codecs import PayloadError, SchemaCodec, parse_arguments
from agentgen.runtime.contracts.exact_numbers import ExactNumber


def decode_arguments(schema: dict[str, Any], number: str) -> Any:
    codec = SchemaCodec({"type": "object", "properties": {"x": schema}}, "arguments of sheet.write")
    return codec.decode_arguments(parse_arguments(f'{{"x": {number}}}', codec.what))


@pytest.mark.parametrize(
    ("schema", "number", "message"),
    [
        ({"maximum": 0.1}, "0.1000000000000000055", "greater than the maximum of 0.1"),
        ({"exclusiveMaximum": 0.1}, "0.1000000000000000055", "greater than or equal"),
        ({"minimum": 0.3}, "0.29999999999999998", "less than the minimum of 0.3"),
        ({"type": "integer"}, "9007199254740993.5", "is not of type 'integer'"),
        ({"type": "integer"}, "1.0000000000000001", "is not of type 'integer'"),
        ({"type": "integer"}, "1." + "0" * 400 + "1e400", "is not of type 'integer'"),
        ({"maximum": 9007199254740992}, "9007199254740993.0", "greater than the maximum"),
        ({"enum": [1, 2]}, "1.0000000000000001", "is not one of"),
        ({"const": 1}, "1.0000000000000001", "1 was expected"),
        ({"multipleOf": 0.1}, "0.1000000000000000055", "is not a multiple of 0.1"),
        ({"multipleOf": 0.1}, "1e-999999999", "is not a multiple of 0.1"),
        ({"exclusiveMinimum": 0.5}, "0.50000000000000001", None),
        ({"maximum": 0}, "1e-400", "greater than the maximum of 0"),
    ],
)
def test_numbers_a_double_cannot_hold_are_judged_as_written(
    schema: dict[str, Any], number: str, message: str | None
) -> None:
    if message is None:
        assert decode_arguments(schema, number) == {"x": Decimal(number)}
        return
    with pytest.raises(PayloadError, match=f"x: .*{message}"):
        decode_arguments(schema, number)


@pytest.mark.parametrize(
    ("schema", "number"),
    [
        ({"maximum": 0.1}, "0.1"),
        ({"maximum": 0.1}, "0.10000000000000000000"),
        ({"type": "integer"}, "10.0"),
        ({"type": "integer", "maximum": 9007199254740993}, "9007199254740993.0"),
        ({"enum": [0.1, 1]}, "1.0"),
        ({"enum": [0.1, 1]}, "0.100000000000000000"),
        ({"const": 0.1}, "0.1"),
        ({"exclusiveMinimum": 0}, "1e-400"),
        ({"multipleOf": 0.01}, "19.990000000000000000"),
        ({"type": "number"}, "1." + "0" * 400 + "1e400"),
    ],
)
def test_numbers_as_written_pass_what_they_meet(schema: dict[str, Any], number: str) -> None:
    assert decode_arguments(schema, number) == {"x": Decimal(number)}


def test_unique_items_tells_exact_numbers_apart() -> None:
    schema = {"type": "array", "uniqueItems": True}
    assert decode_arguments(schema, "[0.1000000000000000055, 0.1]")
    with pytest.raises(PayloadError, match="items 0 and 1 are equal"):
        decode_arguments(schema, "[0.1000000000000000055, 0.10000000000000000550]")


def test_a_number_with_more_digits_than_validated_is_refused_naming_why() -> None:
    number = "0." + "3" * 5000
    with pytest.raises(PayloadError, match="too many digits to validate"):
        decode_arguments({"multipleOf": 0.1}, number)


def test_an_exact_number_is_never_equal_to_a_double_or_an_integer() -> None:
    near = ExactNumber.of(Decimal("0.1000000000000000055"))
    assert isinstance(near, ExactNumber)
    assert near != 0.1 and not near <= 0.1 and near > 0.1 and near < 0.2
    assert near != json.loads("0.1")
    assert near not in (0, True, False)
    assert type(ExactNumber.of(Decimal("19.99"))) is float
    assert type(ExactNumber.of(Decimal("19.990000000000000000"))) is float
    assert repr(near) == "0.1000000000000000055"
