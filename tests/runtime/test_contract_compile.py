"""SPEC F1-F3: compiling a registry tool declaration into an independent tool spec."""

from __future__ import annotations

import copy
import dataclasses
import json
import socket
import urllib.request
from decimal import Decimal
from typing import Any

import pytest

from agentgen.runtime.contracts.codecs import PayloadError, decode_exact, encode_exact
from agentgen.runtime.contracts.compiler import compile
from agentgen.runtime.contracts.declarations import ContractError, ToolSchema
from agentgen.runtime.contracts.specs import (
    BoundsSpec,
    ConfirmationSpec,
    PagingSpec,
    ServerDataSpec,
    ToolSpec,
)
from agentgen.runtime.contracts.wire import tool_schema
from agentgen.runtime.search.analysis import SEARCH_VERSION
from agentgen.runtime.search.document import SearchDocument, search_document

TOOL = "billing.refund"
TOOLSET = "svc.billing"

PAYLOAD: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "charge_id": {"type": "string", "minLength": 1},
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                "required": ["sku", "qty"],
                "additionalProperties": False,
            },
        },
        "note": {"type": "string"},
    },
    "required": ["charge_id", "amount"],
    "additionalProperties": False,
}

RESULT: dict[str, Any] = {
    "type": "object",
    "properties": {"refund_id": {"type": "string"}, "status": {"enum": ["pending", "done"]}},
    "required": ["refund_id", "status"],
}


def declaration(**overrides: Any) -> ToolSchema:
    """A valid service tool declaration, built like the generator builds it."""
    args: dict[str, Any] = {
        "tool_id": TOOL,
        "title": "Refund a charge",
        "description": "Refunds part or all of a card charge.",
        "tags": ("money", "write"),
        "payload_schema": copy.deepcopy(PAYLOAD),
        "payload_name": "RefundArgs",
        "result_schema": copy.deepcopy(RESULT),
        "result_name": "RefundResult",
        "search": search_document(
            TOOL, "Refund a charge", "Refunds part or all of a card charge.", PAYLOAD
        ),
    }
    args.update(overrides)
    return tool_schema(**args)


def wire(**overrides: Any) -> dict[str, Any]:
    """The same declaration as the JSON a registry hands back."""
    return json.loads(json.dumps(declaration(**overrides).to_json()))


def compile_error(value: Any) -> str:
    with pytest.raises(ContractError) as info:
        compile(value, toolset=TOOLSET)
    return str(info.value)


# --- F2: what is refused -----------------------------------------------------------------------


def test_none_is_refused() -> None:
    assert compile_error(None) == "tool declaration is required"


@pytest.mark.parametrize(
    ("change", "name", "fragment"),
    [
        (lambda d: d.update(name="not a tool id"), "not a tool id", "tool ID"),
        (lambda d: d.update(name="refund"), "refund", "tool ID"),
        (lambda d: d.update(sidecar_schema={}), TOOL, "sidecar_schema"),
        (lambda d: d["consumer_contract"].update(context={"tenant": "x"}), TOOL, "context"),
        (lambda d: d["consumer_contract"].update(kind="mcp"), TOOL, "kind"),
        (lambda d: d.pop("payload_schema"), TOOL, "payload_schema"),
        (lambda d: d.update(result_schema=["not", "an", "object"]), TOOL, "result_schema"),
        (lambda d: d["consumer_contract"]["search"].update(length=-1), TOOL, "length"),
        (lambda d: d["consumer_contract"].update(agent={"executor": ""}), TOOL, "executor"),
        (
            lambda d: d["consumer_contract"].update(
                server_data=[{"kind": "audit", "audience": "everyone", "schema": {}}]
            ),
            TOOL,
            "audience",
        ),
    ],
    ids=[
        "bad-id",
        "id-without-toolset",
        "unknown-field",
        "unknown-contract-field",
        "unknown-kind",
        "missing-payload",
        "result-not-object",
        "negative-search-length",
        "empty-executor",
        "unknown-audience",
    ],
)
def test_a_declaration_failing_its_schema_names_the_tool(
    change: Any, name: str, fragment: str
) -> None:
    data = wire()
    change(data)
    message = compile_error(data)
    assert message.startswith(f"tool {name!r} declaration: "), message
    assert fragment in message


