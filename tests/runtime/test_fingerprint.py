"""SPEC E: schema fingerprints and registration tokens."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgen.runtime.contracts.canonical import canonical_json
from agentgen.runtime.contracts.declarations import ContractError, ToolSchema, ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import (
    fingerprint_body,
    registration_token,
    schema_fingerprint,
)
from agentgen.runtime.contracts.specs import (
    BoundsSpec,
    ConfirmationSpec,
    PagingSpec,
    ServerDataSpec,
)
from agentgen.runtime.contracts.wire import fingerprint, tool_schema, tool_schema_json
from agentgen.runtime.search.document import search_document


def tool(name: str, description: str = "Does a thing.", tags: tuple[str, ...] = ()) -> ToolSchema:
    return tool_schema(
        tool_id=f"records.{name}",
        title=name.title(),
        description=description,
        tags=tags,
        payload_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        payload_name="Args",
        result_schema={"type": "null"},
        result_name=None,
        search=search_document(f"records.{name}", name.title(), description),
    )


def toolset(**overrides: Any) -> ToolsetDeclaration:
    base: dict[str, Any] = {
        "name": "svc.records",
        "description": "Records.",
        "version": "1.0.0",
        "tags": ["b", "a"],
        "tools": [tool("lookup", tags=("x", "y")), tool("search")],
    }
    base.update(overrides)
    return ToolsetDeclaration(**base)


def test_fingerprint_is_sha256_of_the_canonical_body() -> None:
    declaration = toolset()
    body = fingerprint_body(declaration)
    assert (
        schema_fingerprint(declaration) == hashlib.sha256(canonical_json(body).encode()).hexdigest()
    )
    assert list(body) == ["name", "tools", "description", "version", "tags"]
    assert body["tags"] == ["a", "b"]
    assert [t["name"] for t in body["tools"]] == ["records.lookup", "records.search"]
    assert "consumer_contract" in body["tools"][0]
    assert len(schema_fingerprint(declaration)) == 64


def test_tag_and_tool_order_do_not_change_it() -> None:
    reordered = toolset(tags=["a", "b"], tools=[tool("search"), tool("lookup", tags=("y", "x"))])
    assert fingerprint(reordered) == fingerprint(toolset())


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(description="Other."),
        lambda d: d.update(version="1.0.1"),
        lambda d: d.update(tags=["a"]),
        lambda d: d.update(name="svc.other"),
        lambda d: d["tools"][0].update(description="Changed."),
        lambda d: d["tools"][0]["payload_schema"]["properties"]["q"].update(type="integer"),
        lambda d: d["tools"][0]["result_schema"].update(type="object"),
        lambda d: d["tools"][0]["consumer_contract"].update(title="Other"),
        lambda d: d["tools"][0]["consumer_contract"].update(required_labels=["tenant"]),
    ],
)
def test_any_contract_change_changes_it(change: Any) -> None:
    data = toolset().to_json()
    changed = copy.deepcopy(data)
    change(changed)
    assert fingerprint(changed) != fingerprint(data)


def test_registered_at_style_extras_are_rejected_not_hashed() -> None:
    data = toolset().to_json()
    data["registered_at"] = "2026-01-01T00:00:00Z"
    with pytest.raises(ContractError, match="registered_at"):
        fingerprint(data)


def test_dict_and_model_declarations_agree() -> None:
    declaration = toolset()
    assert fingerprint(json.loads(json.dumps(declaration.to_json()))) == fingerprint(declaration)


def test_none_declarations_are_clear_errors() -> None:
    with pytest.raises(ContractError, match="toolset declaration is required"):
        fingerprint(None)
    data = toolset().to_json()
    data["tools"].append(None)
    with pytest.raises(
        ContractError, match=re.escape("toolset 'svc.records' contains a None tool")
    ):
        fingerprint(data)


def test_registration_token() -> None:
    fp = fingerprint(toolset())
    token = registration_token(fp, "rev-1", 1)
    assert token == registration_token(fp, "rev-1", 1)
    assert len(token) == 64
    assert token != registration_token(fp, "rev-2", 1)
    assert token != registration_token(fp, "rev-1", 2)
    assert token != registration_token(fingerprint(toolset(version="2")), "rev-1", 1)
    with pytest.raises(ValueError, match="64 lowercase hex"):
        registration_token("abc", "rev-1")
    with pytest.raises(ValueError, match="provider revision"):
        registration_token(fp, "bad revision")
    with pytest.raises(ValueError, match="32-bit"):
        registration_token(fp, "rev-1", 2**32)


@given(st.permutations(["lookup", "search", "analyze", "export"]), st.permutations(["a", "b", "c"]))
def test_order_never_matters(names: list[str], tags: list[str]) -> None:
    shuffled = toolset(tags=tags, tools=[tool(n) for n in names])
    ordered = toolset(tags=sorted(tags), tools=[tool(n) for n in sorted(names)])
    assert fingerprint(shuffled) == fingerprint(ordered)


#: Consumer contracts with each optional part.
CONTRACT_VARIANTS: list[dict[str, Any]] = [
    {},
    {
        "tags": ("b", "a"),
        "required_labels": ("tenant",),
        "agent_id": "svc.expert",
        "kind": "agent",
    },
    {
        "confirmation": ConfirmationSpec("Pay {{ amount }}?", "Denied.", title="Approve"),
        "bounds": BoundsSpec(PagingSpec("cursor", "next", continue_tool="records.more")),
    },
    {"bounds": BoundsSpec()},
    {
        "server_data": (
            ServerDataSpec("trace", "internal", "{}", "Why."),
            ServerDataSpec("raw", "timeline", "{}"),
        ),
        "server_data_schemas": ({"type": "object"}, {"type": "string"}),
    },
]


@pytest.mark.parametrize("extra", CONTRACT_VARIANTS)
def test_the_generators_json_form_equals_the_models_wire_form(extra: dict[str, Any]) -> None:
    """The generator fingerprints the JSON form directly; it must be the model's exact wire
    form, or generated fingerprints would differ from the registry's."""
    fields: dict[str, Any] = {
        "tool_id": "records.search",
        "title": "Search",
        "description": "Search records.",
        "tags": (),
        "payload_schema": {
            "type": "object",
            "properties": {
                "q": {"type": "string", "description": "Query."},
                "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            },
            "$defs": {},
        },
        "payload_name": "Query",
        "result_schema": {
            "type": "array",
            "items": {"type": "object", "properties": {"id": {"type": "string"}}},
        },
        "result_name": None,
        "search": search_document("records.search", "Search", ""),
        **extra,
    }
    assert tool_schema(**fields).to_json() == tool_schema_json(**fields)


@pytest.mark.parametrize("described", [True, False], ids=["described", "bare"])
def test_made_tool_by_tool_it_is_the_sha256_of_the_whole_canonical_body(described: bool) -> None:
    # A declaration's fingerprint is encoded one tool at a time (no tree of the whole body):
    # byte for byte the canonical JSON of the body, whatever optional part each tool has.
    tools = [
        tool_schema(
            **{
                "tool_id": f"records.t{index}",
                "title": f"T{index}",
                "description": "Cherche les réglages." if index % 2 else "",
                "tags": ("b", "a") if index % 3 else (),
                "payload_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
                "payload_name": "Args",
                "result_schema": {"type": "null"},
                "result_name": None,
                "search": search_document(f"records.t{index}", f"T{index}", "Cherche."),
                **extra,
            }
        )
        for index, extra in enumerate(CONTRACT_VARIANTS)
    ]
    without_contract = tool("plain").model_copy(update={"consumer_contract": None})
    head: dict[str, Any] = (
        {"description": 'Records, "quoted".', "version": "1.0.0", "tags": ["z", "a"]}
        if described
        else {}
    )
    declaration = ToolsetDeclaration(
        name="svc.records", tools=[tools[3], without_contract, *tools[:3], tools[4]], **head
    )
    whole = canonical_json(fingerprint_body(declaration)).encode()
    assert schema_fingerprint(declaration) == hashlib.sha256(whole).hexdigest()
    assert schema_fingerprint(declaration.to_json()) == schema_fingerprint(declaration)
