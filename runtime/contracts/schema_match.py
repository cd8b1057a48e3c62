"""Whether a server's input schema takes every value a design's payload schema lets through.

Deciding in general whether one JSON Schema accepts everything another one does is not
practical, so this is an explicit, structural rule (documented in docs/runtime.md, "Checking
the server at start-up"), strict where it cannot decide rather than lenient. For each pair of
schemas (the design's, the server's), after resolving local ``$ref``\\s:

* **Alternatives.** A schema with ``anyOf``/``oneOf`` is read as its branches (keywords beside
  the alternatives are copied into each branch). Every branch of the design must pass against
  at least one branch of the server.
* **Types.** Every type the design allows must be one the server accepts (``integer`` counts
  as a ``number``). A schema without ``type`` takes its types from ``const``/``enum``; one
  with none of them allows any value, which only an untyped server schema accepts.
* **Values.** When the server lists the values it takes (``enum``/``const``), the design must
  list only values among them.
* **Objects** (both sides allow objects): the same ``required`` properties; every property the
  design lists exists in the server's ``properties`` (even when the server would take unlisted
  ones: its contract no longer names it) and passes against it; when the design lets through
  keys it does not list (an explicit ``additionalProperties``, or no ``properties`` at all;
  the runtime refuses unlisted keys otherwise), the server's ``additionalProperties`` (or
  ``unevaluatedProperties``) must not be ``false``, and a schema there must take the design's.
* **Arrays** (both sides allow arrays): the design's ``items`` pass against the server's.
* **Other validation keywords** of the server (bounds, lengths, patterns, formats,
  ``allOf``, ``not``, ``prefixItems``...) must appear in the design with the same value: a
  constraint the design does not declare identically could refuse what the design sends.
  Annotations (``title``, ``description``, ``default``, ``examples``...) are ignored.

A ``$ref`` that does not resolve inside its own schema is a problem, never skipped, and so is
nesting deeper than ``limits.MAX_SCHEMA_DEPTH`` levels (the server's schema is outside input),
and so is a server keyword of a form JSON Schema does not give it (``schema_form``): a value
where a subschema belongs that is neither an object nor a boolean (the tuple form of
``items``, say), a ``type`` that names no JSON type, an ``enum`` that is not a list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgen.runtime.contracts.limits import MAX_SCHEMA_DEPTH
from agentgen.runtime.contracts.schema_form import is_schema, malformed, not_a_schema, shown
from agentgen.runtime.json_pointer import resolve_reference

__all__ = ["SchemaMismatch", "input_mismatches"]

#: Keywords compared by the rules above (structure), or ignored as annotations.
_STRUCTURE = frozenset(
    {"type", "enum", "const", "properties", "required", "additionalProperties",
     "unevaluatedProperties", "items",
     "anyOf", "oneOf", "$ref", "$defs", "definitions", "$schema", "$id", "$anchor",
     "$comment", "title", "description", "default", "examples", "deprecated", "readOnly",
     "writeOnly", "$dynamicAnchor", "contentMediaType", "contentEncoding"}
)  # fmt: skip
#: How many ``$ref`` hops one schema may take before it counts as unresolvable.
_MAX_REF_HOPS = 64


@dataclass(frozen=True, slots=True)
class SchemaMismatch:
    """One place where the server's schema would refuse, or no longer describe, what the
    design's schema lets through. ``path`` is the property path (``where.lat``, ``tags[]``;
    empty for the arguments object itself)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '(arguments)'}: {self.message}"


def input_mismatches(declared: Any, served: Any) -> list[SchemaMismatch]:
    """Every mismatch between the design's payload schema and the server's input schema, by
    the rule of the module docstring (an empty list: the server takes what the design sends).
    """
    matcher = _Matcher(declared, served)
    return [
        SchemaMismatch(_render(path), message)
        for path, message in matcher.compare(declared, served)
    ]


_Problem = tuple[tuple[str, ...], str]


class _Unresolved(Exception):
    def __init__(self, side: str, ref: str) -> None:
        super().__init__(f"the {side}'s $ref {ref!r} does not resolve inside its schema")


def _render(path: tuple[str, ...]) -> str:
    text = ""
    for part in path:
        text += part if part.startswith("[") else (f".{part}" if text else part)
    return text


