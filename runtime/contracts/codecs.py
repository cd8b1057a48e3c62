"""JSON codecs for tool payloads and results.

Compiled tools decode into their generated pydantic models; dynamic (registry) tools and
external MCP tools validate against their JSON Schema (2020-12) and keep numbers exact (a
payload's ``9007199254740993`` or ``0.1`` comes back out byte for byte). Either way a bad value
raises :class:`PayloadError` naming the fields at fault (the first few, and how many more),
which the runtime turns into a tool error the model can correct.

Tool *arguments* (what a model wrote) are decoded strictly, with :meth:`JSONCodec.decode_arguments`
after :func:`parse_arguments` bounded their size and nesting and refused lone surrogates:
nothing is converted and nothing is dropped, so what a person confirms is what runs. For
compiled tools that is pydantic's strict JSON mode with unknown keys refused (``true`` is not
an integer, ``"7"`` is not 7, an extra key is an error), after the numbers JSON Schema reads
otherwise than strict pydantic were made to agree (:mod:`.model_numbers`: ``10.0`` is an
integer, ``1e400`` is not a double). For schema-typed tools the JSON Schema is applied
exactly (JSON Schema never converts) and, in addition, an object schema that lists its
``properties`` refuses keys it does not list unless it says otherwise (see
:func:`~agentgen.runtime.contracts.schema_inspection.closed_copy` for the precise rule).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import PydanticSerializationError

from agentgen.runtime.contracts.exact_numbers import ExactNumber
from agentgen.runtime.contracts.json_values import encodes_utf8, surrogate_problem
from agentgen.runtime.contracts.schema_check import check_schema

__all__ = [
    "FieldIssue",
    "JSONCodec",
    "ModelCodec",
    "NestingError",
    "NullCodec",
    "PayloadError",
    "SchemaCodec",
    "decode_exact",
    "decode_nested",
    "encode_exact",
    "parse_arguments",
]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class FieldIssue:
    """One problem in a value: ``path`` like ``items[2].name`` (empty for the value itself)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class PayloadError(ValueError):
    """A payload or result does not match its contract.

    ``issues`` holds the first :data:`~.limits.MAX_ISSUES` issues found, each cut to
    :data:`~.limits.MAX_ISSUE_CHARS`, and together within :data:`~.limits.MAX_ISSUES_CHARS`,
    then one issue saying how many more there were: the issues become a tool error the model
    reads, and 100,000 wrong items of 300 KB of arguments made one of 7 MB."""

    def __init__(self, what: str, issues: Iterable[FieldIssue]) -> None:
        self.what = what
        self.issues = _bounded(issues)
        super().__init__(f"{what} is invalid: " + "; ".join(str(i) for i in self.issues))


def _bounded(issues: Iterable[FieldIssue]) -> tuple[FieldIssue, ...]:
    from agentgen.runtime.contracts.limits import MAX_ISSUES, MAX_ISSUES_CHARS

    kept: list[FieldIssue] = []
    size = more = 0
    for found in issues:
        issue = FieldIssue(_cut(found.path), _cut(found.message))
        size += len(issue.path) + len(issue.message)
        if kept and (len(kept) >= MAX_ISSUES or size > MAX_ISSUES_CHARS):
            more += 1
        else:
            kept.append(issue)
    if more:
        kept.append(
            FieldIssue(
                "",
                f"and {more} more issue{'s' if more > 1 else ''} (only the first {len(kept)} "
                "are listed): fix these, and any like them, before calling again",
            )
        )
    return tuple(kept)


class JSONCodec(Protocol[T]):
    """Turns JSON (text or an already parsed value) into ``T`` and back into JSON text."""

    def decode(self, data: str | bytes | Any) -> T: ...

    def decode_arguments(self, data: str | bytes | Any) -> T:
        """Decode a tool call's arguments strictly (nothing converted, unknown keys refused)."""
        ...

    def encode(self, value: T) -> str: ...


