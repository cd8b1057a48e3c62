"""JSON carried as text (``payload_json``, ``result_json``) is judged as strictly in both
directions: nesting too deep for the parser is a 422 naming the field (it was a 500 with a
``RecursionError``), and ``NaN``/``Infinity`` are not JSON in a result either (a consumer's
parser refuses them). A fault of the registry itself still answers with its error body."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from agentgen.runtime.registry.sqlite_store import SQLiteStore
from tests.registry.conftest import Running, running_registry
from tests.registry.helpers import register_body

DEEP = "[" * 50_000 + "]" * 50_000


@pytest.fixture
async def served() -> AsyncIterator[tuple[Running, httpx2.AsyncClient, str]]:
    async with running_registry(SQLiteStore(":memory:")) as running:
        async with httpx2.AsyncClient(base_url=running.url, timeout=30) as http:
            registered = await http.post("/v1/providers/register", json=register_body())
            assert registered.status_code == 200, registered.text
            yield running, http, registered.json()["registration_token"]


async def _claimed_call(http: httpx2.AsyncClient, token: str, run: str) -> str:
    made = await http.post("/v1/calls", json=_call(token, run, '{"text": "hi"}'))
    assert made.status_code == 200, made.text
    claim = {
        "toolset": "echo", "registration_token": token, "provider_id": "p1",
        "incarnation_id": "i1", "wait_ms": 1_000, "claim_operation_id": f"op-{run}",
    }  # fmt: skip
    calls = (await http.post("/v1/providers/claim", json=claim)).json()["calls"]
    use_id: str = made.json()["tool_use_id"]
    assert [c["tool_use_id"] for c in calls] == [use_id]
    return use_id


def _call(token: str, run: str, payload_json: str) -> dict[str, Any]:
    return {
        "toolset": "echo", "tool": "echo.say", "payload_json": payload_json,
        "meta": {"run_id": run, "tool_call_id": "c"}, "expected_registration_token": token,
    }  # fmt: skip


def _error(response: httpx2.Response) -> tuple[int, str, str]:
    error = response.json()["error"]
    return response.status_code, error["code"], error["message"]


async def test_a_payload_nested_too_deeply_is_refused_saying_so(
    served: tuple[Running, httpx2.AsyncClient, str],
) -> None:
    _, http, token = served
    status, code, message = _error(await http.post("/v1/calls", json=_call(token, "r", DEEP)))
    assert (status, code) == (422, "validation_error")
    assert "payload of echo.say" in message and "nested too deeply" in message


@pytest.mark.parametrize(
    ("result_json", "why"),
    [
        (DEEP, "result_json is nested too deeply"),
        ('{"said": NaN}', "result_json is not JSON"),
        ('{"said": Infinity}', "result_json is not JSON"),
        ("[-Infinity]", "result_json is not JSON"),
    ],
    ids=["deep", "nan", "infinity", "minus-infinity"],
)
async def test_results_that_are_not_json_are_refused_alone(
    served: tuple[Running, httpx2.AsyncClient, str], result_json: str, why: str
) -> None:
    _, http, token = served
    use_id = await _claimed_call(http, token, "r")
    done = {"toolset": "echo", "tool_use_id": use_id, "provider_id": "p1", "incarnation_id": "i1"}
    bad = {"status": "completed", "result_json": result_json}
    status, code, message = _error(await http.post("/v1/providers/complete", json=done | bad))
    assert (status, code) == (422, "validation_error") and message.startswith(why)
    batch = {
        "toolset": "echo", "provider_id": "p1", "incarnation_id": "i1",
        "completions": [{"tool_use_id": use_id, **bad}],
    }  # fmt: skip
    answer = await http.post("/v1/providers/complete_many", json=batch)
    assert answer.status_code == 200, answer.text
    (outcome,) = answer.json()["completions"]
    assert outcome["error"]["code"] == "validation_error"
    assert outcome["error"]["message"].startswith(why)
    # The call still waits for its result: a JSON one is taken.
    good = {"status": "completed", "result_json": json.dumps({"said": "hi"})}
    assert (await http.post("/v1/providers/complete", json=done | good)).status_code == 200


async def test_a_fault_of_the_registry_answers_its_error_body(
    served: tuple[Running, httpx2.AsyncClient, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    running, http, _ = served
    operations = running.app.state.operations

    async def broken(*args: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(operations, "list_toolsets", broken)
    monkeypatch.setattr(operations, "health", broken)
    for answer in (await http.post("/v1/toolsets/list", json={}), await http.get("/health")):
        status, code, message = _error(answer)
        assert (status, code) == (500, "internal_error")
        assert "RuntimeError" in message and "a bug" not in message
