"""The rule by which a server's input schema must take what the design's payload schema lets
through (``contracts.schema_match``), keyword by keyword."""

from __future__ import annotations

from typing import Any

import pytest

from agentgen.runtime.contracts.schema_match import input_mismatches


def problems(declared: Any, served: Any) -> list[str]:
    return [str(mismatch) for mismatch in input_mismatches(declared, served)]


def obj(properties: dict[str, Any], *required: str, **more: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), **more}


STRING = {"type": "string"}
NUMBER = "the design allows number"


def test_identical_schemas_and_annotations_pass() -> None:
    declared = obj({"city": STRING, "days": {"type": "integer", "minimum": 1}}, "city")
    served = obj(
        {
            "city": {"type": "string", "title": "City", "description": "Where."},
            "days": {"type": "integer", "minimum": 1, "default": 3, "examples": [2]},
        },
        "city",
        title="forecastArguments",
    )
    assert problems(declared, served) == []


@pytest.mark.parametrize(
    ("declared", "served", "expected"),
    [
        ({"type": "integer"}, {"type": "number"}, []),
        ({"type": "number"}, {"type": "integer"}, [f"{NUMBER}, the server accepts only integer"]),
        (
            {"type": ["string", "null"]},
            STRING,
            ["the design allows null, the server accepts only string"],
        ),
        ({}, STRING, ["the design allows any JSON value, the server only string"]),
        (STRING, {}, []),
        ({"const": 3}, {"type": "integer"}, []),
        ({"enum": ["a", 1]}, STRING, ["the design allows integer, the server accepts only string"]),
    ],
)
def test_types(declared: Any, served: Any, expected: list[str]) -> None:
    found = problems(obj({"x": declared}), obj({"x": served}))
    assert found == [f"x: {message}" for message in expected]


def test_values_the_server_lists_bound_the_design() -> None:
    assert problems(obj({"u": {"enum": ["c", "f"]}}), obj({"u": {"enum": ["f", "c", "k"]}})) == []
    assert problems(obj({"u": {"enum": ["c", "f"]}}), obj({"u": {"enum": ["c"]}})) == [
        'u: the design allows the values ["f"], the server only ["c"]'
    ]
    assert problems(obj({"u": STRING}), obj({"u": {"type": "string", "enum": ["c"]}})) == [
        'u: the server accepts only the values ["c"], the design any'
    ]
    # JSON Schema equality: 1 is 1.0, never true.
    assert problems(obj({"n": {"const": 1.0}}), obj({"n": {"enum": [1]}})) == []
    assert problems(obj({"n": {"const": True}}), obj({"n": {"enum": [1, True]}})) == []
    assert problems(obj({"n": {"enum": [True]}}), obj({"n": {"enum": [1]}})) == [
        "n: the design allows boolean, the server accepts only integer",
        "n: the design allows the values [true], the server only [1]",
    ]


def test_server_constraints_must_be_declared_identically() -> None:
    served = obj({"name": {"type": "string", "maxLength": 20, "pattern": "^[a-z]+$"}})
    assert problems(obj({"name": STRING}), served) == [
        "name: the server constrains maxLength=20, the design does not",
        'name: the server constrains pattern="^[a-z]+$", the design does not',
    ]
    stricter = obj({"name": {"type": "string", "maxLength": 10, "pattern": "^[a-z]+$"}})
    assert problems(stricter, served) == [
        "name: the server constrains maxLength=20, the design maxLength=10"
    ]
    # Constraints of the design alone only narrow what it sends.
    assert problems(stricter, obj({"name": STRING})) == []


def test_required_properties_must_be_the_same_at_every_level() -> None:
    served = obj({"where": obj({"lat": {"type": "number"}, "lon": {"type": "number"}}, "lat")})
    declared = obj({"where": obj({"lat": {"type": "number"}, "lon": {"type": "number"}}, "lon")})
    assert problems(declared, served) == [
        "where.lat: the server requires it, the design does not",
        "where.lon: the design requires it, the server does not",
    ]