def _path(parts: Iterable[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _as_text(data: str | bytes | Any) -> str | bytes:
    return data if isinstance(data, str | bytes) else encode_exact(data)


class ModelCodec(Generic[M]):
    """Codec of a compiled type: a generated pydantic model."""

    def __init__(self, model: type[M], what: str) -> None:
        self.model = model
        self.what = what
        self._schema: dict[str, Any] | None = None
        self._literals: bool | None = None  # whether the schema has numbers or booleans to list

    def decode(self, data: str | bytes | Any) -> M:
        return self._validate(data, strict=None)

    def decode_arguments(self, data: str | bytes | Any) -> M:
        """Strict, after :func:`~.model_numbers.prepared`: an integral number where the
        model's schema wants an integer is that integer (``10.0`` is 10, as in JSON Schema and
        for registry tools), and a number beyond a double's range elsewhere is refused (pydantic
        read ``1e400`` as infinity). Booleans and numbers where the schema lists the values
        allowed are compared as JSON Schema compares them first
        (:func:`~.model_numbers.literal_mismatch`: pydantic took ``true`` for ``Literal[1]``)."""
        from agentgen.runtime.contracts.model_numbers import (
            exact_decimals,
            has_literals,
            literal_mismatch,
            prepared,
        )

        parsed = _parsed(self.what, data)
        if self._literals is None:
            self._literals = has_literals(self._json_schema())
        if self._literals:
            mismatch = literal_mismatch(parsed, self._json_schema())
            if mismatch is not None:
                place, found = mismatch
                raise PayloadError(
                    self.what,
                    [
                        FieldIssue(
                            _path(place),
                            f"{encode_exact(found)} is not one of the values this field takes "
                            "(true is not 1, and 1 is not true)",
                        )
                    ],
                )
        value, beyond = prepared(parsed, self._json_schema())
        if beyond is not None:
            place, number = beyond
            raise PayloadError(
                self.what,
                [
                    FieldIssue(
                        _path(place),
                        f"the number {number} is beyond the range of a double (about 1.8e308), "
                        "which this field holds",
                    )
                ],
            )
        model = self._validate(value, strict=True)
        exact = exact_decimals(model, value)
        if exact is None:
            return model
        try:  # pydantic's own values, the Decimals as written: a plain (not strict) round trip
            return self.model.model_validate(exact)
        except PydanticValidationError as exc:
            raise PayloadError(self.what, _issues(exc)) from None

    def _json_schema(self) -> dict[str, Any]:
        """The model's JSON Schema (the one advertised to the model), built when first needed:
        only arguments holding a number with a point or an exponent are read with it."""
        if self._schema is None:
            self._schema = self.model.model_json_schema()
        return self._schema

    def _validate(self, data: str | bytes | Any, *, strict: bool | None) -> M:
        try:
            text = _as_text(data)
        except (TypeError, ValueError) as exc:  # a parsed value JSON cannot hold
            raise PayloadError(self.what, [FieldIssue("", str(exc))]) from None
        try:
            if strict:
                return self.model.model_validate_json(text, strict=True, extra="forbid")
            return self.model.model_validate_json(text)
        except PydanticValidationError as exc:
            raise PayloadError(self.what, _issues(exc)) from None

    def encode(self, value: M) -> str:
        """The value's JSON, checked against the model again: an instance only says what it
        was built as. ``model_construct`` skips validation (a required field missing dumped as
        ``{}``), fields can be assigned anything afterwards (a ``str`` field set to None
        dumped as null), a NaN or infinite float dumps as null, and a subclass instance would
        add its own fields. The JSON is written as the model (a subclass's fields left out),
        a non-finite number is refused where it is, and the text is validated strictly."""
        if not isinstance(value, self.model):
            raise PayloadError(
                self.what,
                [FieldIssue("", f"expected {self.model.__name__}, got {type(value).__name__}")],
            )
        serializer = self.model.__pydantic_serializer__
        try:
            found = _non_finite(serializer.to_python(value, by_alias=True, warnings=False))
            text = serializer.to_json(value, by_alias=True, warnings=False).decode()
        except PydanticSerializationError as exc:  # a value pydantic cannot write as JSON
            raise PayloadError(self.what, [FieldIssue("", str(exc))]) from None
        if found is not None:
            place, number = found
            raise PayloadError(
                self.what, [FieldIssue(_path(place), f"{number!r} is not a JSON number")]
            )
        try:
            self.model.model_validate_json(text, strict=True)
        except PydanticValidationError as exc:
            raise PayloadError(self.what, _issues(exc)) from None
        return text


def _issues(exc: PydanticValidationError) -> Iterator[FieldIssue]:
    for error in exc.errors():
        yield FieldIssue(
            _path(str(p) if not isinstance(p, int) else p for p in error["loc"]), error["msg"]
        )


def _non_finite(value: Any) -> tuple[tuple[str | int, ...], float | Decimal] | None:
    """The place and value of the first NaN or infinity of a dumped model, or None (pydantic
    writes them as null)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, place = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return place, node
        if isinstance(node, Decimal) and not node.is_finite():
            return place, node
        if isinstance(node, dict):
            stack.extend((item, (*place, str(key))) for key, item in reversed(node.items()))
        elif isinstance(node, list | tuple | set | frozenset):
            stack.extend((item, (*place, i)) for i, item in reversed(list(enumerate(node))))
    return None


class NullCodec:
    """Codec of a tool without a result: JSON ``null`` only."""

    def __init__(self, what: str) -> None:
        self.what = what

    def decode(self, data: str | bytes | Any) -> None:
        value = _parsed(self.what, data)
        if value is not None:
            raise PayloadError(self.what, [FieldIssue("", "expected null")])

    def decode_arguments(self, data: str | bytes | Any) -> None:
        self.decode(data)

    def encode(self, value: None) -> str:
        if value is not None:
            raise PayloadError(
                self.what, [FieldIssue("", f"expected None, got {type(value).__name__}")]
            )
        return "null"


class SchemaCodec:
    """Codec of a dynamic type: a JSON Schema (2020-12).

    References must resolve inside the schema (nothing is fetched from files or the network),
    patterns run on RE2 (linear time), and a schema whose validation could not end (a reference
    cycle that never descends into the value) is refused here, before any value is validated:
    :class:`~agentgen.runtime.contracts.schema_inspection.SchemaProblem`.
    """

    def __init__(self, schema: dict[str, Any], what: str) -> None:
        # Imported here: jsonschema is only needed by schema-typed tools, and importing it
        # costs every process that only runs compiled tools.
        from agentgen.runtime.contracts import schema_inspection

        schema_inspection.inspect(schema)
        check_schema(schema)
        self.schema = schema
        self.what = what
        self._validator = self._build(schema)
        self._strict: Any = None
        self._narrows = True

    @staticmethod
    def _build(schema: Any) -> Any:
        from referencing import Registry

        from agentgen.runtime.contracts import schema_inspection, validators

        return validators.RE2Validator(
            schema,
            registry=Registry(retrieve=schema_inspection.no_remote),  # type: ignore[call-arg]
        )

    def decode(self, data: str | bytes | Any) -> Any:
        value = self._parse(data)
        self.check(value)
        return value

    def decode_arguments(self, data: str | bytes | Any) -> Any:
        value = self._parse(data)
        if self._strict is None:
            from agentgen.runtime.contracts.schema_inspection import strict_copy

            strict, self._narrows = strict_copy(self.schema)
            self._strict = self._build(strict)
        self._check(self._strict, value)
        if not self._narrows:  # the strict copy may take what the schema refuses
            self._check(self._validator, value)
        return self._with_defaults(value)

    def _with_defaults(self, value: Any) -> Any:
        """``value`` with the schema's defaults filled in, as the provider's model would: what
        a person confirms is what is sent (:mod:`~agentgen.runtime.contracts.schema_defaults`).
        A default the schema itself refuses is the provider's fault, named as such."""
        from agentgen.runtime.contracts.limits import MAX_ARGUMENTS_BYTES
        from agentgen.runtime.contracts.schema_defaults import DefaultsTooLarge, fill_defaults

        try:
            filled, where = fill_defaults(self.schema, value, limit=MAX_ARGUMENTS_BYTES)
        except DefaultsTooLarge as exc:
            raise PayloadError(self.what, [FieldIssue("", str(exc))]) from None
        if where:
            try:
                self._check(self._validator, filled)
            except PayloadError as exc:
                places = ", ".join(_path(at) for at in where)
                note = f"with the schema's defaults filled in at {places}: the provider's "
                issues = [
                    FieldIssue(
                        issue.path, f"{issue.message} ({note}schema gives a default it refuses)"
                    )
                    for issue in exc.issues
                ]
                raise PayloadError(self.what, issues) from None
        return filled

    def _parse(self, data: str | bytes | Any) -> Any:
        return _parsed(self.what, data)

    def check(self, value: Any) -> None:
        self._check(self._validator, value)

    def admits(self, value: Any, part: Mapping[str, Any] | None = None) -> bool:
        """Whether ``value`` is valid against the schema, or against ``part``, one of its
        subschemas (its references resolve in the whole schema): what a reader that must
        choose between readings of untyped text asks (:mod:`agentgen.runtime.mcp`)."""
        validator = self._validator if part is None else self._validator.evolve(schema=part)
        try:
            self._check(validator, value)
        except PayloadError:
            return False
        return True

    def _check(self, validator: Any, value: Any) -> None:
        from referencing.exceptions import Unresolvable

        from agentgen.runtime.contracts.limits import MAX_VALUE_DEPTH
        from agentgen.runtime.contracts.validators import (
            ValidationBudgetError,
            validation_budget,
        )

        if _depth(value, MAX_VALUE_DEPTH) > MAX_VALUE_DEPTH:
            raise PayloadError(
                self.what,
                [
                    FieldIssue(
                        "",
                        f"is nested deeper than {MAX_VALUE_DEPTH} levels (the limit for values "
                        "validated against a tool's JSON Schema)",
                    )
                ],
            )
        try:
            number = _as_floats(value)
        except _TooLarge as exc:
            raise PayloadError(self.what, [FieldIssue("", str(exc))]) from None
        try:
            with validation_budget():
                errors = sorted(validator.iter_errors(number), key=lambda e: list(e.absolute_path))
        except ValidationBudgetError as exc:
            raise PayloadError(self.what, [FieldIssue("", str(exc))]) from None
        except Unresolvable as exc:
            raise PayloadError(self.what, [FieldIssue("", f"unresolvable $ref: {exc}")]) from None
        except RecursionError:
            raise PayloadError(
                self.what, [FieldIssue("", "the value is nested too deeply to validate")]
            ) from None
        if errors:
            raise PayloadError(
                self.what, (FieldIssue(_path(e.absolute_path), e.message) for e in errors)
            )

    def encode(self, value: Any) -> str:
        self.check(value)
        try:
            return encode_exact(value)
        except (TypeError, ValueError) as exc:  # NaN, infinities, values that are not JSON
            raise PayloadError(self.what, [FieldIssue("", str(exc))]) from None


def _parsed(what: str, data: str | bytes | Any) -> Any:
    """``data`` parsed when it is JSON text (else as it is), or the :class:`PayloadError` that
    says why it is not JSON, nesting too deep for the parser included (an uncaught
    ``RecursionError`` answered a registry call with a 500)."""
    if not isinstance(data, str | bytes):
        return data
    try:
        return decode_exact(data)
    except ValueError as exc:
        raise PayloadError(what, [FieldIssue("", f"not JSON: {exc}")]) from None
    except RecursionError:
        raise PayloadError(
            what, [FieldIssue("", "not JSON the parser can read: nested too deeply")]
        ) from None


def _cut(message: str) -> str:
    """A validation message within :data:`~.limits.MAX_ISSUE_CHARS` (jsonschema shows the
    value at fault, and some keywords the schema's own values, in full)."""
    from agentgen.runtime.contracts.limits import MAX_ISSUE_CHARS

    if len(message) <= MAX_ISSUE_CHARS:
        return message
    return f"{message[:MAX_ISSUE_CHARS]}... ({len(message)} characters)"


def _as_floats(value: Any) -> Any:
    """The value as ``json.loads`` would give it, for validation only: jsonschema compares
    numbers with the schema's own (float) numbers, and mixing them with ``Decimal`` fails
    (``multipleOf`` raises, ``enum: [0.1]`` rejects ``0.1``, ``1.0`` is not an integer).

    Except numbers a float does not hold exactly, which are validated as written: an integral
    one (``9007199254740993.0``, ``1e400``, which ``json.loads`` makes infinite) as that exact
    integer (:class:`_BeyondFloat`), any other (``0.1000000000000000055``, ``1e-400``) as an
    :class:`~.exact_numbers.ExactNumber` (rounded, it passed a ``maximum`` or ``type: integer``
    it fails, and was sent as written)."""
    if isinstance(value, Decimal):
        number = ExactNumber.of(value)
        if type(number) is float:
            return number
        if math.isinf(number) and value.adjusted() >= _MAX_DIGITS:
            raise _TooLarge(value)
        if len(value.as_tuple().digits) > _MAX_DIGITS:  # exact arithmetic on it takes seconds
            raise _TooLarge(value, long=True)
        if value == value.to_integral_value():
            return _BeyondFloat(value)
        return number
    if isinstance(value, dict):
        return {k: _as_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_floats(v) for v in value]
    return value


#: Digits of the largest integer validated: Python's own limit for converting integers to and
#: from text, which ``json.loads`` applies to integers written out. ``1e999999999`` is a few
#: bytes of arguments, and its integer a gigabyte.
_MAX_DIGITS = 4300


class _TooLarge(ValueError):
    def __init__(self, number: Decimal, *, long: bool = False) -> None:
        if long:  # shown shortened: the reason would be cut off the issue
            text = str(number)
            message = (
                f"the number {text[:40]}... ({len(text)} characters) is written with too many "
                "digits"
            )
        else:
            message = f"the number {number} is too large"
        super().__init__(f"{message} to validate (more than {_MAX_DIGITS} digits)")


class _BeyondFloat(int):
    """An integral JSON number a float does not hold (beyond its range or its precision), as
    the exact integer it is, shown as written (``1E+400``: its digits would flood messages,
    and past 4,300 Python refuses to print them)."""

    _text: str

    def __new__(cls, value: Decimal) -> _BeyondFloat:
        number = super().__new__(cls, value)
        number._text = str(value)
        return number

    def __repr__(self) -> str:
        return self._text

    __str__ = __repr__


def parse_arguments(text: str | bytes, what: str) -> Any:
    """A tool call's arguments parsed exactly, after checking the stated bounds
    (:data:`~agentgen.runtime.contracts.limits.MAX_ARGUMENTS_BYTES`, :data:`~agentgen.runtime.
    contracts.limits.MAX_ARGUMENT_DEPTH`): :class:`PayloadError` for anything else, so that a
    model's arguments, however built, become an error the model can read."""
    from agentgen.runtime.contracts.limits import MAX_ARGUMENT_DEPTH, MAX_ARGUMENTS_BYTES

    size = len(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    if size > MAX_ARGUMENTS_BYTES:
        raise PayloadError(
            what,
            [FieldIssue("", f"is {size} bytes; arguments are limited to {MAX_ARGUMENTS_BYTES}")],
        )
    try:
        value = decode_nested(text, MAX_ARGUMENT_DEPTH)
    except NestingError:
        raise PayloadError(
            what,
            [
                FieldIssue(
                    "",
                    f"is nested deeper than {MAX_ARGUMENT_DEPTH} levels (the limit for arguments)",
                )
            ],
        ) from None
    except ValueError as exc:
        raise PayloadError(what, [FieldIssue("", f"not JSON: {exc}")]) from None
    surrogate = _lone_surrogate(text, value)
    if surrogate is not None:
        raise PayloadError(what, [surrogate])
    return value


class NestingError(ValueError):
    """JSON text nested deeper than the limit its reader states (or than the parser can
    read: Python's JSON parser recurses, and gives up with a ``RecursionError``)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"nested deeper than {limit} levels")
        self.limit = limit


def decode_nested(data: str | bytes, limit: int, *, exact: bool = True) -> Any:
    """:func:`decode_exact`, refusing with :class:`NestingError` a value nested deeper than
    ``limit`` levels of objects and arrays, so that whatever reads the value next (validation,
    encoding) stays away from the recursion limit. ``exact=False`` parses as ``json.loads``
    does (floats as ``float``), for text whose values are given back as they were stored."""
    try:
        value = decode_exact(data) if exact else json.loads(data)
    except RecursionError:
        raise NestingError(limit) from None
    if _depth(value, limit) > limit:
        raise NestingError(limit)
    return value


#: A JSON escape of half a UTF-16 pair (``\ud800``): how JSON text spells a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def _lone_surrogate(text: str | bytes, value: Any) -> FieldIssue | None:
    """The issue of a string (or key) of the arguments holding a lone surrogate, which no
    UTF-8 request can carry: a registry tool validated it, a person confirmed the call, and
    only then did the registry client fail to send it. Only arguments whose text spells one
    (an escape, or a surrogate in the text itself) are walked."""
    if isinstance(text, str):
        if encodes_utf8(text) and _SURROGATE_ESCAPE.search(text) is None:
            return None
    elif _SURROGATE_ESCAPE_BYTES.search(text) is None:
        return None
    problem = surrogate_problem(value)
    if problem is None:
        return None
    return FieldIssue("", f"{problem}: write the whole character, or leave it out")


def _depth(value: Any, limit: int) -> int:
    """The nesting of a parsed JSON value, counted up to ``limit + 1``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Iterable[Any] = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def decode_exact(data: str | bytes) -> Any:
    """Parse JSON keeping every number exact (integers as ``int``, others as ``Decimal``)."""

    def reject(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    return json.loads(data, parse_float=Decimal, parse_constant=reject)


def encode_exact(value: Any) -> str:
    """Compact JSON text of a value that may hold ``Decimal`` numbers, written as parsed.

    ``ValueError`` for what JSON cannot hold, a value nested too deeply to write included (a
    child agent's structured answer of 800 levels raised ``RecursionError``, which callers
    expecting a value that is not JSON did not catch)."""
    try:
        return _encoded(value)
    except RecursionError:
        raise ValueError("the value is nested too deeply to write as JSON") from None


def _encoded(value: Any) -> str:
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError("NaN and infinities are not JSON")
        return str(value)
    if isinstance(value, dict):
        items = (
            f"{json.dumps(str(k), ensure_ascii=False)}:{_encoded(v)}" for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_encoded(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False)