def test_schema_only_registrations_are_refused_with_what_to_do() -> None:
    data = wire()
    del data["consumer_contract"]
    message = compile_error(data)
    assert TOOL in message
    assert "no generated consumer contract" in message
    assert "tool_schemas()" in message
    # The same rule applies to a declaration object.
    model = declaration()
    model.consumer_contract = None
    assert compile_error(model) == message


def test_control_tools_stay_compiled() -> None:
    message = compile_error(declaration(kind="control"))
    assert message == f"tool {TOOL!r} requires compiled control execution"


def test_agent_tools_need_an_executor() -> None:
    message = compile_error(declaration(kind="agent"))
    assert message.startswith(f"agent tool {TOOL!r} requires an executor")
    assert "result contract" in message


def test_agent_tools_need_a_result_contract() -> None:
    message = compile_error(
        declaration(kind="agent", agent_id="billing.assistant", result_schema={"type": "null"})
    )
    assert message.startswith(f"agent tool {TOOL!r} requires an executor")


def test_service_tools_cannot_name_an_agent_target() -> None:
    message = compile_error(declaration(kind="service", agent_id="billing.assistant"))
    assert message == f"tool {TOOL!r} declares an agent target for service execution"


@pytest.mark.parametrize(
    "terms",
    [
        {"refund": [2, 0, 0, 0]},
        {"refund": [2, 0, 0, 0, 0, 1]},
        {"refund": [0, 0, 0, 0, 0]},
        {"refund": [1, 0, 0, 0, 0], "charge": [0, 0, 0, 0, 0]},
        {"refund": [1, 0, -1, 0, 0]},
        {"": [1, 0, 0, 0, 0]},
        {"refund": [1.0, 0, 0, 0, 0]},
        {"refund": 1},
    ],
    ids=[
        "too-few-fields",
        "too-many-fields",
        "zero-count",
        "one-zero-count",
        "negative",
        "empty-word",
        "float",
        "bare-count",
    ],
)
def test_invalid_search_documents_are_refused(terms: dict[str, object]) -> None:
    data = wire()
    data["consumer_contract"]["search"] = {"version": SEARCH_VERSION, "terms": terms}
    message = compile_error(data)
    assert message.startswith(f"tool {TOOL!r} "), message
    assert "search" in message, message


def test_documents_of_another_version_are_counted_again_by_the_consumer() -> None:
    # A provider built by an older agentgen publishes version-1 documents; the consumer ranks
    # version 2 and counts the declaration's own words with its own analysis.
    data = wire()
    data["consumer_contract"]["search"] = {"version": 1, "terms": {"refund": [1]}}
    spec = compile(data, toolset=TOOLSET)
    assert spec.search == search_document(
        TOOL, "Refund a charge", "Refunds part or all of a card charge.", PAYLOAD
    )


def test_an_empty_search_document_of_this_version_is_counted_again_by_the_consumer() -> None:
    # Valid, but kept as published it left the tool findable by its exact name only: a
    # provider written by hand may publish {"version": 3} (terms may be left out).
    counted = search_document(
        TOOL, "Refund a charge", "Refunds part or all of a card charge.", PAYLOAD
    )
    assert counted.terms
    spec = compile(declaration(search=SearchDocument({})), toolset=TOOLSET)
    assert spec.search == counted
    data = wire()
    data["consumer_contract"]["search"] = {"version": SEARCH_VERSION}
    assert compile(data, toolset=TOOLSET).search == counted


def test_a_declaration_without_words_counts_none_again() -> None:
    # Every word of it is a stop word: the consumer's count is as empty as the published one.
    payload = {"type": "object", "properties": {}}
    bare = declaration(
        tool_id="it.the", title="The", description="It is.", payload_schema=payload,
        search=SearchDocument({}),
    )  # fmt: skip
    assert compile(bare, toolset="it").search == SearchDocument({})


def test_repeated_server_data_kinds_are_refused() -> None:
    data = [
        ServerDataSpec("audit", "internal", "{}"),
        ServerDataSpec("chart", "timeline", "{}"),
        ServerDataSpec("audit", "evidence", "{}"),
    ]
    message = compile_error(
        declaration(server_data=data, server_data_schemas=[{"type": "object"}] * 3)
    )
    assert message == f"tool {TOOL!r} repeats server data kind 'audit'"