def test_unlisted_keys_only_count_when_the_design_lets_them_through() -> None:
    closed = obj({"a": STRING}, additionalProperties=False)
    # The runtime refuses keys a design object with properties does not list.
    assert problems(obj({"a": STRING}), closed) == []
    assert problems(obj({"a": STRING}, additionalProperties=True), closed) == [
        "(arguments): the design lets through properties it does not list, the server "
        "refuses them (additionalProperties: false)"
    ]
    unevaluated = obj({"a": STRING}, unevaluatedProperties=False)
    assert problems(obj({"a": STRING}), unevaluated) == []
    assert problems(obj({"a": STRING}, additionalProperties=True), unevaluated) == [
        "(arguments): the design lets through properties it does not list, the server "
        "refuses them (additionalProperties: false)"
    ]
    tags = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert problems(obj({"t": tags}), obj({"t": {"type": "object"}})) == []
    assert problems(
        obj({"t": tags}), obj({"t": {"type": "object", "additionalProperties": STRING}})
    ) == ["t.{*}: the design allows integer, the server accepts only string"]
    assert problems(
        obj({"t": {"type": "object"}}),
        obj({"t": {"type": "object", "additionalProperties": False}}),
    ) == [
        "t: the design lets through properties it does not list, the server refuses them "
        "(additionalProperties: false)"
    ]


def test_array_items() -> None:
    served = obj({"tags": {"type": "array", "items": STRING}})
    assert problems(obj({"tags": {"type": "array", "items": STRING}}), served) == []
    assert problems(obj({"tags": {"type": "array"}}), served) == [
        "tags[]: the design allows any JSON value, the server only string"
    ]
    nested = obj({"tags": {"type": "array", "items": obj({"k": {"type": "integer"}}, "k")}})
    assert problems(nested, obj({"tags": {"type": "array", "items": obj({"k": STRING}, "k")}})) == [
        "tags[].k: the design allows integer, the server accepts only string"
    ]


def test_references_resolve_inside_each_schema() -> None:
    place = obj({"lat": {"type": "number"}}, "lat")
    declared = obj({"p": {"$ref": "#/$defs/Place"}}, "p", **{"$defs": {"Place": place}})
    served = obj({"p": {"$ref": "#/definitions/P"}}, "p", definitions={"P": place})
    assert problems(declared, served) == []
    # JSON Pointer escapes (~1 is "/", ~0 is "~") and array indexes.
    escaped = obj(
        {"p": {"$ref": "#/definitions/a~1b~0c/1"}}, "p", definitions={"a/b~c": [{}, place]}
    )
    assert problems(declared, escaped) == []
    drifted = obj(
        {"p": {"$ref": "#/definitions/P"}}, "p", definitions={"P": obj({"lat": STRING}, "lat")}
    )
    assert problems(declared, drifted) == [
        "p.lat: the design allows number, the server accepts only string"
    ]
    assert problems(declared, obj({"p": {"$ref": "https://example.com/place"}}, "p")) == [
        "p: the server's $ref 'https://example.com/place' does not resolve inside its schema"
    ]


