"""Verdicts on registry schemas kept by their text: the same text is not checked twice, a
changed schema always is, schemas of other types than JSON's are never remembered, and the
store stays bounded."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from agentgen.runtime.contracts import schema_verdicts
from agentgen.runtime.contracts.canonical import compact_json
from agentgen.runtime.contracts.compiler import compile
from agentgen.runtime.contracts.declarations import ContractError, ToolSchema
from agentgen.runtime.contracts.schema_verdicts import SchemaVerdicts
from agentgen.runtime.contracts.wire import tool_schema
from agentgen.runtime.search.document import search_document

TOOLSET = "billing"

PAYLOAD: dict[str, Any] = {
    "type": "object",
    "properties": {"charge_id": {"type": "string", "pattern": "^ch_[a-z0-9]+$"}},
    "required": ["charge_id"],
}
RESULT: dict[str, Any] = {"type": "object", "properties": {"refund_id": {"type": "string"}}}


def declaration(tool: str, payload: Any = None, result: Any = None) -> ToolSchema:
    payload = copy.deepcopy(PAYLOAD) if payload is None else payload
    result = copy.deepcopy(RESULT) if result is None else result
    return tool_schema(
        tool_id=f"{TOOLSET}.{tool}",
        title=tool.title(),
        description="Refunds a charge.",
        tags=("money",),
        payload_schema=payload,
        payload_name="Args",
        result_schema=result,
        result_name="Result",
        search=search_document(f"{TOOLSET}.{tool}", tool.title(), "Refunds a charge."),
    )


@pytest.fixture
def verdicts(monkeypatch: pytest.MonkeyPatch) -> Iterator[SchemaVerdicts]:
    """A fresh process-wide store, so that earlier tests' verdicts do not count here."""
    store = SchemaVerdicts()
    monkeypatch.setattr(schema_verdicts, "_default", store)
    yield store


def test_the_same_schema_text_is_checked_once(verdicts: SchemaVerdicts) -> None:
    compile(declaration("refund"), toolset=TOOLSET)
    assert (verdicts.checks, verdicts.hits, len(verdicts)) == (2, 0, 2)  # payload, result
    spec = compile(declaration("refund_again"), toolset=TOOLSET)
    assert (verdicts.checks, verdicts.hits) == (2, 2)
    assert spec.payload.schema_json == compact_json(PAYLOAD)


def test_a_changed_schema_is_always_checked_again(verdicts: SchemaVerdicts) -> None:
    compile(declaration("refund"), toolset=TOOLSET)
    changed = copy.deepcopy(PAYLOAD)
    changed["properties"]["charge_id"]["pattern"] = "^ch_(?=[a-z])"  # lookahead: not RE2
    with pytest.raises(ContractError, match=r"'billing.refund_bad' payload: pattern"):
        compile(declaration("refund_bad", payload=changed), toolset=TOOLSET)
    assert verdicts.checks == 3  # the result schema was the same, the payload was not
    # One byte less: another text, checked again (and valid).
    changed["properties"]["charge_id"]["pattern"] = "^ch_[a-z0-9]+"
    compile(declaration("refund_ok", payload=changed), toolset=TOOLSET)
    assert verdicts.checks == 4


def test_a_kept_refusal_names_the_tool_and_role_at_fault(verdicts: SchemaVerdicts) -> None:
    invalid = {"type": "object", "properties": {"x": {"type": "strin"}}}
    messages = []
    for tool, role in (("one", "payload"), ("two", "result")):
        payload = invalid if role == "payload" else None
        result = invalid if role == "result" else None
        with pytest.raises(ContractError) as refused:
            compile(declaration(tool, payload=payload, result=result), toolset=TOOLSET)
        messages.append(str(refused.value))
    assert messages[0].startswith("tool 'billing.one' payload: invalid JSON Schema:")
    assert messages[1] == messages[0].replace("'billing.one' payload", "'billing.two' result")
    assert verdicts.hits == 1  # the second refusal came from the kept verdict


def test_schemas_that_are_not_plain_json_are_never_remembered(verdicts: SchemaVerdicts) -> None:
    # A tuple prints as a JSON array, but jsonschema does not take it for one: the text does
    # not stand for the schema, so its verdict must not be served to the list form.
    with_tuple = {"type": "object", "required": ("charge_id",)}
    with_list = {"type": "object", "required": ["charge_id"]}
    assert compact_json(with_tuple) == compact_json(with_list)
    data = compact_json(with_tuple).encode()
    calls: list[object] = []

    def check(schema: Any) -> str:
        calls.append(schema)
        return "refused" if isinstance(schema["required"], tuple) else ""

    assert verdicts.verdict(with_tuple, data, check, plain=False) == "refused"
    assert verdicts.verdict(with_list, data, check, plain=True) == ""
    assert verdicts.verdict(with_tuple, data, check, plain=False) == "refused"
    assert len(calls) == 3 and len(verdicts) == 1


def test_nothing_is_kept_when_the_check_raises(verdicts: SchemaVerdicts) -> None:
    def broken(schema: Any) -> str:
        raise RuntimeError("checker failed")

    with pytest.raises(RuntimeError):
        verdicts.verdict({}, b"{}", broken, plain=True)
    assert len(verdicts) == 0
    assert verdicts.verdict({}, b"{}", lambda schema: "", plain=True) == ""


def test_the_store_is_bounded_and_forgets_the_least_recently_used() -> None:
    store = SchemaVerdicts(size=2)
    checked: list[bytes] = []

    def check(text: bytes) -> str:
        checked.append(text)
        return ""

    for text in (b"1", b"2", b"1", b"3", b"1", b"2"):
        store.verdict(text, text, check, plain=True)
    # "2" was the least recently used when "3" came, so it was checked again at the end.
    assert checked == [b"1", b"2", b"3", b"2"]
    assert len(store) == 2
    with pytest.raises(ValueError, match="at least one"):
        SchemaVerdicts(size=0)


def test_clear_forgets_every_verdict(verdicts: SchemaVerdicts) -> None:
    compile(declaration("refund"), toolset=TOOLSET)
    verdicts.clear()
    compile(declaration("refund"), toolset=TOOLSET)
    assert (verdicts.checks, verdicts.hits) == (4, 0)
