"""Canonical JSON: the one byte form used wherever JSON is hashed or compared.

Keys sorted, no whitespace, non-ASCII kept as UTF-8, NaN and infinities refused (they are not
JSON). Two values that are equal as JSON always have the same canonical form.
"""

from __future__ import annotations

import json
from typing import Any


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