@pytest.mark.parametrize(
    ("field", "role"),
    [
        ("payload_schema", "payload"),
        ("execution_payload_schema", "execution payload"),
        ("result_schema", "result"),
    ],
)
@pytest.mark.parametrize(
    ("schema", "at"),
    [
        ({"type": "strng"}, "/type"),
        ({"type": "object", "properties": {"x": {"minimum": "zero"}}}, "/properties/x/minimum"),
        ({"required": "charge_id"}, "/required"),
        ({"$defs": {"a/b": {"type": 5}}}, "/$defs/a~1b/type"),
        (
            {"properties": {"deep": {"properties": {"z": {"enum": 5}}}}},
            "/properties/deep/properties/z/enum",
        ),
    ],
    ids=["bad-type", "bad-nested-minimum", "bad-required", "bad-def", "deep-enum"],
)
def test_invalid_json_schemas_name_the_tool_the_role_and_where(
    field: str, role: str, schema: dict[str, Any], at: str
) -> None:
    data = wire()
    data[field] = schema
    message = compile_error(data)
    assert message.startswith(f"tool {TOOL!r} {role}: invalid JSON Schema"), message
    assert message.endswith(f" (at {at})"), message


def test_invalid_server_data_schemas_name_the_tool_and_the_kind() -> None:
    message = compile_error(
        declaration(
            server_data=[ServerDataSpec("audit", "internal", "{}")],
            server_data_schemas=[{"type": "strng"}],
        )
    )
    assert message.startswith(f"tool {TOOL!r} server data 'audit': invalid JSON Schema"), message


def test_a_declaration_object_is_checked_like_its_json() -> None:
    # The same faults are found whether the registry's JSON or a model is compiled.
    model = declaration()
    model.payload_schema = {"type": "strng"}
    assert compile_error(model).startswith(f"tool {TOOL!r} payload: invalid JSON Schema")


# --- F3: metadata comes from the contract, explicitly -----------------------------------------


def full_declaration() -> ToolSchema:
    return declaration(
        confirmation=ConfirmationSpec(
            "Refund {{ amount }} on {{ charge_id }}?", "Refund of {{ amount }} denied.", "Refund"
        ),
        bounds=BoundsSpec(PagingSpec("cursor", "next_cursor", continue_tool="billing.more")),
        server_data=[
            ServerDataSpec("audit", "internal", "{}", "Who refunded what."),
            ServerDataSpec("receipt", "evidence", "{}"),
        ],
        server_data_schemas=[
            {"type": "object", "properties": {"actor": {"type": "string"}}},
            {"type": "string"},
        ],
        required_labels=["tenant", "region"],
    )


def test_every_fact_comes_from_the_contract() -> None:
    spec = compile(full_declaration(), toolset=TOOLSET)
    assert spec.id == TOOL
    assert spec.toolset == TOOLSET
    assert spec.title == "Refund a charge"
    assert spec.description == "Refunds part or all of a card charge."
    assert spec.tags == ("money", "write")
    assert spec.kind == "service"
    assert spec.agent_id is None
    assert spec.confirmation == ConfirmationSpec(
        "Refund {{ amount }} on {{ charge_id }}?", "Refund of {{ amount }} denied.", "Refund"
    )
    assert spec.bounds == BoundsSpec(PagingSpec("cursor", "next_cursor", "billing.more", None))
    assert spec.server_data == (
        ServerDataSpec(
            "audit",
            "internal",
            '{"type":"object","properties":{"actor":{"type":"string"}}}',
            "Who refunded what.",
        ),
        ServerDataSpec("receipt", "evidence", '{"type":"string"}', None),
    )
    assert spec.required_labels == ("region", "tenant")
    assert spec.payload.name == "RefundArgs"
    assert spec.result.name == "RefundResult"
    assert spec.payload.schema() == PAYLOAD
    assert spec.result.schema() == RESULT
    assert spec.search == search_document(
        TOOL, "Refund a charge", "Refunds part or all of a card charge.", PAYLOAD
    )


