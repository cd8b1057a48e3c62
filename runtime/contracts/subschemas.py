"""The subschemas that apply to one place of a value, as JSON Schema 2020-12 assigns them.

Reading a value against its schema part by part (its numbers made ready for pydantic, the
defaults its provider would fill in) needs, for each array item, the subschemas that describe
it: ``prefixItems`` at its index, else ``items``. Written once here, so both readings agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["item_subschemas"]


def item_subschemas(schemas: Iterable[Any], index: int) -> list[Any]:
    """The subschemas of ``schemas`` (those applying to an array) for its item at ``index``."""
    found = []
    for schema in schemas:
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and index < len(prefix):
            found.append(prefix[index])
            continue
        items = schema.get("items")
        if isinstance(items, Mapping):
            found.append(items)
    return found
