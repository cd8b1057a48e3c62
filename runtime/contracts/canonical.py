"""Canonical JSON: the one byte form used wherever JSON is hashed or compared.

Keys sorted, no whitespace, non-ASCII kept as UTF-8, NaN and infinities refused (they are not
JSON). Two values that are equal as JSON always have the same canonical form.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring
from typing import Any

__all__ = ["canonical_bytes", "canonical_json", "compact_json", "pretty_json"]


def canonical_json(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def compact_json(value: Any) -> str:
    """Compact JSON keeping the value's own key order (schemas read best in declared order;
    hashing always goes through :func:`canonical_json`)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_bytes(value: Any) -> bytes:
    return canonical_json(value).encode("utf-8")


def pretty_json(value: Any) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``, several times faster.

    The standard library falls back to its pure-Python encoder as soon as ``indent`` is set;
    generated ``tool_schemas.json`` files of large designs spend most of their time there.
    """
    out: list[str] = []
    _pretty(value, "", out)
    return "".join(out)


def _pretty(value: Any, pad: str, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("NaN and infinities are not JSON")
        out.append(float.__repr__(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = pad + "  "
        out.append("{")
        separator = "\n"
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, got {type(key).__name__}")
            out.append(f"{separator}{inner}{encode_basestring(key)}: ")
            _pretty(item, inner, out)
            separator = ",\n"
        out.append(f"\n{pad}}}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        inner = pad + "  "
        out.append("[")
        separator = "\n"
        for item in value:
            out.append(separator + inner)
            _pretty(item, inner, out)
            separator = ",\n"
        out.append(f"\n{pad}]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON")
