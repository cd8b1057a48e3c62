"""What keeps a Python value from being JSON text, and where in the value it is.

Schemas reach agentgen as Python values: from pydantic models in a design, or parsed from a
registry's (or MCP server's) JSON. ``json.loads`` accepts what no JSON text can carry back: a
lone surrogate (half of a UTF-16 pair, which JSON lets a string spell as ``"\\ud800"``) and
numbers beyond a double's range (``1e400`` reads as infinity). Messages that refuse such a
value name the place in it, as a JSON Pointer, so that its author can find it.

:func:`find_lone_surrogate` is the one walk for lone surrogates: it gives the place as keys and
indexes, and each caller writes it the way its readers know (a JSON Pointer here, ``$.a[0]``
for a provider's reply, ``"parameters"."properties"."q"`` for the search evaluation's files).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

__all__ = [
    "LoneSurrogate",
    "encodes_utf8",
    "find_lone_surrogate",
    "json_problem",
    "lone_surrogate",
    "surrogate_problem",
    "vanishing_number",
]


def encodes_utf8(text: str) -> bool:
    """True when ``text`` encodes as UTF-8 (checked at C speed; only lone surrogates fail)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class LoneSurrogate:
    """The first lone surrogate of a value: ``text`` is the string holding it, found at
    ``path`` (the keys and indexes leading to it), or, with ``in_key``, a key of the mapping
    at ``path``."""

    path: tuple[object, ...]
    text: str
    in_key: bool = False

    @property
    def code(self) -> str:
        """The surrogate's code point, as ``U+D800``."""
        code = next(ord(c) for c in self.text if "\ud800" <= c <= "\udfff")
        return f"U+{code:04X}"


def find_lone_surrogate(value: object, path: tuple[object, ...] = ()) -> LoneSurrogate | None:
    """The first lone surrogate in the strings and keys of ``value`` (mappings, lists and
    tuples are walked; a mapping's entries in order, each key before its value), or None.
    Only lone surrogates keep a string from encoding as UTF-8, which is checked at C speed."""
    if isinstance(value, str):
        return None if encodes_utf8(value) else LoneSurrogate(path, value)
    items: Iterable[tuple[object, object]]
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        if isinstance(key, str) and not encodes_utf8(key):
            return LoneSurrogate(path, key, in_key=True)
        found = find_lone_surrogate(item, (*path, key))
        if found is not None:
            return found
    return None


def lone_surrogate(value: Any, path: str = "") -> tuple[str, str] | None:
    """The path (``/properties/x/description``) and code point (``U+D800``) of the first lone
    surrogate in a JSON value's strings or keys, or None; ``path`` is where ``value`` is.
    A surrogate in a key is placed at the key's own member (``/properties/<key>``)."""
    found = find_lone_surrogate(value)
    if found is None:
        return None
    keys = (*found.path, found.text) if found.in_key else found.path
    return path + "".join(f"/{key}" for key in keys) or "/", found.code


def surrogate_problem(value: Any) -> str | None:
    """Why ``value`` (a string, or a JSON value built in Python) cannot be written as UTF-8
    text, naming the first lone surrogate and where it is in ``value``; None when it can.

    Checked at C speed first (encoding the string, or the value's JSON text), walked only when
    that fails: declarations are read on the registry's hot paths."""
    if isinstance(value, str):
        if encodes_utf8(value):
            return None
    elif isinstance(value, dict | list):
        try:
            if encodes_utf8(json.dumps(value, ensure_ascii=False)):
                return None
        except (TypeError, ValueError):  # not JSON: refused elsewhere, walked here
            pass
    else:
        return None
    found = lone_surrogate(value)
    if found is None:
        return None
    path, code = found
    # The path may hold the surrogate itself (a key): shown escaped, so the message can be
    # written where the value could not.
    shown = path.encode("utf-8", "backslashreplace").decode("utf-8")
    at = f" at {shown}" if isinstance(value, dict | list) else ""
    return (
        f"contains a lone surrogate ({code}){at}, which no UTF-8 document or provider request "
        "can carry"
    )


def json_problem(value: Any, path: str = "") -> str | None:
    """Why ``value`` is not JSON (first problem found), or None."""
    where = f" at {path}" if path else ""
    if isinstance(value, str):
        surrogate = lone_surrogate(value, path)
        return None if surrogate is None else f"the string{where} contains a lone surrogate"
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"the number {value!r}{where} is not finite"
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = json_problem(item, f"{path}/{index}")
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"the key {key!r}{where} is a {type(key).__name__}, not a string"
            problem = json_problem(item, f"{path}/{key}")
            if problem is not None:
                return problem
        return None
    return (
        f"the value{where} is a {type(value).__name__} (JSON has objects with string keys, "
        "lists, strings, numbers, booleans and null)"
    )


#: What any JSON number too close to zero for a double has: a negative exponent of three
#: digits or more, or a hundred zeros after its point (its magnitude is below 1e-323, so the
#: zeros and the exponent add up to more than 300). Text without either is never parsed twice.
_TINY = re.compile(rb"[eE]-0*[1-9][0-9][0-9]|\.0{100}")


class _Vanished(float):
    """A nonzero number that reads as zero, with the text it was written as."""

    written: str


def vanishing_number(text: bytes) -> tuple[tuple[str | int, ...], str] | None:
    """The place (keys and indexes) and text of the first nonzero number of the JSON ``text``
    that a double reads as zero (``1e-400``, beyond a double's precision), or None.

    ``json.loads``, pydantic and every JSON parser that reads numbers as doubles turn such a
    number into ``0.0`` without a word: a schema's ``"minimum": 1e-400`` would then take 0.
    (A number beyond a double's range reads as infinity, which is not JSON and refused as
    such; rounding a number to the nearest double is how JSON Schemas are read.) None for text
    that is not JSON: its parser says why."""
    if _TINY.search(text) is None:
        return None

    def number(written: str) -> float:
        value = float(written)
        if value == 0.0 and Decimal(written) != 0:
            vanished = _Vanished(value)
            vanished.written = written
            return vanished
        return value

    try:
        parsed = json.loads(text, parse_float=number)
    except (ValueError, RecursionError):
        return None
    return _vanished_in(parsed, ())


def _vanished_in(
    value: Any, path: tuple[str | int, ...]
) -> tuple[tuple[str | int, ...], str] | None:
    if isinstance(value, _Vanished):
        return path, value.written
    items: Any = ()
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    for key, item in items:
        found = _vanished_in(item, (*path, key))
        if found is not None:
            return found
    return None