def test_json_and_model_declarations_compile_to_the_same_spec() -> None:
    from_model = compile(full_declaration(), toolset=TOOLSET)
    from_json = compile(json.loads(json.dumps(full_declaration().to_json())), toolset=TOOLSET)
    assert from_model == from_json  # codecs are not compared; every other field is
    assert from_model.payload.schema_json == from_json.payload.schema_json


def test_continuation_tools_keep_their_source() -> None:
    spec = compile(
        declaration(
            tool_id="billing.more",
            bounds=BoundsSpec(PagingSpec("cursor", "next_cursor", source_tool=TOOL)),
        ),
        toolset=TOOLSET,
    )
    assert spec.bounds == BoundsSpec(PagingSpec("cursor", "next_cursor", None, TOOL))


def test_bounds_without_paging_stay_without_paging() -> None:
    spec = compile(declaration(bounds=BoundsSpec()), toolset=TOOLSET)
    assert spec.bounds == BoundsSpec(paging=None)


def test_agent_tools_keep_their_executor() -> None:
    spec = compile(
        declaration(kind="agent", agent_id="billing.assistant", tags=("agents",)), toolset=TOOLSET
    )
    assert spec.kind == "agent"
    assert spec.agent_id == "billing.assistant"
    assert spec.tags == ("agents",)


def test_service_tools_may_return_null() -> None:
    spec = compile(declaration(result_schema={"type": "null"}, result_name=None), toolset=TOOLSET)
    assert spec.result.codec.decode("null") is None
    with pytest.raises(PayloadError):
        spec.result.codec.decode("{}")


def test_nothing_is_inferred_from_field_names() -> None:
    suggestive = {
        "type": "object",
        "properties": {
            name: {"type": "string"}
            for name in (
                "tenant_id",
                "api_key",
                "session_id",
                "user_id",
                "run_id",
                "password",
                "token",
                "cursor",
                "next_cursor",
                "confirm",
                "agent",
            )
        },
    }
    spec = compile(
        declaration(payload_schema=suggestive, result_schema=copy.deepcopy(suggestive)),
        toolset=TOOLSET,
    )
    assert spec.required_labels == ()
    assert spec.server_data == ()
    assert spec.confirmation is None
    assert spec.bounds is None
    assert spec.kind == "service"
    assert spec.agent_id is None
    # The fields are ordinary payload fields: values are accepted as given.
    payload = {"tenant_id": "t1", "api_key": "k", "cursor": "c"}
    assert spec.payload.codec.decode(json.dumps(payload)) == payload


def test_required_labels_are_only_those_declared() -> None:
    spec = compile(
        declaration(
            payload_schema={"type": "object", "properties": {"tenant": {"type": "string"}}},
            required_labels=["region"],
        ),
        toolset=TOOLSET,
    )
    assert spec.required_labels == ("region",)


# --- F1: the spec is independent ----------------------------------------------------------------


def test_changing_the_input_json_afterwards_changes_nothing() -> None:
    data = json.loads(json.dumps(full_declaration().to_json()))
    spec = compile(data, toolset=TOOLSET)
    before = dataclasses.replace(spec)
    payload_json, result_json = spec.payload.schema_json, spec.result.schema_json

    contract = data["consumer_contract"]
    data["payload_schema"]["properties"]["amount"]["type"] = "string"
    data["payload_schema"]["required"].append("note")
    data["execution_payload_schema"]["properties"].clear()
    data["result_schema"]["required"].clear()
    data["tags"].append("admin")
    data["description"] = "changed"
    contract["title"] = "changed"
    contract["search"]["terms"]["refund"] = 99
    contract["required_labels"].append("root")
    contract["confirmation"]["prompt_template"] = "changed"
    contract["bounds"]["paging"]["continue_tool"] = "other.tool"
    contract["server_data"][0]["schema"]["type"] = "array"
    contract["server_data"][0]["kind"] = "changed"

    assert spec == before
    assert spec.search.terms == before.search.terms
    assert spec.payload.schema_json == payload_json
    assert spec.result.schema_json == result_json
    # The codecs still use the schemas the spec was compiled from.
    assert spec.payload.codec.decode('{"charge_id":"ch_1","amount":5}') == {
        "charge_id": "ch_1",
        "amount": 5,
    }
    with pytest.raises(PayloadError):
        spec.payload.codec.decode('{"charge_id":"ch_1","amount":"5"}')
    with pytest.raises(PayloadError):
        spec.result.codec.decode('{"refund_id":"r"}')


