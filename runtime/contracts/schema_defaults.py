"""The schema's defaults written into a schema-typed tool's arguments.

A compiled tool's pydantic model fills in the defaults a model left out, so its confirmation
shows, and its executor gets, what will run. A schema-typed tool (registry, MCP) gets JSON: its
provider would fill the defaults on its side, where no person sees them. Filling them here, the
same way the provider's pydantic model does (each ``properties`` entry with a ``default``, in
objects the arguments hold, reached through ``properties``, ``additionalProperties``,
``items``, ``prefixItems``, local ``$ref``, ``allOf`` and the branch of an ``anyOf``/``oneOf``
the value takes: see :func:`fill_defaults`), makes the confirmed payload the payload sent,
defaults included.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from agentgen.runtime.contracts.canonical import compact_json
from agentgen.runtime.contracts.json_equality import identity
from agentgen.runtime.contracts.subschemas import item_subschemas
from agentgen.runtime.json_pointer import resolve_reference

__all__ = ["DefaultsTooLarge", "fill_defaults"]

#: Local references followed from one schema position before giving up on it (the schema was
#: inspected when compiled: cycles that never descend are refused there).
_MAX_HOPS = 32

#: Schemas read at one position (``allOf`` of ``$ref`` of ``anyOf``...): past this, the rest
#: give no defaults there.
_MAX_BRANCHES = 256

_COMBINING = ("allOf", "anyOf", "oneOf")


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

    The schemas applying at a position are the one reached, the members of its ``allOf``, and
    the one branch of an ``anyOf``/``oneOf`` the value takes, as a pydantic union picks it: the
    branch its discriminator maps the value to (``discriminator.mapping``), else the only branch
    whose ``type`` can hold an object (or an array) and whose tags do not refuse it (a required
    property missing, a ``const``/``enum`` property not matching): ``Model | None``,
    ``list[Model] | None``, ``Cat | Dog`` with ``Literal`` tags.
    Where several branches could hold the value, none is read (pydantic picks the one that
    validates best, which only the provider decides); ``if``/``then``/``else``,
    ``dependentSchemas`` and ``not`` are never read (pydantic writes none of them). A missing
    property takes the first ``default`` these schemas give it.

    A ``null`` default is not written (an optional field the model left out stays out, as for
    compiled tools). Raises :class:`DefaultsTooLarge` when the defaults written would add more
    than ``limit`` bytes.
    """
    filled: list[tuple[str | int, ...]] = []
    budget = [limit]
    # The properties of each schema met, by id (the schema kept, so that its id is not reused).
    listed: dict[int, tuple[Mapping[str, Any], Mapping[str, list[Any]]]] = {}

    def walk(node: Any, parts: list[Any], path: list[str | int]) -> Any:
        if not isinstance(node, dict | list) or not parts:
            return node
        applying = _applying(schema, parts, node)
        if isinstance(node, list):
            return [
                walk(item, item_subschemas(applying, index), [*path, index])
                for index, item in enumerate(node)
            ]
        if len(applying) == 1:  # the usual case: the same schema for many objects
            kept = listed.get(id(applying[0]))
            if kept is None or kept[0] is not applying[0]:
                kept = listed[id(applying[0])] = (applying[0], _properties(applying))
            properties = kept[1]
        else:
            properties = _properties(applying)
        additional = [
            part["additionalProperties"]
            for part in applying
            if isinstance(part.get("additionalProperties"), Mapping)
        ]
        if not properties and not additional:
            return node
        out = dict(node)
        if additional:  # dict[str, Model]: each value not listed in properties
            for name, item in node.items():
                if name not in properties and isinstance(item, dict | list):
                    out[name] = walk(item, additional, [*path, name])
        for name, subs in properties.items():
            if name in out:
                if isinstance(out[name], dict | list):
                    out[name] = walk(out[name], subs, [*path, name])
                continue
            default = _default(schema, subs)
            if default is not None:
                budget[0] -= len(compact_json(default)) + len(name) + 4
                if budget[0] < 0:
                    raise DefaultsTooLarge(limit)
                out[name] = copy.deepcopy(default)
                filled.append((*path, name))
        return out

    return walk(value, [schema], []), filled


