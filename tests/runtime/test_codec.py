"""Payload and result codecs: every issue reported with its path, wrong values refused."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, Field

from agentgen.runtime.contracts.codecs import (
    FieldIssue,
    ModelCodec,
    NullCodec,
    PayloadError,
    SchemaCodec,
    decode_exact,
    encode_exact,
)


class Item(BaseModel):
    name: str
    qty: int


class Order(BaseModel):
    order_id: str = Field(alias="orderId")
    items: list[Item]
    note: str | None = None


class Other(BaseModel):
    order_id: str


ORDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 0},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "tags": {"type": "array"}},
                "required": ["name"],
            },
        },
    },
    "required": ["count"],
}


def issues(error: pytest.ExceptionInfo[PayloadError]) -> list[tuple[str, str]]:
    return [(i.path, i.message) for i in error.value.issues]


# --- PayloadError -------------------------------------------------------------------------------


def test_payload_error_lists_every_issue() -> None:
    error = PayloadError(
        "shop.order payload", [FieldIssue("items[2].name", "bad"), FieldIssue("", "worse")]
    )
    assert str(error) == "shop.order payload is invalid: items[2].name: bad; worse"
    assert error.what == "shop.order payload"
    assert error.issues == (FieldIssue("items[2].name", "bad"), FieldIssue("", "worse"))
    assert isinstance(error, ValueError)


def test_issue_paths_read_like_code() -> None:
    assert str(FieldIssue("items[2].name", "is wrong")) == "items[2].name: is wrong"
    assert str(FieldIssue("", "is wrong")) == "is wrong"


# --- ModelCodec ---------------------------------------------------------------------------------


def test_model_codec_reports_every_field_with_its_path() -> None:
    codec = ModelCodec(Order, "shop.order payload")
    text = '{"items":[{"name":"a","qty":1},{"name":"b"},{"name":5,"qty":"x"}]}'
    with pytest.raises(PayloadError) as info:
        codec.decode(text)
    assert [path for path, _ in issues(info)] == [
        "orderId",
        "items[1].qty",
        "items[2].name",
        "items[2].qty",
    ]
    message = str(info.value)
    assert message.startswith("shop.order payload is invalid: ")
    for path in ("orderId", "items[1].qty", "items[2].name", "items[2].qty"):
        assert f"{path}: " in message


def test_model_codec_decodes_text_bytes_and_values() -> None:
    codec = ModelCodec(Order, "shop.order payload")
    expected = Order(orderId="o1", items=[Item(name="a", qty=2)])
    assert codec.decode('{"orderId":"o1","items":[{"name":"a","qty":2}]}') == expected
    assert codec.decode(b'{"orderId":"o1","items":[{"name":"a","qty":2}]}') == expected
    assert codec.decode({"orderId": "o1", "items": [{"name": "a", "qty": 2}]}) == expected


def test_model_codec_refuses_text_that_is_not_json() -> None:
    with pytest.raises(PayloadError) as info:
        ModelCodec(Order, "shop.order payload").decode("{not json")
    assert len(info.value.issues) == 1
    assert "JSON" in info.value.issues[0].message


def test_model_codec_encodes_by_alias() -> None:
    codec = ModelCodec(Order, "shop.order result")
    text = codec.encode(Order(orderId="o1", items=[Item(name="a", qty=2)]))
    assert json.loads(text) == {"orderId": "o1", "items": [{"name": "a", "qty": 2}], "note": None}


@pytest.mark.parametrize(
    "value",
    [
        Other(order_id="o1"),
        {"orderId": "o1", "items": []},
        Item(name="a", qty=1),
        None,
        '{"orderId":"o1","items":[]}',
    ],
    ids=["other-model", "dict", "nested-model", "none", "text"],
)
def test_model_codec_refuses_instances_of_another_class(value: Any) -> None:
    codec = ModelCodec(Order, "shop.order result")
    with pytest.raises(PayloadError) as info:
        codec.encode(value)
    assert issues(info) == [("", f"expected Order, got {type(value).__name__}")]
    assert info.value.what == "shop.order result"


# --- NullCodec ----------------------------------------------------------------------------------


def test_null_codec_accepts_null_only() -> None:
    codec = NullCodec("shop.ping result")
    assert codec.decode("null") is None
    assert codec.decode(b" null ") is None
    assert codec.decode(None) is None
    assert codec.encode(None) == "null"


@pytest.mark.parametrize("data", ["0", "false", '""', "{}", "[]", '"null"', 0, False, "", {}])
def test_null_codec_refuses_other_values(data: Any) -> None:
    with pytest.raises(PayloadError) as info:
        NullCodec("shop.ping result").decode(data)
    assert info.value.what == "shop.ping result"
    assert len(info.value.issues) == 1


@pytest.mark.parametrize("data", ["", "nul", "NaN", "{"])
def test_null_codec_reports_text_that_is_not_json(data: str) -> None:
    with pytest.raises(PayloadError, match="not JSON"):
        NullCodec("shop.ping result").decode(data)


@pytest.mark.parametrize("what", ["null", "schema"])
def test_json_nested_too_deeply_to_parse_is_a_payload_error(what: str) -> None:
    # A RecursionError from the parser used to escape (the registry answered a 500).
    codec = NullCodec("t result") if what == "null" else SchemaCodec({"type": "array"}, "t")
    with pytest.raises(PayloadError, match="nested too deeply"):
        codec.decode("[" * 50_000 + "]" * 50_000)


@pytest.mark.parametrize("value", [0, False, "", {}, [], "null"])
def test_null_codec_refuses_to_encode_values(value: Any) -> None:
    with pytest.raises(PayloadError) as info:
        NullCodec("shop.ping result").encode(value)  # type: ignore[arg-type]
    assert issues(info) == [("", f"expected None, got {type(value).__name__}")]


# --- SchemaCodec --------------------------------------------------------------------------------


def test_schema_codec_lists_every_issue_with_its_path() -> None:
    codec = SchemaCodec(ORDER_SCHEMA, "shop.order payload")
    with pytest.raises(PayloadError) as info:
        codec.decode('{"items":[{"name":"a"},{},{"name":1,"tags":"x"}]}')
    assert issues(info) == [
        ("", "'count' is a required property"),
        ("items[1]", "'name' is a required property"),
        ("items[2].name", "1 is not of type 'string'"),
        ("items[2].tags", "'x' is not of type 'array'"),
    ]
    assert str(info.value) == (
        "shop.order payload is invalid: 'count' is a required property; "
        "items[1]: 'name' is a required property; items[2].name: 1 is not of type 'string'; "
        "items[2].tags: 'x' is not of type 'array'"
    )


def test_schema_codec_paths_go_through_nested_arrays_and_odd_keys() -> None:
    schema = {
        "type": "object",
        "additionalProperties": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "integer"}},
        },
    }
    codec = SchemaCodec(schema, "w")
    with pytest.raises(PayloadError) as info:
        codec.decode('{"a-b":[[1],[2,"x"]],"0":[[true]]}')
    assert sorted(path for path, _ in issues(info)) == ["0[0][0]", "a-b[1][1]"]


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        "Infinity",
        "-Infinity",
        '{"count":NaN}',
        '{"count":1,"items":[{"name":"a","tags":[Infinity]}]}',
        '{"count":-Infinity}',
    ],
)
def test_schema_codec_rejects_nan_and_infinity_in_text(text: str) -> None:
    codec = SchemaCodec({}, "shop.order payload")  # the empty schema accepts any JSON
    with pytest.raises(PayloadError) as info:
        codec.decode(text)
    assert info.value.issues[0].path == ""
    assert info.value.issues[0].message.startswith("not JSON: ")
    with pytest.raises(ValueError):
        decode_exact(text)


@pytest.mark.parametrize("text", ["", "{", "[1,]", "{'a':1}", "01"])
def test_schema_codec_rejects_text_that_is_not_json(text: str) -> None:
    with pytest.raises(PayloadError, match="not JSON"):
        SchemaCodec({}, "w").decode(text)


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), Decimal("NaN"), Decimal("-Infinity"), {"a": [float("inf")]}],
)
def test_schema_codec_refuses_to_encode_non_finite_numbers(value: Any) -> None:
    with pytest.raises(PayloadError) as info:
        SchemaCodec({}, "shop.order result").encode(value)
    assert info.value.what == "shop.order result"


def test_schema_codec_refuses_to_encode_values_that_are_not_json() -> None:
    with pytest.raises(PayloadError, match="not JSON serializable"):
        SchemaCodec({}, "w").encode({"when": object()})


def test_schema_codec_validates_before_encoding() -> None:
    codec = SchemaCodec(ORDER_SCHEMA, "shop.order result")
    assert codec.encode({"count": 1, "items": []}) == '{"count":1,"items":[]}'
    with pytest.raises(PayloadError) as info:
        codec.encode({"count": -1})
    assert [path for path, _ in issues(info)] == ["count"]


def test_schema_codec_decodes_text_bytes_and_values() -> None:
    codec = SchemaCodec(ORDER_SCHEMA, "w")
    assert codec.decode('{"count":2}') == {"count": 2}
    assert codec.decode(b'{"count":2}') == {"count": 2}
    assert codec.decode({"count": 2}) == {"count": 2}
    with pytest.raises(PayloadError):
        codec.decode({"count": "2"})


def test_schema_codec_refuses_invalid_schemas() -> None:
    with pytest.raises(jsonschema.SchemaError):
        SchemaCodec({"type": "strng"}, "w")


def test_schema_codec_accepts_python_floats_and_decimals_alike() -> None:
    codec = SchemaCodec({"type": "number", "multipleOf": 0.5, "enum": [1.5, 2.5]}, "w")
    assert codec.encode(1.5) == "1.5"
    assert codec.encode(Decimal("2.50")) == "2.50"
    with pytest.raises(PayloadError):
        codec.encode(Decimal("2.0"))


def test_exact_json_keeps_numbers_and_order() -> None:
    text = '{"b":9007199254740993,"a":[0.1,1.10,-0.0,1E+400],"c":"é"}'
    value = decode_exact(text)
    assert value["b"] == 2**53 + 1
    assert value["a"][0] == Decimal("0.1")
    assert encode_exact(value) == text
    assert list(value) == ["b", "a", "c"]
