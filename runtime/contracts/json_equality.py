"""JSON values as JSON Schema equates them, in a form Python can hash.

``enum``, ``const`` and ``uniqueItems`` compare values the way JSON Schema 2020-12 says:
numbers by their value (``1`` equals ``1.0``), booleans apart from numbers (``true`` is not
``1``), arrays item by item, objects whatever the order of their keys. jsonschema decides these
with a Python ``equal()`` of one pair at a time: checking a value against a 40,000-value enum
made 40,000 comparisons, and ``uniqueItems`` over 2,000 objects two million (seconds of event
loop, both counted as one step of the validation budget). Comparing hashable identities
instead makes both linear in the size of the values.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

__all__ = ["identity"]


def identity(value: Any) -> Hashable:
    """A hashable stand-in for ``value``: two JSON values are equal in JSON Schema's sense
    exactly when their identities are equal.

    Numbers stay numbers (Python's ``int``, ``float``, ``Decimal`` and ``Fraction`` hash and
    compare by value, so ``1`` and ``1.0`` meet); every other kind is tagged, so that ``true``
    and ``1``, or ``"1"`` and ``1``, stay apart."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):  # before int: bool is an int to Python, not to JSON
        return ("boolean", value)
    if isinstance(value, int | float | Decimal | Fraction):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list | tuple):
        return ("array", tuple(identity(item) for item in value))
    if isinstance(value, Mapping):
        return ("object", frozenset((key, identity(item)) for key, item in value.items()))
    try:  # not JSON (validation is only ever given JSON): equal to itself, as jsonschema has it
        hash(value)
    except TypeError:
        return ("other", id(value))
    return ("other", value)
