"""Checks that make validating a JSON Schema from a registry bounded work.

A schema is checked in two passes before anything validates with it:

* :func:`check_bounds` reads at most about :data:`~.limits.MAX_SCHEMA_BYTES` of it (size and
  nesting), so an oversized schema is refused after bounded work instead of compiled for
  seconds;
* :func:`inspect` walks every subschema (following references) and refuses what would make
  validation unbounded or wrong: a ``$ref`` that does not resolve inside the schema (nothing is
  ever fetched), a reference cycle that never descends into the value (validation would recurse
  forever), references that fan out past :data:`~.limits.MAX_SCHEMA_EXPANSION` subschemas
  (validating one value would evaluate every combination), a pattern RE2 cannot run, and
  ``patternProperties`` combined with ``unevaluatedProperties`` (jsonschema would match those
  with Python's backtracking ``re``).

:func:`closed_copy` gives the copy of a schema that validates tool *arguments* strictly: an
object schema that lists its ``properties`` refuses keys it does not list, unless it says what
to do with them (``additionalProperties`` / ``unevaluatedProperties``) or combines partial
object schemas (see the function).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agentgen.runtime.contracts.limits import MAX_SCHEMA_EXPANSION
from agentgen.runtime.contracts.regex import PatternError, compile_pattern

if TYPE_CHECKING:
    from referencing._core import Resolver

__all__ = [
    "Bounds",
    "SchemaProblem",
    "check_bounds",
    "closed_copy",
    "inspect",
    "no_remote",
    "strict_copy",
]


class SchemaProblem(ValueError):
    """A schema that cannot be validated with bounded work; the message says where and why."""


def no_remote(uri: str) -> Any:
    """The retrieval function of every schema registry: references are never fetched."""
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(uri)


# --------------------------------------------------------------------------- size and nesting


@dataclass(frozen=True, slots=True)
class Bounds:
    """What :func:`check_bounds` measured of a value it accepted."""

    #: The running count: a lower bound of the value's compact JSON size.
    size: int
    #: How deep its objects and arrays nest (1: the value is one; 0: it is a scalar).
    depth: int
    #: Whether it is made of JSON's own types only (exact ``dict`` with ``str`` keys, ``list``,
    #: ``str``, ``int``, ``float``, ``bool``, None): its compact JSON text then stands for it
    #: exactly, so whatever is decided about that text holds for the value.
    plain: bool


def check_bounds(
    value: Any,
    *,
    max_bytes: int,
    max_depth: int,
    what: str = "schema",
    measured: Mapping[int, Bounds] | None = None,
) -> Bounds:
    """Refuse ``value`` when its compact JSON would exceed ``max_bytes`` or its nesting
    ``max_depth``, reading at most about ``max_bytes`` of it.

    The running count is a lower bound of the compact JSON size (escapes are not counted), so
    the walk stops as soon as the value is known to be too large. Pydantic models (even ones
    built with ``model_construct``) are read through their fields. ``measured`` holds what
    earlier calls returned for parts of ``value`` (by ``id``): a part found there is counted
    as measured instead of walked again, wherever its nesting stays within ``max_depth``.
    """
    found = _measure(value, max_bytes, max_depth, measured or {})
    if found is not None:
        return found
    # Over a limit, or holding other types than JSON's and models: the exact walk below says
    # which limit in the order it has always said it (the first one reached).
    return _walk_bounds(value, max_bytes=max_bytes, max_depth=max_depth, what=what)


def _measure(
    value: Any, max_bytes: int, max_depth: int, measured: Mapping[int, Bounds]
) -> Bounds | None:
    """:func:`check_bounds`' count and nesting of JSON's own types and models, each scalar
    counted where its container is read; None when a limit is exceeded or something else is
    found (the caller then walks the value the exact way)."""
    size = _scalar_size(value)
    if size is not None:
        return None if size > max_bytes else Bounds(size, 0, True)
    size = 0
    deepest = 0
    plain = True
    #: Objects and arrays still to read (and whatever is neither they nor a JSON scalar).
    stack: list[tuple[Any, int]] = [(value, 1)]
    push = stack.append
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is list:
            items: Any = node
            keys = None
        elif kind is dict:
            if len(node) > 4 and type(next(iter(node.values()))) is list:
                counted = _word_counts(node, depth, max_bytes, max_depth)
                if counted is not None:  # a search document's terms, counted at C speed
                    size += counted
                    if size > max_bytes:
                        return None
                    deepest = max(deepest, depth + 1)
                    continue
            items = node.values()
            keys = node
        elif isinstance(node, BaseModel):
            keys = node.__dict__
            items = keys.values()
            plain = False
        else:
            return None  # subclasses, tuples, other mappings: the exact walk reads them
        if depth > max_depth:
            return None
        deepest = max(deepest, depth)
        size += 1 + len(items)
        if keys is not None:
            for key in keys:
                if type(key) is str:
                    size += len(key) + 3
                else:
                    plain = False
                    size += len(key) + 3 if isinstance(key, str) else 8
        for item in items:
            kind = type(item)
            if kind is str:
                size += len(item) + 2
            elif kind is int:
                size += item.bit_length() // 4 + 1
            elif kind is bool or item is None:
                size += 4
            elif kind is float:
                size += 1
            else:
                part = measured.get(id(item)) if measured else None
                if part is not None and depth + part.depth <= max_depth:
                    size += part.size  # measured before, and within the nesting limit here
                    deepest = max(deepest, depth + part.depth)
                else:
                    push((item, depth + 1))
            if size > max_bytes:
                return None
        if size > max_bytes:
            return None
    return Bounds(size, deepest, plain)


def _scalar_size(value: Any) -> int | None:
    """The count of a JSON scalar of an exact type; None for anything else."""
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is int:
        return int(value.bit_length() // 4 + 1)
    if kind is bool or value is None:
        return 4
    if kind is float:
        return 1
    return None


_STR = frozenset({str})
_LIST = frozenset({list})
_INT = frozenset({int})


def _word_counts(node: dict[Any, Any], depth: int, max_bytes: int, max_depth: int) -> int | None:
    """:func:`_measure`'s count of an object mapping text to arrays of small integers (a
    search document's terms: the largest part of a registry declaration but its schemas),
    counted in a few passes at C speed; None when it is anything else or too large or deep.
    Its arrays nest one level below it."""
    if depth + 1 > max_depth:
        return None
    arrays = node.values()
    if not (set(map(type, node)) <= _STR and set(map(type, arrays)) <= _LIST):
        return None
    entries = len(node)
    # The object, its keys and arrays, each integer counted at least once: known before the
    # integers are read, so that an oversized one is refused after bounded work.
    integers = sum(map(len, arrays))
    size = 1 + entries + sum(map(len, node)) + 3 * entries + entries + 2 * integers
    if size > max_bytes:
        return None
    flat = list(chain.from_iterable(arrays))
    if not set(map(type, flat)) <= _INT or (flat and (min(flat) < -7 or max(flat) > 7)):
        return None  # integers of more than one counted digit: read one by one
    return size


def _walk_bounds(value: Any, *, max_bytes: int, max_depth: int, what: str) -> Bounds:
    """:func:`check_bounds` node by node, for anything a model may hold: the exact walk, which
    raises at the first limit it reaches."""
    size = 0
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        # JSON's own types first, by exact type: a registry's declarations are made of them,
        # and the general checks below (abstract Mapping, models) cost several times more.
        if kind is str:
            size += len(node) + 2
        elif kind is dict or kind is list:
            if depth > max_depth:
                raise SchemaProblem(f"the {what} is nested deeper than {max_depth} levels")
            deepest = max(deepest, depth)
            size += 1 + len(node)
            if kind is dict:
                for key, item in node.items():
                    size += len(key) + 3 if isinstance(key, str) else 8
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in node)
        elif kind is int:
            size += node.bit_length() // 4 + 1  # no str(): huge integers convert slowly
        elif kind is bool or node is None:
            size += 4
        else:
            counted = _other_size(node, depth, stack, max_depth, what)
            if counted < 0:
                deepest = max(deepest, depth)
                counted = -counted
            size += counted
        if size > max_bytes:
            raise SchemaProblem(
                f"the {what} is larger than {max_bytes} bytes of compact JSON (the limit)"
            )
    return Bounds(size, deepest, plain=False)


def _other_size(
    node: Any, depth: int, stack: list[tuple[Any, int]], max_depth: int, what: str
) -> int:
    """:func:`check_bounds` for anything but an exact ``str``, ``dict``, ``list``, ``int``,
    ``bool`` or None: models (read through their fields), other mappings and sequences,
    subclasses of the JSON types, floats and whatever else a model may hold. The count is
    negative for an object or array (whose nesting counts), positive for a scalar."""
    if isinstance(node, BaseModel):
        node = dict(node.__dict__)
    if isinstance(node, Mapping | list | tuple) and depth > max_depth:
        raise SchemaProblem(f"the {what} is nested deeper than {max_depth} levels")
    if isinstance(node, Mapping):
        size = 1 + len(node)
        for key, item in node.items():
            size += len(key) + 3 if isinstance(key, str) else 8
            stack.append((item, depth + 1))
        return -size
    if isinstance(node, list | tuple):
        stack.extend((item, depth + 1) for item in node)
        return -(1 + len(node))
    if isinstance(node, str):
        return len(node) + 2
    if isinstance(node, bool) or node is None:
        return 4
    if isinstance(node, int):
        return node.bit_length() // 4 + 1
    return 1


# --------------------------------------------------------------------------- the walk

# JSON Schema 2020-12 keywords that hold subschemas applied to the *same* value ("in place")
# and those applied to parts of it (which descend into the value, ending any recursion).
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas",)
_DATA_ONE = (
    "items",
    "contains",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "contentSchema",
)
_DATA_LIST = ("prefixItems",)
_DATA_MAP = ("properties", "patternProperties")
_DEFINITIONS = ("$defs", "definitions")
_REFERENCES = ("$ref", "$dynamicRef")
#: Every keyword the walk reads in a schema: one holding none of them is a leaf.
_KEYWORDS = frozenset(
    {
        *_IN_PLACE_ONE,
        *_IN_PLACE_LIST,
        *_IN_PLACE_MAP,
        *_DATA_ONE,
        *_DATA_LIST,
        *_DATA_MAP,
        *_DEFINITIONS,
        *_REFERENCES,
        "$id",
        "pattern",
        "patternProperties",
    }
)
#: Keywords that declare which keys an object may have.
#: Keywords under which a subschema's failure can make the value valid: ``not``, a ``oneOf``
#: branch (two branches passing fail it), ``if`` (its failure applies ``else``) and
#: ``maxContains`` (fewer items matching ``contains``). Closing objects below them may accept
#: what the schema refuses.
_REVERSING = ("not", "oneOf", "if", "maxContains")
_DECLARING = (
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "dependentSchemas",
    "if",
)
#: Keywords that assert nothing about the value.
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$comment",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)


def _pointer(parent: str, *parts: str) -> str:
    escaped = (part.replace("~", "~0").replace("/", "~1") for part in parts)
    return "/".join([parent, *escaped])


@dataclass
class _Node:
    schema: dict[str, Any]
    pointer: str
    #: Subschemas (by ``id``) validated against the same value as this one.
    in_place: list[int] = field(default_factory=list)
    #: Every subschema (by ``id``) validated against this value or a part of it: the
    #: in-place ones and those of its properties, items... (not its ``$defs``).
    applied: list[int] = field(default_factory=list)


@dataclass
class Inspection:
    """What :func:`inspect` learned about a schema (used to build its strict copy)."""

    nodes: dict[int, _Node] = field(default_factory=dict)
    #: Schemas (by ``id``) that may be closed: see :func:`closed_copy`.
    closable: dict[int, bool] = field(default_factory=dict)
    #: Whether a subschema's failure can make the schema accept (see :data:`_REVERSING`).
    reversing: bool = False


class _Walk:
    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.root: Resolver[Any] | None = None
        # A schema object without "$id" is its own resource at base URI "": its resolver is
        # built when a reference or a nested "$id" first needs it (most schemas have neither).
        if type(schema) is not dict or "$id" in schema:
            self.root = self._root()
        #: Subschemas to visit: schema, pointer, resolver (None: the root's), closable.
        self.queue: list[tuple[Any, str, Resolver[Any] | None, bool]] = [
            (schema, "", self.root, True)
        ]
        self.result = Inspection()

    def _root(self) -> Resolver[Any]:
        # Imported here: only schema-typed tools need them.
        from referencing import Registry
        from referencing.jsonschema import DRAFT202012

        resource = DRAFT202012.create_resource(self.schema)
        base = resource.id() or ""
        registry: Registry[Any] = Registry(retrieve=no_remote).with_resource(  # type: ignore[call-arg]
            base, resource
        )
        return registry.resolver(base_uri=base)

    def _resolver(self, resolver: Resolver[Any] | None) -> Resolver[Any]:
        if resolver is not None:
            return resolver
        if self.root is None:
            self.root = self._root()
        return self.root

    def run(self) -> Inspection:
        while self.queue:
            schema, pointer, resolver, closable = self.queue.pop()
            self._visit(schema, pointer, resolver, closable)
        _refuse_cycles(self.result)
        _refuse_expansion(self.result, self.schema)
        return self.result

    def _push(
        self, schema: Any, pointer: str, resolver: Resolver[Any] | None, closable: bool
    ) -> None:
        self.queue.append((schema, pointer, resolver, closable))

    def _visit(
        self, schema: Any, pointer: str, resolver: Resolver[Any] | None, closable: bool
    ) -> None:
        if isinstance(schema, bool):
            return
        if not isinstance(schema, dict):
            raise SchemaProblem(f"{pointer or '/'} is not a schema (an object or a boolean)")
        key = id(schema)
        self.result.closable[key] = self.result.closable.get(key, True) and closable
        if key in self.result.nodes:
            return
        node = self.result.nodes[key] = _Node(schema, pointer)
        if schema.keys().isdisjoint(_KEYWORDS):
            return  # a leaf (most subschemas): nothing below to visit, nothing to check
        if pointer and isinstance(schema.get("$id"), str):
            from referencing.jsonschema import DRAFT202012

            resolver = self._resolver(resolver).in_subresource(DRAFT202012.create_resource(schema))
        self._patterns(schema, pointer)
        if not self.result.reversing:
            self.result.reversing = any(keyword in schema for keyword in _REVERSING)
        # Branches describe the whole value (and may be closed) only when the schema holding
        # them declares no keys of its own.
        branch_closable = closable and not any(keyword in schema for keyword in _DECLARING)
        for keyword in _IN_PLACE_ONE:
            if keyword in schema:
                self._in_place(node, schema[keyword], _pointer(pointer, keyword), resolver, False)
        for keyword in _IN_PLACE_LIST:
            branches = schema.get(keyword)
            if isinstance(branches, list):
                # Alternatives (anyOf/oneOf) and a lone allOf describe the whole value and may
                # be closed; several allOf branches each describe part of it.
                whole = branch_closable and (keyword != "allOf" or len(branches) == 1)
                for index, branch in enumerate(branches):
                    where = _pointer(pointer, keyword, str(index))
                    self._in_place(node, branch, where, resolver, whole)
        for keyword in _IN_PLACE_MAP:
            for name, sub in _items(schema.get(keyword)):
                self._in_place(node, sub, _pointer(pointer, keyword, name), resolver, False)
        for keyword in _DATA_ONE:
            if keyword in schema:
                self._applied(node, schema[keyword])
                self._push(schema[keyword], _pointer(pointer, keyword), resolver, True)
        for keyword in _DATA_LIST:
            for index, sub in enumerate(_list(schema.get(keyword))):
                self._applied(node, sub)
                self._push(sub, _pointer(pointer, keyword, str(index)), resolver, True)
        for keyword in (*_DATA_MAP, *_DEFINITIONS):
            for name, sub in _items(schema.get(keyword)):
                if keyword in _DATA_MAP:
                    self._applied(node, sub)
                self._push(sub, _pointer(pointer, keyword, name), resolver, True)
        for keyword in _REFERENCES:
            ref = schema.get(keyword)
            if ref is None:
                continue
            where = _pointer(pointer, keyword)
            if not isinstance(ref, str):
                raise SchemaProblem(f"{keyword} at {where} is not a string")
            from referencing.exceptions import Unresolvable

            try:
                resolved = self._resolver(resolver).lookup(ref)
            except Unresolvable:
                raise SchemaProblem(
                    f"{keyword} {ref!r} at {where} does not resolve inside the schema "
                    "(references are never fetched)"
                ) from None
            # A schema reached through a reference next to other assertions is only part of
            # what the value must satisfy, so it is not closed.
            target_closable = closable and all(
                keyword in _ANNOTATIONS or keyword in _REFERENCES for keyword in schema
            )
            self._in_place(node, resolved.contents, where, resolved.resolver, target_closable)

    def _in_place(
        self, node: _Node, sub: Any, pointer: str, resolver: Resolver[Any] | None, closable: bool
    ) -> None:
        if isinstance(sub, dict):
            node.in_place.append(id(sub))
            node.applied.append(id(sub))
        self._push(sub, pointer, resolver, closable)

    @staticmethod
    def _applied(node: _Node, sub: Any) -> None:
        if isinstance(sub, dict):
            node.applied.append(id(sub))

    def _patterns(self, schema: dict[str, Any], pointer: str) -> None:
        pattern = schema.get("pattern")
        if pattern is not None:
            where = _pointer(pointer, "pattern")
            if not isinstance(pattern, str):
                raise SchemaProblem(f"pattern at {where} is not a string")
            try:
                compile_pattern(pattern)
            except PatternError as exc:
                raise SchemaProblem(f"pattern {pattern!r} at {where} {exc}") from None
        properties = schema.get("patternProperties")
        if isinstance(properties, dict):
            where = _pointer(pointer, "patternProperties")
            for key in properties:
                try:
                    compile_pattern(key)
                except PatternError as exc:
                    raise SchemaProblem(f"patternProperties key {key!r} at {where} {exc}") from None


def _combines(schema: Mapping[str, Any]) -> bool:
    """Whether the schema adds other schemas' constraints on the same value to its own (so its
    own ``properties`` are not all the keys the value may have)."""
    return any(
        keyword in schema
        for keyword in ("allOf", "anyOf", "oneOf", "if", "dependentSchemas", *_REFERENCES)
    )


def _items(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        yield from ((str(name), sub) for name, sub in value.items())


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _refuse_cycles(inspection: Inspection) -> None:
    """Refuse a cycle of in-place subschemas: validating any value that reaches it would
    recurse without ever descending into the value."""
    nodes = inspection.nodes
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in nodes:
        if state.get(start):
            continue
        path: list[int] = [start]
        iterators = [iter(nodes[start].in_place)]
        state[start] = 1
        while iterators:
            nxt = next(iterators[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iterators.pop()
                continue
            if nxt not in nodes:
                continue
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                shown = " → ".join(nodes[key].pointer or "/" for key in cycle)
                raise SchemaProblem(
                    f"$ref cycle {shown} never descends into the value: validating it would "
                    "never end"
                )
            if not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                iterators.append(iter(nodes[nxt].in_place))


def _refuse_expansion(inspection: Inspection, schema: Any) -> None:
    """Refuse a schema whose references fan out: each of 40 ``anyOf`` branches referring to a
    schema of 40 branches referring to another... is 3 KB of JSON, but validating one value
    against it evaluates every combination (40³ subschemas took seconds, 100³ would take
    minutes). The measure is the schema's size with every reference inlined, a reference back
    to a schema being expanded counted once (such cycles descend into the value, see
    :func:`_refuse_cycles`); a schema without references is never refused by it."""
    nodes = inspection.nodes
    if len(nodes) <= 1 or id(schema) not in nodes:
        return
    limit = MAX_SCHEMA_EXPANSION
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[int, Iterator[int], int]] = []

    def enter(key: int) -> None:
        on_path.add(key)
        stack.append((key, iter(nodes[key].applied), 1))

    enter(id(schema))
    while stack:
        key, children, total = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            on_path.discard(key)
            size[key] = total
            if stack:
                parent, rest, counted = stack[-1]
                stack[-1] = (parent, rest, min(counted + total, limit + 1))
            if total > limit:
                raise SchemaProblem(
                    f"with its references inlined the schema would have more than {limit} "
                    "subschemas (the limit): references that fan out (branches referring to "
                    "schemas whose branches refer to others...) make validating one value "
                    "evaluate every combination; define the alternatives once"
                )
            continue
        if child not in nodes:
            continue
        if child in size or child in on_path:
            counted = size.get(child, 1)
            stack[-1] = (key, children, min(total + counted, limit + 1))
            continue
        enter(child)


def inspect(schema: Any) -> Inspection:
    """Walk every subschema of ``schema``; :class:`SchemaProblem` for what cannot be validated
    with bounded work (see the module)."""
    return _Walk(schema).run()


# --------------------------------------------------------------------------- strict copy


def closed_copy(schema: Any) -> Any:
    """:func:`strict_copy` without saying whether it narrows."""
    return strict_copy(schema)[0]


def strict_copy(schema: Any) -> tuple[Any, bool]:
    """A copy of ``schema`` in which object schemas that list their ``properties`` refuse
    other keys (``additionalProperties: false``), for validating tool arguments strictly.

    A schema stays open when it says what other keys may do (``additionalProperties`` or
    ``unevaluatedProperties``), when it adds other schemas' constraints to its own (``allOf``,
    ``$ref`` next to other keywords, ``if``, ``dependentSchemas``), and when it is one of
    several ``allOf`` branches, an ``if``/``then``/``else``/``not`` or a dependent schema: each
    of those describes only part of the value, and closing it would refuse the keys the others
    declare. Alternatives (``anyOf``/``oneOf`` branches) describe the whole value and are
    closed one by one.

    The second value says whether the copy only narrows the schema: False when it closes an
    object below ``not``, ``oneOf``, ``if`` or ``maxContains`` (:data:`_REVERSING`), where a
    closed object's refusal can turn into an acceptance; a value must then pass the schema
    itself as well.
    """
    duplicate = copy.deepcopy(schema)
    inspection = inspect(duplicate)
    closed = False
    for key, node in inspection.nodes.items():
        subschema = node.schema
        if (
            inspection.closable.get(key, False)
            and "properties" in subschema
            and "additionalProperties" not in subschema
            and "unevaluatedProperties" not in subschema
            and not _combines(subschema)
        ):
            subschema["additionalProperties"] = False
            closed = True
    return duplicate, not (closed and inspection.reversing)
