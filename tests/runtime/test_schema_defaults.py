"""Schema-typed tools get the schema's defaults filled in, like compiled tools: the person
confirms, and the provider is sent, the payload that runs."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from agentgen.runtime.contracts.codecs import PayloadError, SchemaCodec
from agentgen.runtime.contracts.schema_defaults import DefaultsTooLarge, fill_defaults
from agentgen.runtime.runs.confirmation import ConfirmationRequest
from tests.runtime.agents import ScriptedPlanner, answer, calls, echo_handler
from tests.runtime.fake_registry import FakeRegistry
from tests.runtime.test_saved_contracts import payments, setup

PAY: dict[str, Any] = {
    "type": "object",
    "required": ["amount"],
    "properties": {
        "amount": {"type": "integer"},
        "currency": {"type": "string", "default": "EUR"},
        "memo": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    },
}

NESTED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
        "ship": {"$ref": "#/$defs/Ship", "description": "where"},
    },
    "$defs": {
        "Line": {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "default": 1}},
        },
        "Ship": {
            "type": "object",
            "properties": {"mode": {"type": "string", "default": "post"}},
        },
    },
}


async def test_a_registry_tool_confirms_and_sends_its_defaults() -> None:
    registry = FakeRegistry()
    token = registry.publish(
        payments("Pay {{ amount }} {{ currency }}?", payload=PAY), echo_handler
    )
    decisions: list[ConfirmationRequest] = []
    planner = ScriptedPlanner([calls(("payments.pay", {"amount": 7})), answer()])
    outcome = (
        await setup(registry, planner, decisions)
        .client("test.payer")
        .run("go", labels={"tenant": "t"})
    )
    assert [d.prompt for d in decisions] == ["Pay 7 EUR?"]
    assert dict(decisions[0].arguments) == {"amount": 7, "currency": "EUR"}  # no null default
    assert registry.calls == [("payments.pay", '{"amount":7,"currency":"EUR"}', token)]
    assert not outcome.transcript[2].parts[0].is_error  # type: ignore[union-attr]


def test_defaults_are_filled_in_nested_objects_and_array_items() -> None:
    value = {"lines": [{"sku": "a"}, {"sku": "b", "qty": 3}], "ship": {}}
    filled, where = fill_defaults(NESTED, value, limit=10_000)
    assert filled == {
        "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 3}],
        "ship": {"mode": "post"},
    }
    assert where == [("lines", 0, "qty"), ("ship", "mode")]
    assert value == {"lines": [{"sku": "a"}, {"sku": "b", "qty": 3}], "ship": {}}  # unchanged
    # An object the arguments leave out is not invented from its properties' defaults.
    assert fill_defaults(NESTED, {}, limit=10_000) == ({}, [])


def test_what_defaults_may_add_is_bounded() -> None:
    schema = {"type": "array", "items": NESTED["$defs"]["Ship"]}
    with pytest.raises(DefaultsTooLarge, match="larger than 100 bytes"):
        fill_defaults(schema, [{}] * 50, limit=100)
    codec = SchemaCodec({"type": "object", "properties": {"s": schema}}, "arguments of t")
    assert codec.decode_arguments({"s": [{}] * 2}) == {"s": [{"mode": "post"}] * 2}


def test_a_default_the_schema_refuses_is_named_as_the_providers_fault() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "default": "x"}}}
    codec = SchemaCodec(schema, "arguments of t")
    with pytest.raises(PayloadError) as refused:
        codec.decode_arguments("{}")
    message = str(refused.value)
    assert "with the schema's defaults filled in at n" in message, message
    assert "the provider's schema gives a default it refuses" in message
    assert json.loads(json.dumps(codec.decode_arguments({"n": 2}))) == {"n": 2}


# ------------------------------------------------------------- unions, allOf, tuples


class Address(BaseModel):
    city: str
    country: str = "FR"


class Cat(BaseModel):
    pet_type: Literal["cat"]
    lives: int = 9


class Dog(BaseModel):
    pet_type: Literal["dog"]
    barks: bool = True


class Fish(BaseModel):
    pet_type: Literal["fish"]
    water: str = "fresh"


class Bird(BaseModel):
    pet_type: Literal["bird"]
    sings: bool = True


class Home(BaseModel):
    """A provider's pydantic model: what it fills in is what the consumer must fill in."""

    home: Address | None = None
    extra: list[Address] | None = None
    pair: tuple[Address, int] | None = None
    pet: Cat | Dog | None = Field(default=None, discriminator="pet_type")
    by_name: dict[str, Address] | None = None
    tagged: list[Fish | Bird] | None = None  # Literal tags, no declared discriminator


@pytest.mark.parametrize(
    "arguments",
    [
        {"home": {"city": "Paris"}},
        {"extra": [{"city": "Lyon"}, {"city": "Oslo", "country": "NO"}]},
        {"pair": [{"city": "Rome"}, 2]},
        {"pet": {"pet_type": "cat"}},
        {"pet": {"pet_type": "dog"}},
        {"home": None, "pet": None},
        {"by_name": {"a": {"city": "Nice"}, "b": {"city": "Bern", "country": "CH"}}},
        {"tagged": [{"pet_type": "bird"}, {"pet_type": "fish"}]},
    ],
)
def test_defaults_behind_a_union_are_those_the_providers_model_fills(
    arguments: dict[str, Any],
) -> None:
    filled, _ = fill_defaults(Home.model_json_schema(), arguments, limit=10_000)
    provider = Home.model_validate(arguments).model_dump(mode="json", exclude_unset=False)
    assert filled == {name: provider[name] for name in arguments}


def test_a_union_of_objects_without_discriminator_fills_nothing_in_it() -> None:
    # pydantic picks the branch that validates best, which only the provider decides.
    schema = {
        "type": "object",
        "properties": {
            "x": {
                "anyOf": [
                    {"type": "object", "properties": {"a": {"default": 1}}},
                    {"type": "object", "properties": {"b": {"default": 2}}},
                ]
            }
        },
    }
    assert fill_defaults(schema, {"x": {}}, limit=10_000) == ({"x": {}}, [])


def test_all_of_members_give_defaults_and_if_then_gives_none() -> None:
    schema = {
        "type": "object",
        "properties": {"ship": {"allOf": [{"$ref": "#/$defs/Ship"}], "description": "where"}},
        "$defs": NESTED["$defs"],
        "if": {"required": ["ship"]},
        "then": {"properties": {"note": {"default": "shipped"}}},
    }
    assert fill_defaults(schema, {"ship": {}}, limit=10_000) == (
        {"ship": {"mode": "post"}},
        [("ship", "mode")],
    )
