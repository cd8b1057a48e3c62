"""Random third-party JSON Schemas through ``contracts.compile``, checked against jsonschema.

Registry (and MCP) tools arrive as JSON Schemas written by others. Schemas are drawn the way
providers publish them (objects with ``properties``/``required``/``additionalProperties``,
arrays, ``enum``/``const``, numbers with inclusive and exclusive bounds and ``multipleOf``,
strings with lengths, patterns and formats, ``anyOf``/``oneOf``/``allOf``/``not``,
``$ref``/``$defs`` with recursion, nullable type lists, annotations, Unicode names), with
values built to match them and values that do not. The properties:

* a declaration is compiled or refused with a :class:`ContractError` naming the tool and the
  role of the schema (never another exception); jsonschema's invalid schemas are refused, and
  a valid one only for a documented reason (RE2, reference cycles, unresolvable references);
* a compiled result codec accepts exactly what ``jsonschema.Draft202012Validator`` (no format
  assertions: ``format`` is an annotation in agentgen, as in 2020-12's default vocabulary)
  accepts, and its issues name the paths jsonschema's errors name, except where the
  documented differences apply: patterns run on RE2 (``\\d``, ``\\w``, ``\\s``, ``\\b`` are
  ASCII, ``$`` is the end of the text), numbers beyond a float's range stay exact integers,
  ``multipleOf`` of such numbers is decided exactly (jsonschema raises ``OverflowError``);
* the arguments codec accepts exactly what jsonschema accepts against the strict copy of the
  schema (:func:`closed_copy`), and never anything jsonschema refuses against the schema;
* compiling is deterministic and independent of key order: the same fingerprint, the same
  advertised schema, the same verdicts.
"""

from __future__ import annotations

import json
import math
import os
import re
from decimal import Decimal
from typing import Any

import jsonschema
import pytest
import re2
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from agentgen.runtime.contracts.codecs import PayloadError, encode_exact
from agentgen.runtime.contracts.compiler import compile
from agentgen.runtime.contracts.declarations import ContractError, ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import schema_fingerprint
from agentgen.runtime.contracts.schema_inspection import closed_copy
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.contracts.wire import tool_schema
from agentgen.runtime.search.document import search_document

TOOL = "shop.order"
TOOLSET = "acme.shop"

# --------------------------------------------------------------------------- vocabulary

#: Property and definition names: Unicode, JSON Pointer and URI specials, keyword look-alikes.
NAMES = [
    "id", "name", "ñame", "名前", "a b", "a/b", "a~b", "%41", "$ref", "properties", "type", "",
    "x", "emoji🙂", "Ω",
]  # fmt: skip
DEF_NAMES = ["Node", "ñ", "a b", "a/b", "t~1", "Item"]
#: Patterns and strings that exercise them (what matches in RE2, in Python's re, or in both).
PATTERNS = [
    "^[a-z]+$", "^a$", "^\\d{3}$", "\\w+", "^\\s*$", "\\bab\\b", "^(a+)+$", "^[^@]+@[^@]+$",
    "é", "^.{2}$", "(?i)^ABC$", "\\p{L}", "^(?:x|y)z?$", "(a)\\1", "(?=a)a", "[",
]  # fmt: skip
STRINGS = [
    "", "a", "abc", "ABC", "123", "١٢٣", " ", "\u00a0", "\n", "a\n", "x@y", "é", "ab cd",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", "名前", "🙂🙂", "xz", "2024-01-31", "not-a-date",
    "urn:x", "a\ud800",
]  # fmt: skip
FORMATS = ["date", "date-time", "email", "uuid", "uri", "ipv4", "hostname", "regex", "x-custom"]
#: Numbers as providers write them (exact decimals, huge integers, negative zero).
NUMBERS: list[Any] = [
    0, 1, -1, 2, 3, 7, 10, 100, 2**53 + 1, 10**30, -(10**30), 0.5, 0.1, 1.5, -2.5, 1e-9, 1e300,
]  # fmt: skip
#: Values of instances (``Decimal``: written exactly, as a model's arguments may be).
VALUES: list[Any] = [
    *NUMBERS, Decimal("1.0"), Decimal("0.1"), Decimal("1E+400"), Decimal("-0"), Decimal("1e-400"),
    10**400, True, False, None,
]  # fmt: skip
MULTIPLES: list[Any] = [2, 3, 0.5, 0.1, 0.25, 10**20, 1e-3]
TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]
ANNOTATIONS = {
    "description": st.sampled_from(["A thing.", "ü\nline two", "«quoted»"]),
    "title": st.sampled_from(["T", "Titel"]),
    "default": st.sampled_from([*VALUES[:8], "d", [], {}]),
    "examples": st.lists(st.sampled_from(STRINGS[:6]), max_size=2),
    "$comment": st.just("generated"),
    "deprecated": st.booleans(),
}


