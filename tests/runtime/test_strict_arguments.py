"""Model arguments are validated strictly, for compiled and registry tools alike (SPEC L5).

Nothing a model wrote is converted or dropped: ``true`` is not 1, ``"7"`` is not 7, a key the
contract does not list is an error. What a person confirms is the payload that executes.
"""

from __future__ import annotations

import enum
import json
from dataclasses import replace
from decimal import Decimal
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from agentgen.runtime.app import Runtime
from agentgen.runtime.contracts import limits
from agentgen.runtime.contracts.codecs import ModelCodec, PayloadError, SchemaCodec, parse_arguments
from agentgen.runtime.contracts.specs import ConfirmationSpec
from agentgen.runtime.messages import Message, ToolCallPart
from agentgen.runtime.runs.confirmation import ConfirmationRequest
from tests.runtime.agents import ScriptedPlanner, answer, calls, records_definition, register
from tests.runtime.fake_registry import FakeRegistry
from tests.runtime.test_saved_contracts import PAY, payments, setup


def error_of(part: Any) -> dict[str, Any]:
    assert part.is_error, part
    error: dict[str, Any] = json.loads(part.content)["error"]
    return error


def raw_call(tool: str, arguments: str) -> Message:
    return Message("assistant", (ToolCallPart("raw-1", tool, arguments),))


# --------------------------------------------------------------------------- compiled tools


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ({"query": "x", "limit": True}, "limit"),
        ({"query": "x", "limit": "7"}, "limit"),
        ({"query": "x", "limit": 7.5}, "limit"),
        ({"query": "x", "sneaky": "drop me"}, "sneaky"),
        ({"query": 5}, "query"),
    ],
    ids=["bool-to-int", "str-to-int", "float-to-int", "unknown-key", "int-to-str"],
)
async def test_compiled_tools_convert_nothing(arguments: dict[str, Any], path: str) -> None:
    rt = Runtime()
    planner = ScriptedPlanner([calls(("records.search", arguments)), answer()])
    executor = register(rt, planner)
    outcome = await rt.client("test.agent").run("go")
    error = error_of(outcome.transcript[2].parts[0])
    assert error["kind"] == "invalid_arguments"
    assert [issue["path"] for issue in error["issues"]] == [path]
    assert executor.calls == []


async def test_compiled_tools_take_an_integer_written_with_a_point_as_registry_tools_do() -> None:
    # "type": "integer" (what the model is shown) includes 7.0 in JSON Schema 2020-12, and a
    # registry tool takes it; strict pydantic refused it for the compiled tool.
    rt = Runtime()
    planner = ScriptedPlanner(
        [raw_call("records.search", '{"query": "x", "limit": 7.0}'), answer()]
    )
    executor = register(rt, planner)
    outcome = await rt.client("test.agent").run("go")
    assert not outcome.transcript[2].parts[0].is_error  # type: ignore[union-attr]
    (name, args, _) = executor.calls[0]
    assert (name, args.limit, type(args.limit)) == ("search", 7, int)
    registry = SchemaCodec(
        {"type": "object", "properties": {"limit": {"type": "integer"}}}, "arguments"
    )
    assert registry.decode_arguments('{"limit": 7.0}') == {"limit": Decimal("7.0")}


class _Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class _Literals(BaseModel):
    one: Literal[1, "a"] = 1
    maybe_one: Literal[1] | None = None
    level: _Level = _Level.LOW
    yes: Literal[True] = True
    either: Literal[1, True] = 1
    many: list[Literal[2, 3]] = []


@pytest.mark.parametrize(
    ("arguments", "path", "valid"),
    [
        ('{"one": true}', "one", False),
        ('{"maybe_one": true}', "maybe_one", False),
        ('{"level": true}', "level", False),
        ('{"yes": 1}', "yes", False),
        ('{"yes": 1.0}', "yes", False),
        ('{"many": [2, false]}', "many[1]", False),
        ('{"one": 1.0, "maybe_one": 1, "level": 2.0, "yes": true, "many": [3]}', "", True),
        ('{"either": true}', "", True),
        ('{"either": 1.0}', "", True),
    ],
)
def test_compiled_literals_tell_booleans_from_numbers_as_json_schema_does(
    arguments: str, path: str, valid: bool
) -> None:
    # pydantic compares literals with Python's ==, for which True is 1: Literal[1] took true
    # (and ran with 1), Literal[True] took 1, strict mode or not; a registry tool refused both.
    compiled = ModelCodec(_Literals, "arguments of t")
    registry = SchemaCodec(_Literals.model_json_schema(), "arguments of t")
    for codec in (compiled, registry):
        value = parse_arguments(arguments, codec.what)
        if valid:
            codec.decode_arguments(value)
            continue
        with pytest.raises(PayloadError) as refused:
            codec.decode_arguments(value)
        assert {issue.path for issue in refused.value.issues} == {path}, codec