@dataclass
class _Matcher:
    declared_root: Any
    served_root: Any
    #: Problems of pairs already compared (by identity: references reuse the same nodes).
    done: dict[tuple[int, int], list[_Problem]] = field(default_factory=dict)
    #: The pairs behind ``done``'s keys, kept alive so that no identity is reused.
    kept: list[tuple[Any, Any]] = field(default_factory=list)
    #: How many comparisons enclose the current one (bounded: the server's schema is input).
    depth: int = 0

    def compare(self, declared: Any, served: Any) -> list[_Problem]:
        try:
            design = _resolve(self.declared_root, declared, "design")
            server = _resolve(self.served_root, served, "server")
        except _Unresolved as error:
            return [((), str(error))]
        # A server keyword of the wrong form would read as no constraint (or not read at all).
        if not is_schema(server):
            return [((), not_a_schema(server))]
        if isinstance(server, Mapping):
            wrong = malformed(server)
            if wrong:
                return wrong
        key = (id(design), id(server))
        if key in self.done:
            return self.done[key]
        # A pair met again while it is being compared (recursive schemas) passes there: its
        # problems are reported where the comparison started.
        self.done[key] = []
        self.kept.append((design, server))
        if self.depth >= MAX_SCHEMA_DEPTH:
            problems: list[_Problem] = [
                ((), f"nested deeper than {MAX_SCHEMA_DEPTH} levels: not compared further")
            ]
        else:
            self.depth += 1
            try:
                problems = self._alternatives(design, server)
            finally:
                self.depth -= 1
        self.done[key] = problems
        return problems

    def _alternatives(self, design: Any, server: Any) -> list[_Problem]:
        design_branches = _branches(design)
        server_branches = _branches(server)
        if len(design_branches) == 1 and len(server_branches) == 1:
            return self._single(design_branches[0], server_branches[0])
        problems: list[_Problem] = []
        for index, branch in enumerate(design_branches):
            tries = [self.compare(branch, candidate) for candidate in server_branches]
            if any(not found for found in tries):
                continue
            # Against the one server alternative (of the same type), its problems say most.
            kin = [found for found, candidate in zip(tries, server_branches, strict=True)
                   if len(server_branches) == 1 or self._overlap(branch, candidate)]  # fmt: skip
            if len(kin) == 1:
                problems.extend(kin[0])
                continue
            closest = min(tries, key=len)
            which = f"the design's alternative {index + 1} " if len(design_branches) > 1 else ""
            problems.append(
                (
                    (),
                    f"{which}matches none of the server's {len(server_branches)} alternatives "
                    f"(anyOf/oneOf); closest: "
                    + "; ".join(str(SchemaMismatch(_render(p), m)) for p, m in closest),
                )
            )
        return problems

    def _overlap(self, design: Any, server: Any) -> bool:
        """Whether two alternatives allow a type in common (an untyped one allows all)."""
        try:
            design = _resolve(self.declared_root, design, "design")
            server = _resolve(self.served_root, server, "server")
        except _Unresolved:
            return False
        if not isinstance(design, Mapping) or not isinstance(server, Mapping):
            return True
        design_types, server_types = _types(design), _types(server)
        if design_types is None or server_types is None:
            return True
        return any(_accepts(server_types, kind) for kind in design_types)

    def _single(self, design: Any, server: Any) -> list[_Problem]:
        if server is True or server == {}:
            return []
        if server is False:
            return [((), "the server's schema refuses every value")]
        if design is False:
            return []
        design_map: Mapping[str, Any] = design if isinstance(design, Mapping) else {}
        server_map: Mapping[str, Any] = server
        problems: list[_Problem] = []
        design_types = _types(design_map)
        server_types = _types(server_map)
        if server_types is not None:
            if design_types is None:
                problems.append(
                    ((), f"the design allows any JSON value, the server only {_list(server_types)}")
                )
            else:
                missing = sorted(t for t in design_types if not _accepts(server_types, t))
                if missing:
                    problems.append(
                        (
                            (),
                            f"the design allows {_list(missing)}, the server accepts only "
                            f"{_list(server_types)}",
                        )
                    )
        problems.extend(_value_problems(design_map, server_map))
        problems.extend(_constraint_problems(design_map, server_map))
        both = _both(design_types, server_types)
        if "object" in both:
            problems.extend(self._object(design_map, server_map))
        if "array" in both and "items" in server_map:
            for path, message in self.compare(design_map.get("items", True), server_map["items"]):
                problems.append((("[]", *path), message))
        return problems

    def _object(self, design: Mapping[str, Any], server: Mapping[str, Any]) -> list[_Problem]:
        problems: list[_Problem] = []
        design_required = set(_strings(design.get("required")))
        server_required = set(_strings(server.get("required")))
        design_properties = _mapping(design.get("properties"))
        server_properties = _mapping(server.get("properties"))
        for name in sorted(server_required - design_required):
            declared = "" if name in design_properties else " (nor lists it)"
            problems.append(((name,), f"the server requires it, the design does not{declared}"))
        for name in sorted(design_required - server_required):
            if name in server_properties:
                problems.append(((name,), "the design requires it, the server does not"))
        for name, schema in design_properties.items():
            if name not in server_properties:
                required = " (the design requires it)" if name in design_required else ""
                problems.append(((name,), f"the server has no such property{required}"))
                continue
            for path, message in self.compare(schema, server_properties[name]):
                problems.append(((name, *path), message))
        extra = _unlisted_keys(design)
        if extra is not None:
            # Without alternatives or allOf (compared as constraints), unevaluatedProperties
            # covers the same keys as additionalProperties.
            served_extra = server.get(
                "additionalProperties", server.get("unevaluatedProperties", True)
            )
            if served_extra is False:
                problems.append(
                    (
                        (),
                        "the design lets through properties it does not list, the server "
                        "refuses them (additionalProperties: false)",
                    )
                )
            elif served_extra is not True:
                for path, message in self.compare(extra, served_extra):
                    problems.append((("{*}", *path), message))
        return problems