def pointer(name: str) -> str:
    """A ``$ref`` to ``#/$defs/<name>``: JSON Pointer escapes, then URI fragment escapes."""
    escaped = name.replace("~", "~0").replace("/", "~1")
    return "#/$defs/" + "".join(c if c.isalnum() or c in "~-_." else _percent(c) for c in escaped)


def _percent(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))


# --------------------------------------------------------------------------- schemas


def some(draw: st.DrawFn, keywords: list[str], most: int) -> list[str]:
    """Up to ``most`` of ``keywords``, each at most once."""
    return draw(st.lists(st.sampled_from(keywords), max_size=most, unique=True))


def annotated(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    for key in some(draw, sorted(ANNOTATIONS), 2):
        schema[key] = draw(ANNOTATIONS[key])
    return schema


@st.composite
def scalar_schemas(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["number", "string", "boolean", "null", "enum", "const", "any"]))
    schema: dict[str, Any]
    if kind == "number":
        schema = {"type": draw(st.sampled_from(["number", "integer"]))}
        for key in some(
            draw, ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"], 3
        ):
            schema[key] = draw(st.sampled_from(MULTIPLES if key == "multipleOf" else NUMBERS))
    elif kind == "string":
        schema = {"type": "string"}
        for key in some(draw, ["minLength", "maxLength", "pattern", "format"], 3):
            if key == "pattern":
                schema[key] = draw(st.sampled_from(PATTERNS))
            elif key == "format":
                schema[key] = draw(st.sampled_from(FORMATS))
            else:
                schema[key] = draw(st.sampled_from([0, 1, 2, 3, 10**20]))
    elif kind == "boolean":
        schema = {"type": "boolean"}
    elif kind == "null":
        schema = {"type": "null"}
    elif kind == "enum":
        schema = {"enum": draw(st.lists(st.sampled_from(VALUES[:12] + STRINGS[:6]), max_size=4))}
    elif kind == "const":
        schema = {"const": draw(st.sampled_from(VALUES[:12] + STRINGS[:6] + [[1, "a"], {"k": 1}]))}
    else:
        return draw(st.sampled_from([{}, True, False]))
    if draw(st.integers(0, 5)) == 0 and schema.get("type") not in (None, "null"):  # nullable
        schema["type"] = [schema["type"], "null"]
    return annotated(draw, schema)


def compound(children: st.SearchStrategy[Any], refs: list[str]) -> st.SearchStrategy[Any]:
    @st.composite
    def build(draw: st.DrawFn) -> Any:
        kind = draw(
            st.sampled_from(
                ["object", "object", "array", "anyOf", "oneOf", "allOf", "not", "ref", "if"]
            )
        )
        schema: dict[str, Any]
        if kind == "object":
            names = draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True))
            schema = {"type": "object", "properties": {n: draw(children) for n in names}}
            required = draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True))
            if required:
                schema["required"] = [n for n in required if n in names or draw(st.booleans())]
            extra = draw(st.integers(0, 5))
            if extra == 1:
                schema["additionalProperties"] = draw(st.booleans())
            elif extra == 2:
                schema["additionalProperties"] = draw(children)
            elif extra == 3:
                schema["patternProperties"] = {draw(st.sampled_from(PATTERNS[:8])): draw(children)}
                schema["additionalProperties"] = False
            if draw(st.integers(0, 4)) == 0:
                schema["minProperties"] = draw(st.integers(0, 2))
            if draw(st.integers(0, 6)) == 0:
                schema["propertyNames"] = {"pattern": draw(st.sampled_from(PATTERNS[:8]))}
            if names and draw(st.integers(0, 6)) == 0:
                schema["dependentRequired"] = {names[0]: [draw(st.sampled_from(NAMES))]}
        elif kind == "array":
            schema = {"type": "array", "items": draw(children)}
            for key in some(
                draw, ["minItems", "maxItems", "uniqueItems", "prefixItems", "contains"], 2
            ):
                if key == "uniqueItems":
                    schema[key] = True
                elif key == "contains":
                    schema[key] = draw(children)
                    schema[draw(st.sampled_from(["minContains", "maxContains"]))] = draw(
                        st.integers(0, 2)
                    )
                elif key == "prefixItems":
                    schema[key] = [draw(children)]
                else:
                    schema[key] = draw(st.integers(0, 3))
        elif kind in ("anyOf", "oneOf", "allOf"):
            schema = {kind: draw(st.lists(children, min_size=1, max_size=3))}
        elif kind == "not":
            schema = {"not": draw(children)}
        elif kind == "if":
            schema = {"if": draw(children), "then": draw(children)}
            if draw(st.booleans()):
                schema["else"] = draw(children)
        else:
            if not refs:
                return draw(children)
            schema = {"$ref": draw(st.sampled_from(refs))}
        return annotated(draw, schema)

    return build()


