"""Registry schemas and values ``contracts.compile`` once got wrong (found by
test_compile_property.py), each compiled, validated or refused as documented now."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from agentgen.runtime.contracts.codecs import PayloadError
from agentgen.runtime.contracts.compiler import compile
from agentgen.runtime.contracts.declarations import ContractError, ToolSchema, ToolsetDeclaration
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.contracts.wire import fingerprint, tool_schema
from agentgen.runtime.search.document import search_document
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


def _set(wire: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node: Any = wire
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    node[last] = value


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("description", "Places \ud800 an order.", "description: contains a lone surrogate "
         "(U+D800)"),
        ("tags", ["shop", "\udc00"], "tags.1: contains a lone surrogate (U+DC00)"),
        ("consumer_contract.title", "Order\ud800", "consumer_contract.title: contains a lone "
         "surrogate (U+D800)"),
        ("consumer_contract.payload.name", "Order\ud800Args", "consumer_contract.payload.name: "
         "contains a lone surrogate (U+D800)"),
        ("consumer_contract.payload.fields", [{"path": [{"field": "q\ud800"}]}],
         "consumer_contract.payload.fields.0.path.0.field: contains a lone surrogate (U+D800)"),
        ("consumer_contract.confirmation", {"prompt_template": "Order {{ q }}?\ud800",
         "denied_result_template": "No."}, "consumer_contract.confirmation.prompt_template: "
         "contains a lone surrogate (U+D800)"),
        ("consumer_contract.search.terms", {"order\ud800": [1, 0, 0, 0, 0]},
         "consumer_contract.search.terms: contains a lone surrogate (U+D800) at "
         "/order\\ud800"),
        ("consumer_contract.server_data", [{"kind": "audit\ud800", "schema": {}}],
         "consumer_contract.server_data.0.kind: contains a lone surrogate (U+D800)"),
    ],
    ids=["description", "tag", "title", "type-name", "field-path", "prompt", "search-term",
         "server-data-kind"],
)  # fmt: skip
def test_a_declaration_with_a_lone_surrogate_is_refused_naming_the_tool_and_field(
    field: str, value: Any, where: str
) -> None:
    # Built in Python (a provider's own declaration, a test's), such a string passed the
    # declaration models and failed later, encoding a provider request or a registry body.
    wire = declaration(obj(q={"type": "string"}), {"type": "string"})
    _set(wire, field, value)
    with pytest.raises(ContractError) as info:
        compile(wire, toolset=TOOLSET)
    assert str(info.value) == (
        f"tool {TOOL!r} declaration: {where}, which no UTF-8 document or provider request can "
        f"carry; fix the provider of toolset {TOOLSET!r}"
    )
    with pytest.raises(ValidationError) as caught:
        ToolSchema.model_validate(wire)
    assert caught.value.errors()[0]["type"] == "lone_surrogate"


@pytest.mark.parametrize(
    ("field", "value", "role", "where"),
    [
        ("result_schema", {"type": "string", "enum": ["a", "\ud800"]}, "result", "/enum/1"),
        ("consumer_contract.server_data", [{"kind": "audit", "schema": {"title": "\ud800"}}],
         "server data 'audit'", "/title"),
    ],
    ids=["result-enum", "server-data-schema"],
)  # fmt: skip
def test_a_schema_with_a_lone_surrogate_is_refused_by_compile_naming_the_place(
    field: str, value: Any, role: str, where: str
) -> None:
    # The declaration models leave JSON Schemas to compile, which names the schema and the
    # place in it.
    wire = declaration(obj(q={"type": "string"}), {"type": "string"})
    _set(wire, field, value)
    assert ToolSchema.model_validate(wire).name == TOOL
    with pytest.raises(ContractError) as info:
        compile(wire, toolset=TOOLSET)
    assert str(info.value) == (
        f"tool {TOOL!r} {role}: the schema contains a lone surrogate (U+D800) at {where}, which "
        "no UTF-8 document or provider request can carry; fix the provider of toolset "
        f"{TOOLSET!r}"
    )


def test_a_toolset_declaration_with_a_lone_surrogate_is_refused_naming_the_field() -> None:
    wire = declaration(obj(q={"type": "string"}), {"type": "string"})
    for field, value, loc in (
        ("description", "Shop \ud800.", ("description",)),
        ("version", "1\ud800", ("version",)),
        ("tags", ["ok", "\ud800"], ("tags", 1)),
    ):
        with pytest.raises(ValidationError) as caught:
            ToolsetDeclaration.model_validate({"name": TOOLSET, field: value, "tools": [wire]})
        (error,) = caught.value.errors()
        assert (error["type"], error["loc"]) == ("lone_surrogate", loc)
        assert error["msg"].startswith("contains a lone surrogate (U+D800), which no UTF-8")
    with pytest.raises(ContractError, match=r"tools\.0\.description\n  contains a lone surrogate"):
        fingerprint({"name": TOOLSET, "tools": [{**wire, "description": "\ud800"}]})
    # A provider declaring its tools in Python is refused where it declares them.
    with pytest.raises(ValidationError, match="lone surrogate"):
        tool_schema(
            tool_id=TOOL,
            title="Order",
            description="Places \ud800 an order.",
            tags=(),
            payload_schema={"type": "object"},
            payload_name=None,
            result_schema={},
            result_name=None,
            search=search_document(TOOL, "Order", "Places an order.", {"type": "object"}),
        )


def test_declarations_read_from_json_text_keep_their_characters() -> None:
    # JSON text cannot carry a lone surrogate (pydantic refuses the escape as invalid JSON);
    # a pair written as escapes is one character, and the check never looks at JSON text.
    wire = declaration(obj(q={"type": "string"}), {"type": "string"})
    wire["description"] = "Places an order \U0001f642."
    text = json.dumps({"name": TOOLSET, "tools": [wire]}, ensure_ascii=True)
    assert "\\ud83d\\ude42" in text
    parsed = ToolsetDeclaration.model_validate_json(text)
    assert parsed.tools[0].description == "Places an order \U0001f642."
    with pytest.raises(ValidationError, match="hex escape"):
        ToolsetDeclaration.model_validate_json(text.replace("\\ude42", ""))


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