def _resolve(root: Any, schema: Any, side: str) -> Any:
    """``schema`` with its ``$ref`` chain followed inside ``root``; keywords beside a ``$ref``
    are laid over the target (2020-12 applies both)."""
    hops = 0
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
        ref: str = schema["$ref"]
        hops += 1
        if hops > _MAX_REF_HOPS or not ref.startswith("#"):
            raise _Unresolved(side, ref)
        try:
            target = resolve_reference(root, ref)
        except LookupError:
            raise _Unresolved(side, ref) from None
        siblings = {key: value for key, value in schema.items() if key != "$ref"}
        if not siblings:
            schema = target
        elif isinstance(target, Mapping):
            schema = {**target, **siblings}
        elif target is True:
            schema = siblings
        elif target is False:
            schema = False
        else:  # not a schema: reported as such by the caller
            schema = target
    return schema


def _branches(schema: Any) -> list[Any]:
    """The alternatives a schema is read as: its ``anyOf``/``oneOf`` branches, each with the
    keywords beside them, or the schema itself."""
    if not isinstance(schema, Mapping):
        return [schema]
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            rest = {key: value for key, value in schema.items() if key != keyword}
            if not rest:
                return list(branches)
            return [_overlay(rest, branch) for branch in branches]
    return [schema]


def _overlay(rest: Mapping[str, Any], branch: Any) -> Any:
    if branch is True:
        return dict(rest)
    if not isinstance(branch, Mapping):
        return branch
    # The branch stays a ``$ref`` to resolve: resolution lays the other keywords over it.
    return {**rest, **branch}


def _types(schema: Mapping[str, Any]) -> frozenset[str] | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset({kind})
    if isinstance(kind, list):
        return frozenset(str(k) for k in kind)
    values = _values(schema)
    if values is not None:
        return frozenset(_json_type(value) for value in values)
    return None


def _values(schema: Mapping[str, Any]) -> list[Any] | None:
    if "const" in schema:
        return [schema["const"]]
    enum = schema.get("enum")
    return list(enum) if isinstance(enum, list) else None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _accepts(server_types: frozenset[str], kind: str) -> bool:
    return kind in server_types or (kind == "integer" and "number" in server_types)


def _both(design: frozenset[str] | None, server: frozenset[str] | None) -> set[str]:
    """The structured types both sides allow (an untyped side allows them all)."""
    every = {"object", "array"}
    return (every if design is None else set(design)) & (every if server is None else set(server))


def _value_problems(design: Mapping[str, Any], server: Mapping[str, Any]) -> list[_Problem]:
    served = _values(server)
    if served is None:
        return []
    declared = _values(design)
    allowed = {_canonical(value) for value in served}
    if declared is None:
        return [((), f"the server accepts only the values {shown(served)}, the design any")]
    extra = [value for value in declared if _canonical(value) not in allowed]
    if extra:
        return [
            (
                (),
                f"the design allows the values {shown(extra)}, the server only {shown(served)}",
            )
        ]
    return []


def _constraint_problems(design: Mapping[str, Any], server: Mapping[str, Any]) -> list[_Problem]:
    problems: list[_Problem] = []
    for keyword in sorted(server):
        if keyword in _STRUCTURE or keyword.startswith("x-"):
            continue
        value = server[keyword]
        if keyword not in design:
            problems.append(
                ((), f"the server constrains {keyword}={shown(value)}, the design does not")
            )
        elif _canonical(design[keyword]) != _canonical(value):
            problems.append(
                (
                    (),
                    f"the server constrains {keyword}={shown(value)}, the design "
                    f"{keyword}={shown(design[keyword])}",
                )
            )
    return problems


def _unlisted_keys(design: Mapping[str, Any]) -> Any:
    """The schema of keys the design lets through without listing them (``None``: none).

    Tool arguments are validated with objects that list ``properties`` closed (see
    ``schema_inspection.closed_copy``), so only an explicit ``additionalProperties``, or an
    object schema listing no properties, lets other keys through.
    """
    if "additionalProperties" in design:
        extra = design["additionalProperties"]
        return None if extra is False else extra
    return None if "properties" in design else True


def _canonical(value: Any) -> str:
    """JSON text that compares JSON values as JSON Schema does (``1`` equals ``1.0``, never
    ``true``)."""

    def normal(item: Any) -> Any:
        if isinstance(item, float) and item.is_integer():
            return int(item)
        if isinstance(item, list):
            return [normal(element) for element in item]
        if isinstance(item, Mapping):
            return {key: normal(element) for key, element in item.items()}
        return item

    return json.dumps(normal(value), sort_keys=True, default=str)


def _list(types: Any) -> str:
    return "/".join(sorted(types))


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