@st.composite
def documents(draw: st.DrawFn, *, payload: bool) -> dict[str, Any]:
    """A root schema with ``$defs`` (which may refer to each other, to themselves and to the
    root); a payload's root is an object schema."""
    defs = draw(st.lists(st.sampled_from(DEF_NAMES), max_size=3, unique=True))
    refs = [pointer(name) for name in defs] + ["#"]
    if draw(st.integers(0, 9)) == 0:
        refs.append("#/$defs/missing")
    schemas = st.recursive(
        scalar_schemas(), lambda children: compound(children, refs), max_leaves=6
    )
    root: dict[str, Any]
    if payload:
        names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
        root = {"type": "object", "properties": {n: draw(schemas) for n in names}}
        required = draw(st.lists(st.sampled_from(names), max_size=2, unique=True))
        if required:
            root["required"] = required
        if draw(st.booleans()):
            root["additionalProperties"] = False
    else:
        drawn = draw(schemas)
        root = drawn if isinstance(drawn, dict) else {"anyOf": [drawn]}
    if defs:
        root["$defs"] = {name: draw(schemas) for name in defs}
    if draw(st.booleans()):
        root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return root


# --------------------------------------------------------------------------- instances


def _deref(schema: Any, root: dict[str, Any]) -> Any:
    for _ in range(8):
        if not isinstance(schema, dict) or "$ref" not in schema:
            return schema
        ref = schema["$ref"]
        if ref == "#":
            schema = root
            continue
        for candidate in root.get("$defs", {}):
            if pointer(candidate) == ref:
                schema = root["$defs"][candidate]
                break
        else:
            return {}
    return {}