async def test_compiled_tools_still_take_valid_arguments_and_fill_defaults() -> None:
    rt = Runtime()
    planner = ScriptedPlanner([calls(("records.search", {"query": "x"})), answer()])
    executor = register(rt, planner)
    await rt.client("test.agent").run("go")
    (name, args, _) = executor.calls[0]
    assert (name, args.query, args.limit) == ("search", "x", 10)


# --------------------------------------------------------------------------- registry tools


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ({"amount": True}, "amount"),
        ({"amount": "7"}, "amount"),
        ({"amount": 7, "to": "mallory"}, ""),
    ],
    ids=["bool-to-int", "str-to-int", "unknown-key"],
)
async def test_registry_tools_convert_nothing(arguments: dict[str, Any], path: str) -> None:
    registry = FakeRegistry()
    registry.publish(payments(), _handler)
    decisions: list[ConfirmationRequest] = []
    planner = ScriptedPlanner([calls(("payments.pay", arguments)), answer()])
    outcome = (
        await setup(registry, planner, decisions)
        .client("test.payer")
        .run("go", labels={"tenant": "t"})
    )
    error = error_of(outcome.transcript[2].parts[0])
    assert error["kind"] == "invalid_arguments"
    assert [issue["path"] for issue in error["issues"]] == [path]
    assert decisions == [] and registry.calls == []


async def _handler(tool: str, payload: Any, meta: Any) -> Any:
    return {"paid": payload["amount"]}


async def test_registry_schemas_that_allow_other_keys_keep_them() -> None:
    open_pay = {**PAY, "additionalProperties": {"type": "string"}}
    registry = FakeRegistry()
    registry.publish(payments(payload=open_pay), _handler)
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1, "memo": "rent"})), answer()])
    outcome = (
        await setup(registry, planner, []).client("test.payer").run("go", labels={"tenant": "t"})
    )
    assert not outcome.transcript[2].parts[0].is_error  # type: ignore[union-attr]
    assert json.loads(registry.calls[0][1]) == {"amount": 1, "memo": "rent"}


# --------------------------------------------------------------------------- what is confirmed


async def test_the_confirmation_shows_the_payload_that_executes() -> None:
    asked: list[ConfirmationRequest] = []

    async def confirm(request: ConfirmationRequest) -> bool:
        asked.append(request)
        return True

    specs = tuple(
        replace(s, confirmation=ConfirmationSpec("Search {{ args | tojson }}?", "No."))
        for s in records_definition().specs
    )
    rt = Runtime(confirm=confirm)
    planner = ScriptedPlanner([calls(("records.search", {"query": "x"})), answer()])
    executor = register(rt, planner, records_definition(specs=specs))
    await rt.client("test.agent").run("go")
    (request,) = asked
    assert request.prompt == 'Search {"limit": 10, "query": "x"}?'
    assert dict(request.arguments) == {"query": "x", "limit": 10}
    (_, args, _) = executor.calls[0]
    assert args.model_dump() == {"query": "x", "limit": 10}


async def test_registry_confirmations_show_the_payload_sent() -> None:
    registry = FakeRegistry()
    registry.publish(payments("Pay {{ args | tojson }}?"), _handler)
    decisions: list[ConfirmationRequest] = []
    planner = ScriptedPlanner([calls(("payments.pay", {"amount": 12})), answer()])
    await setup(registry, planner, decisions).client("test.payer").run("go", labels={"tenant": "t"})
    assert decisions[0].prompt == 'Pay {"amount": 12}?'
    assert registry.calls[0][1] == '{"amount":12}'


# --------------------------------------------------------------------------- bounds


def nested(depth: int) -> str:
    return '{"query":' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [limits.MAX_ARGUMENT_DEPTH + 1, 5_000, 200_000])