def test_recursive_schemas_end() -> None:
    tree = obj({"name": STRING, "children": {"type": "array", "items": {"$ref": "#"}}}, "name")
    assert problems(tree, tree) == []
    other = obj(
        {"name": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#"}}}, "name"
    )
    assert problems(tree, other) == [
        "name: the design allows string, the server accepts only integer"
    ]


def test_alternatives() -> None:
    place = obj({"lat": {"type": "number"}, "lon": {"type": "number"}}, "lat", "lon")
    optional_place = {"anyOf": [place, {"type": "null"}], "default": None}
    assert problems(obj({"p": optional_place}), obj({"p": optional_place})) == []
    # The one alternative of the same type says what differs.
    assert problems(
        obj({"p": optional_place}),
        obj({"p": {"anyOf": [obj({"lat": {"type": "number"}}, "lat"), {"type": "null"}]}}),
    ) == ["p.lon: the server has no such property (the design requires it)"]
    # A design alternative the server has no alternative for.
    assert problems(obj({"p": optional_place}), obj({"p": place})) == [
        "p: the design allows null, the server accepts only object"
    ]
    # Several server alternatives of that type: none takes it.
    shapes = {"oneOf": [obj({"r": {"type": "number"}}, "r"), obj({"w": {"type": "number"}}, "w")]}
    (found,) = problems(obj({"s": obj({"h": {"type": "number"}}, "h")}), obj({"s": shapes}))
    assert found.startswith(
        "s: matches none of the server's 2 alternatives (anyOf/oneOf); closest: "
    )
    # The design's own alternatives each need a server alternative.
    assert (
        problems(
            obj({"v": {"anyOf": [STRING, {"type": "integer"}]}}),
            obj({"v": {"anyOf": [STRING, {"type": "number"}]}}),
        )
        == []
    )


def test_a_server_schema_refusing_everything() -> None:
    assert problems(obj({"x": STRING}), obj({"x": False})) == [
        "x: the server's schema refuses every value"
    ]


def test_nesting_is_bounded() -> None:
    deep: dict[str, Any] = STRING
    for _ in range(200):
        deep = obj({"n": deep}, "n")
    (found,) = problems(deep, deep)
    assert found == ".".join(["n"] * 64) + ": nested deeper than 64 levels: not compared further"


SCHEMA = "not a JSON Schema (an object or a boolean)"


@pytest.mark.parametrize(
    ("declared", "served", "expected"),
    [
        (
            {"type": "array", "items": {"type": "number"}},
            {"type": "array", "items": [{"type": "number"}]},
            "x[]: the server's items is a list of schemas (the tuple form of JSON Schema up to "
            "2019-09), which the check does not compare: have the server publish prefixItems "
            "(2020-12), or items as one schema",
        ),
        (
            STRING,
            {"type": "strin"},
            'x: the server\'s type "strin" is not a JSON type name (array, boolean, integer, '
            "null, number, object, string) or a list of them",
        ),
        (
            STRING,
            {"type": ["string", "string"]},
            'x: the server\'s type ["string", "string"] is not a JSON type name (array, boolean, '
            "integer, null, number, object, string) or a list of them",
        ),
        (STRING, {"enum": "abc"}, 'x: the server\'s enum "abc" is not a list'),
        (STRING, {"oneOf": []}, "x: the server's oneOf [] is not a non-empty list"),
        (
            STRING,
            {"anyOf": [STRING, 3]},
            f"x: anyOf[1]: the server's schema is a number 3, {SCHEMA}",
        ),
        (
            obj({"a": STRING}),
            {"type": "object", "properties": [1]},
            "x: the server's properties [1] is not an object",
        ),
        (
            obj({"a": STRING}),
            {"type": "object", "properties": {"a": STRING, "b": 5}},
            f"x.b: the server's schema is a number 5, {SCHEMA}",
        ),
        (
            obj({"a": STRING}, "a"),
            obj({"a": STRING}) | {"required": "a"},
            'x: the server\'s required "a" is not a list of names',
        ),
        (
            {"type": "object"},
            {"type": "object", "additionalProperties": "no"},
            f'x: the server\'s additionalProperties is a string "no", {SCHEMA}',
        ),
    ],
)
def test_server_keywords_of_the_wrong_form_are_problems(
    declared: Any, served: Any, expected: str
) -> None:
    """A server keyword JSON Schema gives another form would read as no constraint (or crash
    the reading): each is a problem naming where it is and what it holds."""
    assert problems(obj({"x": declared}), obj({"x": served})) == [expected]


def test_a_reference_to_something_that_is_no_schema_is_a_problem() -> None:
    for ref in ({"$ref": "#/$defs/x"}, {"$ref": "#/$defs/x", "title": "X"}):
        served = obj({"x": ref}) | {"$defs": {"x": 5}}
        assert problems(obj({"x": STRING}), served) == [
            f"x: the server's schema is a number 5, {SCHEMA}"
        ]