def test_changing_the_input_model_afterwards_changes_nothing() -> None:
    model = declaration()
    spec = compile(model, toolset=TOOLSET)
    model.payload_schema["properties"]["amount"]["type"] = "string"
    model.result_schema["properties"].clear()
    model.tags.append("admin")
    assert model.consumer_contract is not None
    before = spec.search.terms["refund"]
    model.consumer_contract.search.terms["refund"] = [99, 0, 0, 0, 0]
    assert spec.payload.schema() == PAYLOAD
    assert spec.result.schema() == RESULT
    assert spec.tags == ("money", "write")
    assert spec.search.terms["refund"] == before == (1, 1, 1, 0, 0)
    with pytest.raises(PayloadError):
        spec.payload.codec.decode('{"charge_id":"ch_1","amount":"5"}')


def test_schema_returns_fresh_copies() -> None:
    spec = compile(declaration(), toolset=TOOLSET)
    first = spec.payload.schema()
    first["properties"]["amount"]["type"] = "string"
    first["required"].clear()
    second = spec.payload.schema()
    assert second == PAYLOAD
    assert second is not spec.payload.schema()
    assert spec.payload.codec.decode('{"charge_id":"c","amount":1}') == {
        "charge_id": "c",
        "amount": 1,
    }
    result = spec.result.schema()
    result.clear()
    assert spec.result.schema() == RESULT


def test_specs_are_immutable() -> None:
    spec: ToolSpec = compile(declaration(), toolset=TOOLSET)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.title = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.payload.schema_json = "{}"  # type: ignore[misc]


# --- F1: the codecs -----------------------------------------------------------------------------


def test_payload_codec_validates_and_names_the_failing_fields() -> None:
    spec = compile(declaration(), toolset=TOOLSET)
    good = '{"charge_id":"ch_1","amount":12.5,"lines":[{"sku":"a","qty":1}]}'
    assert spec.payload.codec.decode(good)["lines"] == [{"sku": "a", "qty": 1}]
    bad = '{"charge_id":"","amount":-1,"lines":[{"sku":"a","qty":1},{"sku":7,"qty":1.5}]}'
    with pytest.raises(PayloadError) as info:
        spec.payload.codec.decode(bad)
    paths = [issue.path for issue in info.value.issues]
    assert paths == ["amount", "charge_id", "lines[1].qty", "lines[1].sku"]
    assert info.value.what == f"{TOOL} payload"
    assert str(info.value).startswith(f"{TOOL} payload is invalid: ")


def test_missing_and_unknown_fields_are_reported_on_their_object() -> None:
    spec = compile(declaration(), toolset=TOOLSET)
    with pytest.raises(PayloadError) as info:
        spec.payload.codec.decode('{"amount":1,"lines":[{"qty":1,"extra":true}],"x":1}')
    issues = [(i.path, i.message) for i in info.value.issues]
    assert ("", "'charge_id' is a required property") in issues
    assert any(path == "" and "'x'" in message for path, message in issues)
    assert ("lines[0]", "'sku' is a required property") in issues
    assert any(path == "lines[0]" and "'extra'" in message for path, message in issues)


def test_result_codec_validates_encoded_results() -> None:
    spec = compile(declaration(), toolset=TOOLSET)
    assert spec.result.codec.encode({"refund_id": "r1", "status": "done"}) == (
        '{"refund_id":"r1","status":"done"}'
    )
    with pytest.raises(PayloadError) as info:
        spec.result.codec.encode({"refund_id": "r1", "status": "lost"})
    assert [i.path for i in info.value.issues] == ["status"]
    assert info.value.what == f"{TOOL} result"


