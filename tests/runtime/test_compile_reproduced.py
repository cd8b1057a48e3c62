"""Registry schemas and values ``contracts.compile`` once got wrong (found by
test_compile_property.py), each compiled, validated or refused as documented now."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentgen.runtime.contracts.codecs import PayloadError
from agentgen.runtime.contracts.compiler import compile
from agentgen.runtime.contracts.declarations import ContractError
from agentgen.runtime.contracts.specs import ToolSpec
from tests.runtime.test_compile_property import TOOL, TOOLSET, declaration


def compiled(payload: dict[str, Any], result: Any = None) -> ToolSpec:
    return compile(declaration(payload, {} if result is None else result), toolset=TOOLSET)


def refusal(payload: dict[str, Any], result: Any = None) -> str:
    with pytest.raises(ContractError) as info:
        compiled(payload, result)
    return str(info.value)


def issues(decode: Any, text: str) -> list[str]:
    try:
        decode(text)
    except PayloadError as exc:
        return [str(issue) for issue in exc.issues]
    return []


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


# --------------------------------------------------------------------------- lone surrogates

# JSON's "\ud800" is half a UTF-16 pair: json.loads gives a str RE2 cannot encode. Such a
# string is matched as if the half were U+FFFD (one code point for one, as Python's re and
# ECMA-262 count it), never left to crash the call as an internal error.


@pytest.mark.parametrize(
    ("schema", "text", "expected"),
    [
        (obj(s={"type": "string", "pattern": "^a.$"}), '{"s":"a\\ud800"}', []),
        (obj(s={"type": "string", "pattern": "^[a-z]+$"}), '{"s":"a\\ud800"}',
         ["s: 'a\\ud800' does not match '^[a-z]+$'"]),
        ({"type": "object", "patternProperties": {"^a": {"type": "integer"}}},
         '{"a\\udc00":"x"}', ["a\udc00: 'x' is not of type 'integer'"]),
        ({"type": "object", "patternProperties": {"^a": {}}, "additionalProperties": False},
         '{"\\ud800":1}', ["'\\ud800' does not match any of the regexes: '^a'"]),
    ],
    ids=["matched", "refused", "pattern-key", "additional-key"],
)  # fmt: skip
def test_strings_with_lone_surrogates_are_matched_not_crashed(
    schema: dict[str, Any], text: str, expected: list[str]
) -> None:
    spec = compiled(schema, schema)
    assert issues(spec.result.codec.decode, text) == expected
    assert issues(spec.payload.codec.decode_arguments, text) == expected


def test_a_schema_with_a_lone_surrogate_is_refused_naming_where() -> None:
    message = refusal(obj(s={"type": "string", "description": "half \ud800 a pair"}))
    assert message == (
        f"tool {TOOL!r} payload: the schema contains a lone surrogate (U+D800) at "
        "/properties/s/description, which no UTF-8 document or provider request can carry; "
        f"fix the provider of toolset {TOOLSET!r}"
    )


def test_a_schema_with_a_non_finite_number_is_refused_naming_where() -> None:
    # json.loads reads 1e400 as infinity, which JSON cannot write back.
    schema = json.loads('{"type": "object", "properties": {"n": {"maximum": 1e400}}}')
    message = refusal(schema)
    assert message == (
        f"tool {TOOL!r} payload: the schema is not JSON: the number inf at "
        "/properties/n/maximum is not finite (a number beyond a double's range, such as 1e400, "
        f"reads as infinity); fix the provider of toolset {TOOLSET!r}"
    )


# --------------------------------------------------------------------------- huge numbers

# jsonschema divides by a float multipleOf: an integer beyond a float's range raised
# OverflowError (an internal error), and 1e400 (read as infinity) raised OverflowError in its
# exact fallback. Numbers beyond a float's range are integers, kept exact, and decided exactly.


@pytest.mark.parametrize(
    ("multiple", "text", "expected"),
    [
        (0.5, '{"n":1' + "0" * 400 + "}", []),
        (0.5, '{"n":1e400}', []),
        (0.1, '{"n":1e400}', []),
        (0.3, '{"n":1e400}', ["n: 1E+400 is not a multiple of 0.3"]),
        (3, '{"n":1e400}', ["n: 1E+400 is not a multiple of 3"]),
        (0.5, '{"n":-1e400}', []),
    ],
    ids=["huge-integer", "huge-exponent", "decimal-multiple", "not-a-multiple", "integer-multiple",
         "negative"],
)  # fmt: skip
def test_numbers_beyond_a_float_are_multiples_decided_exactly(
    multiple: Any, text: str, expected: list[str]
) -> None:
    spec = compiled(obj(n={"type": "number", "multipleOf": multiple}))
    assert issues(spec.payload.codec.decode, text) == expected


def test_numbers_beyond_a_float_are_integers() -> None:
    spec = compiled(obj(n={"type": "integer", "minimum": 10**399}))
    assert issues(spec.payload.codec.decode_arguments, '{"n":1e400}') == []
    assert issues(spec.payload.codec.decode_arguments, '{"n":-1e400}') == [
        f"n: -1E+400 is less than the minimum of {10**399}"
    ]
    # The value the tool gets is the one the model wrote.
    assert spec.payload.codec.encode(spec.payload.codec.decode('{"n":1e400}')) == '{"n":1E+400}'


# --------------------------------------------------------------------------- strict arguments

# Arguments are validated against a copy of the schema whose listed objects refuse other keys
# (closed_copy). Closing a branch of oneOf, or a schema under not or if, can turn a refusal
# into an acceptance: here the value matched two oneOf branches (refused), and closing the
# second left one (accepted). Strict arguments must be refused by the schema as well.

NODE: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"oneOf": [{"not": {"type": "null"}}, {"$ref": "#"}]}},
    "required": ["n"],
}


@pytest.mark.parametrize(
    ("schema", "text", "expected"),
    [
        (NODE, '{"n":{"n":1,"x":2}}',
         ["n: {'n': 1, 'x': 2} is valid under each of {'$ref': '#'}, {'not': {'type': 'null'}}"]),
        (obj(o={"not": {"properties": {"p": obj(a={})}}}), '{"o":{"p":{"a":1,"b":2}}}',
         ["o: {'p': {'a': 1, 'b': 2}} should not be valid under {'properties': {'p': {'type': "
          "'object', 'properties': {'a': {}}}}}"]),
        ({**obj(o={}), "if": obj(o=obj(a={})), "then": {"required": ["t"]}},
         '{"o":{"a":1,"b":2}}', ["'t' is a required property"]),
        (obj(xs={"type": "array", "contains": obj(a={}), "maxContains": 1}),
         '{"xs":[{"a":1},{"a":1,"b":2}]}',
         ["xs: Too many items match the given schema (expected at most 1)"]),
    ],
    ids=["oneOf", "not", "if", "maxContains"],
)  # fmt: skip
def test_strict_arguments_never_take_what_the_schema_refuses(
    schema: dict[str, Any], text: str, expected: list[str]
) -> None:
    spec = compiled(schema)
    assert issues(spec.payload.codec.decode, text) == expected
    assert issues(spec.payload.codec.decode_arguments, text) == expected


def test_numbers_too_large_to_hold_exactly_are_refused() -> None:
    # A few bytes of arguments, a gigabyte as an integer: refused, never converted.
    spec = compiled(obj(n={"type": "number"}))
    assert issues(spec.payload.codec.decode_arguments, '{"n":1e999999999}') == [
        "the number 1E+999999999 is too large to validate (more than 4300 digits)"
    ]
    assert issues(spec.payload.codec.decode_arguments, '{"n":1e4299}') == []


# --------------------------------------------------------------------------- long messages

# jsonschema's enum message is the repr of every value: a registry enum of 15,000 values made
# each refused value a quarter-megabyte issue the model reads (and its repr was built for
# every refused value). Messages list 10 values and say how many; every issue is held to
# MAX_ISSUE_CHARS.


def test_an_enum_refusal_lists_a_few_values_and_how_many() -> None:
    spec = compiled(obj(e={"enum": [f"v{i}" for i in range(15_000)]}))
    assert issues(spec.payload.codec.decode, '{"e":"nope"}') == [
        "e: 'nope' is not one of ['v0', 'v1', 'v2', 'v3', 'v4', 'v5', 'v6', 'v7', 'v8', 'v9', "
        "...] (15000 values)"
    ]
    short = compiled(obj(e={"enum": ["a", 1]}))
    assert issues(short.payload.codec.decode, '{"e":"nope"}') == [
        "e: 'nope' is not one of ['a', 1]"
    ]


def test_every_issue_is_held_to_the_limit() -> None:
    from agentgen.runtime.contracts.limits import MAX_ISSUE_CHARS

    spec = compiled(obj(s={"maxLength": 3}, c={"const": "x" * 5000}))
    long = "y" * 100_000
    found = issues(spec.payload.codec.decode, json.dumps({"s": long, "c": long}))
    assert [len(issue) <= MAX_ISSUE_CHARS + 40 for issue in found] == [True, True]
    assert found[0].startswith("c: 'xxxxxxxxxx") and found[0].endswith("' was expected")
    assert found[1].startswith("s: 'yyyyyyyy") and found[1].endswith(" characters)")
