"""Numbers of a value that a double cannot hold, validated as the decimals they are.

Schema-typed arguments and results keep their numbers exact (non-integers as ``Decimal``) and
are sent as written, but jsonschema compares them with the schema's numbers, which are doubles:
they are handed to it as doubles. A number a double holds only approximately was then judged
as the double: ``0.1000000000000000055`` passed ``"maximum": 0.1``, ``9007199254740993.5`` and
``1.0000000000000001`` were integers, and ``1e-400`` was 0; the call went out, and was
confirmed, with the number as written. Such a number becomes an :class:`ExactNumber`: a double
for every keyword that only asks whether it is a number, that compares, hashes and divides as
the decimal written (a schema's double counting, as ``multipleOf`` reads it, as the shortest
decimal that reads back as it: ``0.1`` is one tenth).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

__all__ = ["ExactNumber", "decimal_of"]


def decimal_of(number: Any) -> Decimal | None:
    """``number`` as the decimal it stands for (a double as its shortest decimal), or None
    when it is not a number (booleans are not numbers to JSON)."""
    if isinstance(number, ExactNumber):
        return number.exact
    if isinstance(number, bool):
        return None
    if isinstance(number, float):
        return Decimal(repr(number))
    if isinstance(number, int | Decimal):
        return Decimal(number)
    return None


class ExactNumber(float):
    """A non-integral JSON number that no double reads back as (made only by
    :meth:`of`, so it is never equal to a double or an integer), shown as written."""

    exact: Decimal

    @classmethod
    def of(cls, value: Decimal) -> float | ExactNumber:
        """``value`` as a double when the double reads back as the same decimal (almost every
        number a model writes: ``0.1``, ``19.99``, ``10.0``), else as an exact number. The
        caller has made integral numbers integers."""
        number = float(value)
        text = str(value)
        if len(text) <= 15 and "E" not in text:  # at most 15 digits: a double holds them
            return number
        if Decimal(repr(number)) == value:
            return number
        exact = super().__new__(cls, number)
        exact.exact = value
        return exact

    def __eq__(self, other: object) -> bool:
        found = decimal_of(other)
        return NotImplemented if found is None else self.exact == found

    def __ne__(self, other: object) -> bool:
        found = decimal_of(other)
        return NotImplemented if found is None else self.exact != found

    def __lt__(self, other: Any) -> bool:
        found = decimal_of(other)
        return NotImplemented if found is None else self.exact < found

    def __le__(self, other: Any) -> bool:
        found = decimal_of(other)
        return NotImplemented if found is None else self.exact <= found

    def __gt__(self, other: Any) -> bool:
        found = decimal_of(other)
        return NotImplemented if found is None else self.exact > found

    def __ge__(self, other: Any) -> bool:
        found = decimal_of(other)
        return NotImplemented if found is None else self.exact >= found

    def __hash__(self) -> int:
        return hash(self.exact)

    def is_integer(self) -> bool:
        return self.exact == self.exact.to_integral_value()

    def __repr__(self) -> str:
        return str(self.exact)

    __str__ = __repr__
