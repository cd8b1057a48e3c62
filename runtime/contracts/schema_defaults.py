"""The schema's defaults written into a schema-typed tool's arguments.

A compiled tool's pydantic model fills in the defaults a model left out, so its confirmation
shows, and its executor gets, what will run. A schema-typed tool (registry, MCP) gets JSON: its
provider would fill the defaults on its side, where no person sees them. Filling them here, the
same way the provider's pydantic model does (each ``properties`` entry with a ``default``, in
objects the arguments hold, reached through ``properties``, ``items`` and local ``$ref``),
makes the confirmed payload the payload sent, defaults included.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from agentgen.runtime.contracts.canonical import compact_json
from agentgen.runtime.json_pointer import resolve_reference

__all__ = ["DefaultsTooLarge", "fill_defaults"]

#: Local references followed from one schema position before giving up on it (the schema was
#: inspected when compiled: cycles that never descend are refused there).
_MAX_HOPS = 32


class DefaultsTooLarge(ValueError):
    """Filling the defaults would make the arguments larger than ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"filling in the schema's defaults would make the arguments larger than {limit} "
            "bytes (the limit on arguments): send fewer items"
        )


def fill_defaults(
    schema: Mapping[str, Any], value: Any, *, limit: int
) -> tuple[Any, list[tuple[str | int, ...]]]:
    """``value`` with the defaults of ``schema`` filled in (a copy; ``value`` is not changed),
    and the paths (keys and indexes) of what was filled.

    A ``null`` default is not written (an optional field the model left out stays out, as for
    compiled tools). Raises :class:`DefaultsTooLarge` when the defaults written would add more
    than ``limit`` bytes.
    """
    filled: list[tuple[str | int, ...]] = []
    budget = [limit]

    def walk(node: Any, part: Any, path: list[str | int]) -> Any:
        part = _resolved(schema, part)
        if isinstance(node, dict) and isinstance(part, Mapping):
            properties = part.get("properties")
            if not isinstance(properties, Mapping):
                return node
            out = dict(node)
            for name, sub in properties.items():
                if name in out:
                    out[name] = walk(out[name], sub, [*path, name])
                    continue
                target = _resolved(schema, sub)
                if isinstance(target, Mapping) and target.get("default") is not None:
                    default = target["default"]
                    budget[0] -= len(compact_json(default)) + len(name) + 4
                    if budget[0] < 0:
                        raise DefaultsTooLarge(limit)
                    out[name] = copy.deepcopy(default)
                    filled.append((*path, name))
            return out
        if isinstance(node, list) and isinstance(part, Mapping):
            items = part.get("items")
            if isinstance(items, Mapping):
                return [walk(item, items, [*path, index]) for index, item in enumerate(node)]
        return node

    return walk(value, schema, []), filled


def _resolved(root: Mapping[str, Any], part: Any) -> Any:
    """``part`` with its local ``$ref`` chain followed (None when it cannot be: the validator
    has already judged the value, so an unresolved branch only means nothing is filled there).
    Keywords beside a ``$ref`` are laid over its target, as 2020-12 applies both."""
    for _ in range(_MAX_HOPS):
        if not isinstance(part, Mapping):
            return part
        ref = part.get("$ref")
        if not isinstance(ref, str):
            return part
        try:
            target = resolve_reference(root, ref)
        except LookupError:
            return None
        siblings = {key: item for key, item in part.items() if key != "$ref"}
        part = {**target, **siblings} if isinstance(target, Mapping) and siblings else target
    return None