def test_codecs_use_json_schema_2020_12() -> None:
    schema = {
        "type": "object",
        "properties": {
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
        },
        "dependentRequired": {"start": ["end"]},
        "unevaluatedProperties": False,
        "patternProperties": {"^(start|end)$": {"type": "integer"}},
    }
    spec = compile(declaration(payload_schema=schema), toolset=TOOLSET)
    assert spec.payload.codec.decode('{"pair":["a",1],"start":1,"end":2}')
    for bad, path in [
        ('{"pair":[1,"a"]}', "pair[0]"),  # prefixItems (2020-12 only)
        ('{"start":1}', ""),  # dependentRequired
        ('{"other":1}', ""),  # unevaluatedProperties
    ]:
        with pytest.raises(PayloadError) as info:
            spec.payload.codec.decode(bad)
        assert info.value.issues[0].path == path, bad


@pytest.mark.parametrize(
    "text",
    [
        '{"charge_id":"c","amount":9007199254740993}',
        '{"charge_id":"c","amount":0.1}',
        '{"charge_id":"c","amount":1.10}',
        '{"charge_id":"c","amount":123456789012345678901234567890.000000000000000000001}',
        '{"charge_id":"c","amount":2.50,"lines":[{"sku":"a","qty":9007199254740993}]}',
    ],
)
def test_numbers_round_trip_byte_for_byte(text: str) -> None:
    spec = compile(declaration(), toolset=TOOLSET)
    value = spec.payload.codec.decode(text)
    assert spec.payload.codec.encode(value) == text
    assert encode_exact(decode_exact(text)) == text


def test_decoded_numbers_are_exact() -> None:
    spec = compile(declaration(), toolset=TOOLSET)
    value = spec.payload.codec.decode('{"charge_id":"c","amount":9007199254740993}')
    assert value["amount"] == 9007199254740993
    assert type(value["amount"]) is int
    value = spec.payload.codec.decode('{"charge_id":"c","amount":0.1}')
    assert value["amount"] == Decimal("0.1")
    assert float(2**53 + 1) != 2**53 + 1  # the case a float would get wrong


def test_exponent_numbers_keep_their_exact_value() -> None:
    spec = compile(declaration(), toolset=TOOLSET)
    value = spec.payload.codec.decode('{"charge_id":"c","amount":1.000000000000000000001e-7}')
    assert value["amount"] == Decimal("1.000000000000000000001e-7")
    assert decode_exact(spec.payload.codec.encode(value)) == value


NUMBER_RULES: dict[str, Any] = {
    "type": "object",
    "properties": {
        "price": {"type": "number", "multipleOf": 0.01},
        "half": {"type": "number", "multipleOf": 0.5},
        "count": {"type": "integer"},
        "rate": {"enum": [0.1, 0.25]},
        "fixed": {"const": 0.3},
        "limit": {"type": "number", "maximum": 0.5, "exclusiveMinimum": 0.1},
    },
}


def test_exact_numbers_follow_json_schema_number_rules() -> None:
    spec = compile(declaration(payload_schema=NUMBER_RULES), toolset=TOOLSET)
    text = '{"price":0.05,"half":2.5,"count":3.0,"rate":0.1,"fixed":0.3,"limit":0.5}'
    assert spec.payload.codec.encode(spec.payload.codec.decode(text)) == text
    # multipleOf is decided on the decimals written: jsonschema's float division refuses these
    # (19.99 / 0.01 is 1998.9999999999998), the very prices a multipleOf of 0.01 is for.
    for good in ('{"price":19.99}', '{"price":0.07}', '{"price":1.1e1}'):
        assert spec.payload.codec.decode(good)
    for bad, path in [
        ('{"half":2.25}', "half"),
        ('{"count":3.5}', "count"),
        ('{"rate":0.2}', "rate"),
        ('{"fixed":0.30000000000000004}', "fixed"),
        ('{"limit":0.51}', "limit"),
        ('{"limit":0.1}', "limit"),
    ]:
        with pytest.raises(PayloadError) as info:
            spec.payload.codec.decode(bad)
        assert [i.path for i in info.value.issues] == [path], bad