async def test_deeply_nested_arguments_are_invalid_arguments(depth: int) -> None:
    rt = Runtime()
    planner = ScriptedPlanner([raw_call("records.search", nested(depth)), answer()])
    executor = register(rt, planner)
    outcome = await rt.client("test.agent").run("go")
    error = error_of(outcome.transcript[2].parts[0])
    assert error["kind"] == "invalid_arguments", error
    assert f"{limits.MAX_ARGUMENT_DEPTH} levels" in error["issues"][0]["message"]
    assert executor.calls == []


async def test_deeply_nested_registry_arguments_are_invalid_arguments() -> None:
    registry = FakeRegistry()
    registry.publish(payments(), _handler)
    planner = ScriptedPlanner(
        [raw_call("payments.pay", '{"amount":' + "[" * 5000 + "]" * 5000 + "}"), answer()]
    )
    outcome = (
        await setup(registry, planner, []).client("test.payer").run("go", labels={"tenant": "t"})
    )
    assert error_of(outcome.transcript[2].parts[0])["kind"] == "invalid_arguments"


async def test_arguments_have_a_stated_size_limit() -> None:
    rt = Runtime()
    text = json.dumps({"query": "x" * limits.MAX_ARGUMENTS_BYTES})
    planner = ScriptedPlanner([raw_call("records.search", text), answer()])
    register(rt, planner)
    outcome = await rt.client("test.agent").run("go")
    error = error_of(outcome.transcript[2].parts[0])
    assert error["kind"] == "invalid_arguments"
    assert str(limits.MAX_ARGUMENTS_BYTES) in error["issues"][0]["message"]


# --------------------------------------------------------------------------- what "closed" means


def strict(schema: dict[str, Any], value: Any) -> bool:
    try:
        SchemaCodec(schema, "t").decode_arguments(value)
    except PayloadError:
        return False
    return True


OBJ = {"type": "object", "properties": {"a": {"type": "string"}}}


@pytest.mark.parametrize(
    ("schema", "value", "valid"),
    [
        (OBJ, {"a": "x"}, True),
        (OBJ, {"a": "x", "b": 1}, False),
        ({"type": "object", "properties": {"o": OBJ}}, {"o": {"a": "x", "b": 1}}, False),
        ({"type": "object", "properties": {"o": {"type": "array", "items": OBJ}}},
         {"o": [{"a": "x"}, {"b": 1}]}, False),
        ({**OBJ, "additionalProperties": True}, {"a": "x", "b": 1}, True),
        ({**OBJ, "unevaluatedProperties": {"type": "integer"}}, {"a": "x", "b": 1}, True),
        ({"type": "object"}, {"anything": 1}, True),
        ({**OBJ, "patternProperties": {"^x_": {}}}, {"a": "x", "x_1": 1}, True),
        ({**OBJ, "patternProperties": {"^x_": {}}}, {"a": "x", "y": 1}, False),
        # Alternatives describe the whole value: each is closed.
        ({"oneOf": [OBJ, {"type": "object", "properties": {"b": {}}, "required": ["b"]}]},
         {"b": 1, "c": 2}, False),
        # Several allOf branches each describe part of it: none is closed.
        ({"allOf": [OBJ, {"type": "object", "properties": {"b": {}}}]}, {"a": "x", "b": 1}, True),
        # A reference with only annotations beside it is the whole value: closed.
        ({"type": "object", "$defs": {"o": OBJ},
          "properties": {"o": {"$ref": "#/$defs/o", "description": "d"}}},
         {"o": {"a": "x", "b": 1}}, False),
        # A reference next to other properties is part of it: open.
        ({"$defs": {"o": OBJ}, "$ref": "#/$defs/o", "properties": {"b": {}}},
         {"a": "x", "b": 1}, True),
    ],
    ids=[
        "listed",
        "unlisted",
        "nested",
        "in-array",
        "additional-true",
        "unevaluated-schema",
        "free-form",
        "pattern-key",
        "pattern-miss",
        "oneOf-closed",
        "allOf-open",
        "ref-closed",
        "ref-with-properties-open",
    ],
)  # fmt: skip
def test_which_objects_are_closed(schema: dict[str, Any], value: Any, valid: bool) -> None:
    assert strict(schema, value) is valid


def test_the_advertised_schema_is_unchanged() -> None:
    codec = SchemaCodec(json.loads(json.dumps(OBJ)), "t")
    codec.decode_arguments({"a": "x"})
    assert codec.schema == OBJ
    assert codec.decode({"a": "x", "b": 1}) == {"a": "x", "b": 1}