def instances(schema: Any, root: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values built to match ``schema`` (best effort: a branch, a bound, a pattern's string),
    mixed with arbitrary ones."""
    anything = st.sampled_from(VALUES + STRINGS + [[], {}, [1, "a"], {"x": 1}])
    if depth > 4:
        return anything
    schema = _deref(schema, root)
    if not isinstance(schema, dict):
        return anything
    options: list[st.SearchStrategy[Any]] = [anything]
    for key in ("enum", "examples"):
        if isinstance(schema.get(key), list) and schema[key]:
            options.append(st.sampled_from(schema[key]))
    if "const" in schema:
        options.append(st.just(schema["const"]))
    if "default" in schema:
        options.append(st.just(schema["default"]))
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, []):
            options.append(instances(branch, root, depth + 1))
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "object" in kinds:
        properties = schema.get("properties", {})
        fields = {name: instances(sub, root, depth + 1) for name, sub in sorted(properties.items())}
        required = [n for n in schema.get("required", []) if n not in fields]
        fields.update({n: anything for n in required})
        extra = st.fixed_dictionaries(
            {}, optional={n: s for n, s in fields.items() if n not in schema.get("required", [])}
        )
        must = {n: s for n, s in fields.items() if n in schema.get("required", [])}
        objects = st.tuples(
            st.fixed_dictionaries(must),
            extra,
            st.dictionaries(st.sampled_from([*NAMES, "extra"]), anything, max_size=1),
        ).map(lambda parts: {**parts[2], **parts[1], **parts[0]})
        options += [objects, objects]
    if "array" in kinds:
        options.append(st.lists(instances(schema.get("items", {}), root, depth + 1), max_size=3))
    if "number" in kinds or "integer" in kinds:
        bounds = [
            schema[k]
            for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
            if k in schema
        ]
        options.append(st.sampled_from([*bounds, *VALUES[:-3]]))
    if "string" in kinds:
        options.append(st.sampled_from(STRINGS))
    return st.one_of(options)


# --------------------------------------------------------------------------- the oracle


def declaration(payload: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    model = tool_schema(
        tool_id=TOOL,
        title="Order",
        description="Places an order.",
        tags=("shop",),
        payload_schema={"type": "object"},
        payload_name="OrderArgs",
        result_schema={},
        result_name="OrderResult",
        search=search_document(TOOL, "Order", "Places an order.", {"type": "object"}),
    )
    wire: dict[str, Any] = json.loads(json.dumps(model.to_json()))
    wire["payload_schema"] = payload
    wire["execution_payload_schema"] = json.loads(json.dumps(payload))
    wire["result_schema"] = result
    return wire


#: Why compile may refuse a schema jsonschema takes (each documented where it is checked).
DOCUMENTED_REFUSALS = (
    "cannot run on RE2",  # backreferences, lookaround (regex.py)
    "never descends into the value",  # $ref cycles in place (schema_inspection.py)
    "does not resolve inside the schema",  # jsonschema resolves references lazily
    "lone surrogate",  # not Unicode text: no JSON document or provider request carries it
    'describe a JSON object ("type": "object")',  # a payload is an object (validation.py)
)


def reference_schema_problem(schema: Any) -> str | None:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc.message
    return None


def exact_json(text: str) -> Any:
    """JSON as numbers mean: floats, except those beyond a float's range, which are integers
    (``1e400``; json.loads makes them infinite, which is not a JSON number)."""

    def number(literal: str) -> Any:
        value = float(literal)
        return int(Decimal(literal)) if math.isinf(value) else value

    return json.loads(text, parse_float=number)


_SENTINEL = object()


def reference_verdict(schema: Any, value: Any) -> list[str] | None:
    """The paths of jsonschema's errors (empty: valid); None when it reaches no verdict."""
    validator = jsonschema.Draft202012Validator(schema)
    try:
        errors = list(validator.iter_errors(value))
    except (OverflowError, RecursionError, jsonschema.exceptions._WrappedReferencingError):
        return None
    except Exception as exc:  # referencing's Unresolvable
        if type(exc).__name__ in ("Unresolvable", "PointerToNowhere", "NoSuchResource"):
            return None
        raise
    return sorted({_path(e.absolute_path) for e in errors})


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def agentgen_verdict(decode: Any, text: str) -> list[str]:
    try:
        decode(text)
    except PayloadError as exc:
        return sorted({issue.path for issue in exc.issues})
    return []


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _patterns(schema: Any) -> list[str]:
    found: list[str] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "pattern" and isinstance(value, str):
                found.append(value)
            elif key == "patternProperties" and isinstance(value, dict):
                found += list(value)
                found += [p for sub in value.values() for p in _patterns(sub)]
            elif key not in ("enum", "const", "default", "examples"):
                found += _patterns(value)
    elif isinstance(schema, list):
        found += [p for item in schema for p in _patterns(item)]
    return found


#: RE2's documented differences from Python's ``re`` (which jsonschema uses): ECMA-262's
#: ASCII ``\d``/``\w``/``\b``, ``$`` only at the end of the text, ASCII-only ``\s``.
_DIALECT = re.compile(r"\\[dwsbDWSB]|\$")


def dialect_sensitive(schema: Any, value: Any) -> bool:
    """Whether a pattern of ``schema`` matches one of the value's strings (or keys)
    differently in RE2 and in Python's ``re``; such a difference must be a documented one."""
    patterns = [p for p in _patterns(schema) if _compiles(p)]
    found = False
    for text in _strings(value):
        for pattern in patterns:
            ours = re2.search(pattern, text.encode("utf-8", "replace").decode("utf-8")) is not None
            theirs = re.search(pattern, text) is not None
            if ours != theirs:
                documented = _DIALECT.search(pattern) and (
                    not text.isascii() or "\n" in text or "\ud800" in text
                )
                assert documented, (pattern, text)
                found = True
    return found


def _compiles(pattern: str) -> bool:
    try:
        re2.compile(pattern)
        re.compile(pattern)
    except Exception:
        return False
    return True


# --------------------------------------------------------------------------- key order


def reordered(value: Any) -> Any:
    """The same JSON value with every object's keys in reverse order."""
    if isinstance(value, dict):
        return {key: reordered(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(item) for item in value]
    return value


def fingerprint(declaration: dict[str, Any]) -> str:
    return schema_fingerprint(ToolsetDeclaration(name=TOOLSET, tools=[declaration]))


# --------------------------------------------------------------------------- the test


def compiled(declaration: dict[str, Any]) -> ToolSpec | str:
    try:
        return compile(json.loads(json.dumps(declaration)), toolset=TOOLSET)
    except ContractError as exc:
        message = str(exc)
        assert f"tool {TOOL!r}" in message, message
        assert re.search(r" (payload|execution payload|result)\b", message), message
        return message


def check_refusal(message: str, payload: Any, result: Any) -> None:
    problems = [reference_schema_problem(payload), reference_schema_problem(result)]
    if any(problems):
        return  # jsonschema refuses one of the schemas too
    assert any(fragment in message for fragment in DOCUMENTED_REFUSALS), message


@settings(
    max_examples=int(os.environ.get("CP_N", "100")),
    deadline=None,
    derandomize=not os.environ.get("CP_N"),
    database=None,
    # CP_N=<examples> explores further (random, not shrunk: shrinking these takes minutes).
    phases=[Phase.generate] if os.environ.get("CP_N") else list(Phase),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_compile_agrees_with_jsonschema(data: st.DataObject) -> None:
    payload = data.draw(documents(payload=True), label="payload")
    result = data.draw(documents(payload=False), label="result")
    wire = declaration(payload, result)
    spec = compiled(wire)
    again = compiled(reordered(wire))
    event("refused" if isinstance(spec, str) else "compiled")
    if isinstance(spec, str):
        event(spec.split(": ", 1)[-1][:50])
        check_refusal(spec, payload, result)
        assert isinstance(again, str), again
        return
    assert isinstance(again, ToolSpec)
    assert fingerprint(wire) == fingerprint(reordered(wire))
    assert json.loads(spec.payload.schema_json) == payload
    assert json.loads(spec.result.schema_json) == result
    strict = closed_copy(payload)
    for role, schema, codecs in (
        ("result", result, (spec.result.codec, again.result.codec)),
        ("payload", payload, (spec.payload.codec, again.payload.codec)),
    ):
        values = data.draw(st.lists(instances(schema, schema), min_size=1, max_size=4), label=role)
        for value in values:
            try:
                text = encode_exact(value)
            except ValueError:
                continue
            exact = exact_json(text)
            verdicts = [agentgen_verdict(codec.decode, text) for codec in codecs]
            assert verdicts[0] == verdicts[1], (role, text)  # key order changes nothing
            expected = reference_verdict(schema, exact)
            if expected is not None and not dialect_sensitive(schema, exact):
                assert verdicts[0] == expected, (role, text)
            if role != "payload":
                continue
            arguments = agentgen_verdict(codecs[0].decode_arguments, text)
            assert arguments == agentgen_verdict(codecs[1].decode_arguments, text)
            closed = reference_verdict(strict, exact)
            if closed is not None and expected is not None and not dialect_sensitive(schema, exact):
                # Refused by the strict copy, or else by the schema itself.
                assert arguments == (closed or expected), text


@pytest.mark.parametrize("name", DEF_NAMES)
def test_the_references_drawn_resolve(name: str) -> None:
    """The generator's escaping of ``$defs`` names is what jsonschema resolves (so that the
    property test draws references that resolve, not only refusals)."""
    schema = {"$defs": {name: {"type": "integer"}}, "$ref": pointer(name)}
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(1)
    assert not validator.is_valid("x")