@pytest.mark.parametrize(
    "text",
    [
        '{"price":0.05}',
        '{"price":1e-3}',
        '{"price":100}',
        '{"count":1.0}',
        '{"count":1e2}',
        '{"count":9007199254740993}',
        '{"rate":0.10}',
        '{"limit":5e-1}',
    ],
)
def test_validity_matches_jsonschema_on_plain_json(text: str) -> None:
    """Where jsonschema's float arithmetic is exact (multipleOf aside: see above)."""
    import jsonschema

    spec = compile(declaration(payload_schema=NUMBER_RULES), toolset=TOOLSET)
    expected = jsonschema.Draft202012Validator(NUMBER_RULES).is_valid(json.loads(text))
    try:
        spec.payload.codec.decode(text)
    except PayloadError:
        valid = False
    else:
        valid = True
    assert valid == expected


class NoNetwork:
    """Stands in for ``socket.socket`` and ``urlopen``: records and refuses every use."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(args)
        raise AssertionError("the codec tried to use the network")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> NoNetwork:
    guard = NoNetwork()
    monkeypatch.setattr(socket, "socket", guard)
    monkeypatch.setattr(socket, "create_connection", guard)
    monkeypatch.setattr(urllib.request, "urlopen", guard)
    return guard


@pytest.mark.parametrize(
    ("schema", "payload"),
    [
        ({"$ref": "https://example.com/x.json"}, "{}"),
        (
            {"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json#/a"}}},
            '{"x":1}',
        ),
        ({"$ref": "file:///etc/passwd"}, "{}"),
        ({"$ref": "other.json"}, "{}"),
    ],
    ids=["root-https", "nested-https", "file", "relative"],
)
def test_external_refs_are_never_fetched(
    no_network: NoNetwork, schema: dict[str, Any], payload: str
) -> None:
    # Refused when compiled (nothing could ever validate against them), and never fetched.
    message = compile_error(declaration(payload_schema=schema))
    assert message.startswith(f"tool {TOOL!r} payload: $ref"), message
    assert "does not resolve inside the schema" in message
    assert no_network.calls == []


def test_external_refs_in_results_are_never_fetched(no_network: NoNetwork) -> None:
    message = compile_error(declaration(result_schema={"$ref": "https://example.com/result.json"}))
    assert message.startswith(f"tool {TOOL!r} result: $ref"), message
    assert no_network.calls == []


def test_the_network_guard_works(no_network: NoNetwork) -> None:
    # Otherwise the tests above would pass even if a fetch was attempted and failed quietly.
    with pytest.raises(AssertionError):
        socket.socket()
    assert len(no_network.calls) == 1


def test_local_refs_resolve(no_network: NoNetwork) -> None:
    schema = {
        "$defs": {
            "line": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"$ref": "#/$defs/qty"}},
                "required": ["sku"],
            },
            "qty": {"type": "integer", "minimum": 1},
        },
        "type": "object",
        "properties": {"lines": {"type": "array", "items": {"$ref": "#/$defs/line"}}},
    }
    spec = compile(declaration(payload_schema=schema), toolset=TOOLSET)
    assert spec.payload.codec.decode('{"lines":[{"sku":"a","qty":2}]}')
    with pytest.raises(PayloadError) as info:
        spec.payload.codec.decode('{"lines":[{"sku":"a","qty":2},{"qty":0}]}')
    assert sorted((i.path, i.message) for i in info.value.issues) == [
        ("lines[1]", "'sku' is a required property"),
        ("lines[1].qty", "0 is less than the minimum of 1"),
    ]
    assert no_network.calls == []


def test_anchors_and_ids_inside_the_schema_resolve(no_network: NoNetwork) -> None:
    schema = {
        "$id": "https://example.com/refund.json",
        "$defs": {"id": {"$anchor": "chargeId", "type": "string", "pattern": "^ch_"}},
        "type": "object",
        "properties": {
            "charge_id": {"$ref": "#chargeId"},
            "again": {"$ref": "refund.json#/$defs/id"},
        },
    }
    spec = compile(declaration(payload_schema=schema), toolset=TOOLSET)
    assert spec.payload.codec.decode('{"charge_id":"ch_1","again":"ch_2"}')
    with pytest.raises(PayloadError) as info:
        spec.payload.codec.decode('{"charge_id":"x","again":"y"}')
    assert [i.path for i in info.value.issues] == ["again", "charge_id"]
    assert no_network.calls == []