def _properties(applying: list[Mapping[str, Any]]) -> Mapping[str, list[Any]]:
    """Each property the ``applying`` schemas list, with the subschemas they give it."""
    if len(applying) == 1:  # the usual case
        found = applying[0].get("properties")
        if not isinstance(found, Mapping):
            return {}
        return {name: [sub] for name, sub in found.items()}
    properties: dict[str, list[Any]] = {}
    for part in applying:
        found = part.get("properties")
        if isinstance(found, Mapping):
            for name, sub in found.items():
                properties.setdefault(name, []).append(sub)
    return properties


def _default(root: Mapping[str, Any], subs: list[Any]) -> Any:
    for sub in subs:
        target = _resolved(root, sub)
        if isinstance(target, Mapping) and target.get("default") is not None:
            return target["default"]
    return None


def _applying(root: Mapping[str, Any], parts: list[Any], node: Any) -> list[Mapping[str, Any]]:
    """The schemas applying to ``node`` at one position (see :func:`fill_defaults`), references
    resolved, each once, at most :data:`_MAX_BRANCHES`."""
    if len(parts) == 1:  # the usual case: one schema, combining none
        only = _resolved(root, parts[0])
        if not isinstance(only, Mapping):
            return []
        if not any(keyword in only for keyword in _COMBINING):
            return [only]
    found: list[Mapping[str, Any]] = []
    seen: set[int] = set()
    stack = list(reversed(parts))
    while stack and len(found) < _MAX_BRANCHES:
        part = _resolved(root, stack.pop())
        if not isinstance(part, Mapping) or id(part) in seen:
            continue
        seen.add(id(part))
        found.append(part)
        members = part.get("allOf")
        more = list(members) if isinstance(members, list) else []
        for keyword in ("anyOf", "oneOf"):
            branches = part.get(keyword)
            if isinstance(branches, list):
                chosen = _branch(root, part, branches, node)
                if chosen is not None:
                    more.append(chosen)
        stack.extend(reversed(more))
    return found


def _branch(
    root: Mapping[str, Any], part: Mapping[str, Any], branches: list[Any], node: Any
) -> Any:
    """The branch of ``branches`` (an ``anyOf`` or ``oneOf`` of ``part``) that ``node`` takes
    in a pydantic model, or None when that is not known from the schema."""
    discriminator = part.get("discriminator")
    if isinstance(node, dict) and isinstance(discriminator, Mapping):
        name, mapping = discriminator.get("propertyName"), discriminator.get("mapping")
        tag = node.get(name) if isinstance(name, str) else None
        if isinstance(tag, str) and isinstance(mapping, Mapping):
            target = mapping.get(tag)
            return {"$ref": target} if isinstance(target, str) else None
    wanted = "object" if isinstance(node, dict) else "array"
    holding = []
    for branch in branches:
        resolved = _resolved(root, branch)
        if not isinstance(resolved, Mapping):
            continue
        kind = resolved.get("type")
        holds = kind is None or kind == wanted or (isinstance(kind, list) and wanted in kind)
        if holds and not (isinstance(node, dict) and _tag_refuses(root, resolved, node)):
            holding.append(resolved)
    return holding[0] if len(holding) == 1 else None


def _tag_refuses(root: Mapping[str, Any], branch: Mapping[str, Any], node: dict[str, Any]) -> bool:
    """Whether ``branch`` cannot take ``node`` by its tags alone: a required property ``node``
    lacks, or a property whose ``const``/``enum`` ``node``'s value is not in (pydantic's
    ``Cat | Dog`` of ``Literal`` tags without a declared discriminator)."""
    required = branch.get("required")
    if isinstance(required, list) and any(name not in node for name in required):
        return True
    properties = branch.get("properties")
    if not isinstance(properties, Mapping):
        return False
    for name, sub in properties.items():
        if name not in node:
            continue
        target = _resolved(root, sub)
        if not isinstance(target, Mapping):
            continue
        if "const" in target and identity(target["const"]) != identity(node[name]):
            return True
        values = target.get("enum")
        if isinstance(values, list) and identity(node[name]) not in map(identity, values):
            return True
    return False


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
