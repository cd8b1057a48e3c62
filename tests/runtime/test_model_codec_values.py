"""Compiled tools: what their generated models let through, and what they should not.

- A result is checked against ``Return`` again when it is encoded: an instance built with
  ``model_construct``, changed after validation, holding a NaN, or of a subclass used to reach
  the model as JSON the contract refuses (docs/troubleshooting.md promises ``invalid_result``).
- An argument beyond a double's range (``1e400``) was read as infinity: the tool ran with
  ``inf`` while the person confirmed ``null``.
- An integer written ``10.0`` is an integer in JSON Schema (the schema the model is shown) and
  for registry tools; strict pydantic refused it.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel, Field

from agentgen.runtime.app import Runtime
from agentgen.runtime.contracts.codecs import ModelCodec, PayloadError, SchemaCodec, parse_arguments
from agentgen.runtime.messages import Message, ToolCallPart
from examples.records.gen.assistant.toolsets.records import types
from tests.runtime.agents import Records, ScriptedPlanner, answer, calls, register


def error_of(part: Any) -> dict[str, Any]:
    assert part.is_error, part
    error: dict[str, Any] = json.loads(part.content)["error"]
    return error


# --------------------------------------------------------------------------- results


class Breaking(Records):
    async def lookup(self, args: types.LookupArgs, context: Any) -> types.Record:
        record = types.Record(id=args.id, title="T", body="B")
        record.title = None  # type: ignore[assignment]
        return record

    async def search(self, args: types.SearchArgs, context: Any) -> types.SearchResult:
        return types.SearchResult.model_construct()  # "ids" is required


async def test_results_that_break_their_contract_are_invalid_results() -> None:
    rt = Runtime()
    planner = ScriptedPlanner(
        [calls(("records.lookup", {"id": "1"}), ("records.search", {"query": "x"})), answer()]
    )
    register(rt, planner, executor=Breaking())
    outcome = await rt.client("test.agent").run("go")
    lookup, search = (error_of(part) for part in outcome.transcript[2].parts)
    assert lookup["kind"] == search["kind"] == "invalid_result"
    assert [issue["path"] for issue in lookup["issues"]] == ["title"]
    assert search["issues"] == [{"path": "ids", "message": "Field required"}]


class Score(BaseModel):
    score: float
    parts: list[float] = []


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (Score(score=float("nan")), "score"),
        (Score(score=1.0, parts=[0.5, float("-inf")]), "parts[1]"),
        (Score(score=float("inf")), "score"),
    ],
)
def test_non_finite_floats_are_refused_where_they_are(value: Score, path: str) -> None:
    with pytest.raises(PayloadError) as raised:
        ModelCodec(Score, "result of t").encode(value)
    (issue,) = raised.value.issues
    assert issue.path == path and "is not a JSON number" in issue.message


def test_a_field_assigned_a_wrong_type_is_refused() -> None:
    value = Score(score=1.0)
    value.score = "high"  # type: ignore[assignment]
    with pytest.raises(PayloadError, match="score"):
        ModelCodec(Score, "result of t").encode(value)


def test_a_subclass_is_written_as_the_contracts_model() -> None:
    class Detailed(Score):
        secret: str = "internal"

    text = ModelCodec(Score, "result of t").encode(Detailed(score=1.5, secret="x"))
    assert json.loads(text) == {"score": 1.5, "parts": []}


def test_valid_results_are_written_as_before() -> None:
    codec = ModelCodec(types.Record, "result")
    record = types.Record(id="1", title="T", body="B")
    assert codec.encode(record) == record.model_dump_json(by_alias=True)


# --------------------------------------------------------------------------- numbers


class Send(BaseModel):
    amount: float
    count: int = 0
    counts: list[int] = []
    either: int | str = 0
    maybe: int | None = None
    ratio: float | int = 0


def decode(text: str) -> Send:
    return ModelCodec(Send, "arguments of pay.send").decode_arguments(parse_arguments(text, "a"))


@pytest.mark.parametrize(
    ("text", "path"),
    [('{"amount": 1e400}', "amount"), ('{"amount": 1, "ratio": -2.5e308}', "ratio")],
)
def test_numbers_beyond_a_double_are_refused_naming_the_field(text: str, path: str) -> None:
    with pytest.raises(PayloadError) as raised:
        decode(text)
    (issue,) = raised.value.issues
    assert issue.path == path and "beyond the range of a double" in issue.message


async def test_a_call_with_an_infinite_argument_never_runs() -> None:
    rt = Runtime()
    arguments = '{"query": "x", "limit": 1e400}'
    call = Message("assistant", (ToolCallPart("c1", "records.search", arguments),))
    executor = register(rt, ScriptedPlanner([call, answer()]))
    outcome = await rt.client("test.agent").run("go")
    assert error_of(outcome.transcript[2].parts[0])["kind"] == "invalid_arguments"
    assert executor.calls == []


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [
        ('{"amount": 1, "count": 10.0}', "count", 10),
        ('{"amount": 1, "count": 1E+2}', "count", 100),
        ('{"amount": 1, "counts": [1.0, 2, 3.00]}', "counts", [1, 2, 3]),
        ('{"amount": 1, "either": 4.0}', "either", 4),
        ('{"amount": 1, "maybe": 5.0}', "maybe", 5),
        pytest.param('{"amount": 1, "count": 1e400}', "count", 10**400, id="beyond-a-double"),
    ],
)
def test_integral_numbers_are_integers_where_the_schema_wants_one(
    text: str, field: str, expected: Any
) -> None:
    value = getattr(decode(text), field)
    assert value == expected
    assert type(value) is type(expected)
    # as a registry tool with the same schema reads it
    SchemaCodec(Send.model_json_schema(), "a").decode_arguments(parse_arguments(text, "a"))


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [('{"amount": 10.0}', "amount", 10.0), ('{"amount": 1, "ratio": 2.0}', "ratio", 2.0)],
)
def test_numbers_stay_floats_where_the_schema_takes_any_number(
    text: str, field: str, expected: float
) -> None:
    value = getattr(decode(text), field)
    assert value == expected and type(value) is float


@pytest.mark.parametrize("text", ['{"amount": 1, "count": 10.5}', '{"amount": 1, "count": true}'])
def test_other_numbers_are_still_refused_for_integers(text: str) -> None:
    with pytest.raises(PayloadError, match="count"):
        decode(text)


class Nested(BaseModel):
    class Inner(BaseModel):
        n: int = Field(ge=0)

    inner: Inner
    by_name: dict[str, int] = {}
    pair: tuple[float, int] = (0.0, 0)


def test_integers_are_found_through_references_maps_and_tuples() -> None:
    text = '{"inner": {"n": 3.0}, "by_name": {"a": 2.0}, "pair": [1.0, 2.0]}'
    value = ModelCodec(Nested, "a").decode_arguments(parse_arguments(text, "a"))
    assert value.inner.n == 3 and value.by_name == {"a": 2}
    assert value.pair == (1.0, 2) and type(value.pair[0]) is float
    assert type(value.pair[1]) is int


def test_arguments_as_text_are_read_the_same_way() -> None:
    codec = ModelCodec(Send, "a")
    assert codec.decode_arguments('{"amount": 1, "count": 2.0}').count == 2
    assert codec.decode_arguments({"amount": 1, "count": Decimal("2.0")}).count == 2


# ------------------------------------------------------------- Decimal fields, as written


class _Line(BaseModel):
    price: Decimal = Field(max_digits=20)
    qty: int = 1


class _Order(BaseModel):
    lines: list[_Line]
    total: Decimal = Field(default=Decimal("0"), le=Decimal("0.1"))
    note: str | None = None


def test_a_decimal_field_runs_with_the_number_written_not_its_double() -> None:
    # pydantic reads a JSON number for a Decimal field as a double: 12345678901234567.89 ran
    # as Decimal('12345678901234568').
    codec = ModelCodec(_Order, "arguments of shop.order")
    text = '{"lines": [{"price": 12345678901234567.89}, {"price": 1.5, "qty": 2}]}'
    order = codec.decode_arguments(parse_arguments(text, codec.what))
    assert [line.price for line in order.lines] == [
        Decimal("12345678901234567.89"),
        Decimal("1.5"),
    ]
    assert order.model_fields_set == {"lines"}  # defaults stay defaults
    assert order.lines[1].qty == 2


def test_a_decimal_field_judges_its_constraints_on_the_number_written() -> None:
    codec = ModelCodec(_Order, "arguments of shop.order")
    text = '{"lines": [], "total": 0.1000000000000000055}'
    with pytest.raises(PayloadError) as refused:
        codec.decode_arguments(parse_arguments(text, codec.what))
    assert [issue.path for issue in refused.value.issues] == ["total"]
    long = '{"lines": [{"price": 1234567890123456789012.5}]}'
    with pytest.raises(PayloadError, match=r"lines\[0\]\.price: .*no more than 20 digits"):
        codec.decode_arguments(parse_arguments(long, codec.what))
