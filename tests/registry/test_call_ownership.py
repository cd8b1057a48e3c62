"""A call belongs to the consumer that made it: another consumer can neither read its result,
retry it, nor attach to it through its (guessable) identity; an admin sees every call; an open
registry is unchanged; records stored before calls had callers still load. Against the real
service, on every store."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentgen.runtime.registry.admission import record_key, tool_use_id
from agentgen.runtime.registry.auth import TokenTable
from agentgen.runtime.registry.client import CallRef, RegistryError
from agentgen.runtime.registry.http_client import HttpRegistryClient, HttpResultStream
from agentgen.runtime.registry.store import Change, Store, Write
from tests.registry.conftest import Running, running_registry
from tests.registry.helpers import register_body
from tests.registry.test_http_boundary import code_of, post

PROVIDER = "provider-token-echo-0001"
ALICE = "consumer-token-alice-01"
BOB = "consumer-token-bob-0002"
ADMIN = "admin-token-000000000004"
TOKENS = {
    "tokens": [
        {"name": "echo-provider", "role": "provider", "toolsets": ["echo"], "token": PROVIDER},
        {"name": "alice", "role": "consumer", "token": ALICE},
        {"name": "bob", "role": "consumer", "token": BOB},
        {"name": "ops", "role": "admin", "sha256": hashlib.sha256(ADMIN.encode()).hexdigest()},
    ]
}
SECRET_PAYLOAD = {"text": "alice's private question"}
SECRET_RESULT = '{"said":"alice\'s private answer"}'


@pytest.fixture
async def secured(store: Store) -> AsyncIterator[Running]:
    async with running_registry(store, tokens=TokenTable.from_json(TOKENS, "test")) as running:
        yield running


async def ok(running: Running, path: str, body: Any, token: str | None) -> dict[str, Any]:
    response = await post(running, path, body, token)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def register(running: Running, provider: str | None = PROVIDER) -> str:
    # A lease far longer than a test: these take about 4 s (long polls that find nothing), and
    # a 5 s lease expired under load, ending a claimed call outcome_unknown.
    body = register_body(lease_ms=60_000)
    token: str = (await ok(running, "/v1/providers/register", body, provider))["registration_token"]
    return token


def call_body(token: str, payload: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "toolset": "echo",
        "tool": "echo.say",
        "payload_json": json.dumps(SECRET_PAYLOAD if payload is None else payload),
        "meta": {"run_id": "run-1", "tool_call_id": "call-1"},
        "expected_registration_token": token,
        **extra,
    }


def lease(token: str) -> dict[str, Any]:
    return {"toolset": "echo", "registration_token": token, "provider_id": "p1",
            "incarnation_id": "i1"}  # fmt: skip


async def claim(
    running: Running, token: str, op: str, provider: str | None = PROVIDER
) -> list[str]:
    body = {**lease(token), "max_calls": 4, "wait_ms": 2_000, "claim_operation_id": op}
    answer = await ok(running, "/v1/providers/claim", body, provider)
    return [c["tool_use_id"] for c in answer["calls"]]


async def complete(running: Running, use_id: str, provider: str | None = PROVIDER) -> None:
    body = {"toolset": "echo", "tool_use_id": use_id, "provider_id": "p1",
            "incarnation_id": "i1", "status": "completed",
            "result_json": SECRET_RESULT}  # fmt: skip
    await ok(running, "/v1/providers/complete", body, provider)


async def overload(running: Running, use_id: str) -> None:
    body = {"toolset": "echo", "tool_use_id": use_id, "provider_id": "p1",
            "incarnation_id": "i1"}  # fmt: skip
    await ok(running, "/v1/providers/overload", body, PROVIDER)


def result_body(use_id: str, token: str) -> dict[str, Any]:
    return {"tool_use_id": use_id, "registration_token": token, "wait_ms": 0}


def retry_body(use_id: str, token: str) -> dict[str, Any]:
    return {"tool_use_id": use_id, "expected_registration_token": token}


async def missing(running: Running, path: str, body: dict[str, Any], who: str) -> str:
    """The refusal's message, having checked it is exactly a missing call's and tells nothing
    of the call (neither its payload nor its result nor its admission)."""
    response = await post(running, path, body, who)
    assert (response.status_code, code_of(response)) == (404, "not_found"), response.text
    message: str = response.json()["error"]["message"]
    assert message == f"call {body['tool_use_id']} not found (expired or never admitted)"
    return message


async def test_another_consumer_cannot_read_a_calls_result(secured: Running) -> None:
    token = await register(secured)
    ref = await ok(secured, "/v1/calls", call_body(token), ALICE)
    use_id = ref["tool_use_id"]
    # The ID is derived from (run ID, tool call ID) alone: anyone can compute it.
    assert use_id == tool_use_id("run-1", "call-1")
    assert await claim(secured, token, "op-1") == [use_id]
    await complete(secured, use_id)

    # Bob gets exactly what a call that never existed gets, with or without the right token.
    never = tool_use_id("run-1", "never-made")
    await missing(secured, "/v1/calls/result", result_body(never, token), BOB)
    await missing(secured, "/v1/calls/result", result_body(use_id, token), BOB)
    await missing(secured, "/v1/calls/result", result_body(use_id, "0" * 64), BOB)
    # Through the client too: a not_found refusal, not a result.
    async with HttpRegistryClient(secured.url, token=BOB) as bob:
        with pytest.raises(RegistryError) as info:
            await HttpResultStream(bob).await_result(CallRef(use_id, token, 0, 0))
        assert info.value.code == "not_found" and "private" not in str(info.value)

    # Alice, who made it, and the admin read it.
    for who in (ALICE, ADMIN):
        answer = await ok(secured, "/v1/calls/result", result_body(use_id, token), who)
        assert (answer["status"], answer["result_json"]) == ("completed", SECRET_RESULT)


async def test_another_consumer_cannot_attach_to_a_call_through_its_identity(
    secured: Running,
) -> None:
    token = await register(secured)
    ref = await ok(secured, "/v1/calls", call_body(token), ALICE)
    assert await claim(secured, token, "op-1") == [ref["tool_use_id"]]
    await complete(secured, ref["tool_use_id"])

    # Bob repeats Alice's call exactly (the idempotency key, the payload, the token), waiting
    # for its result or not, or with another payload: the same refusal, which tells neither
    # the result nor whether his payload matched hers.
    messages = set()
    for body in (
        call_body(token),
        call_body(token, wait_ms=1_000),
        call_body(token, payload={"text": "a guess"}),
    ):
        response = await post(secured, "/v1/calls", body, BOB)
        assert (response.status_code, code_of(response)) == (409, "call_conflict"), response.text
        assert "private" not in response.text and "alice" not in response.text
        messages.add(response.json()["error"]["message"])
    assert len(messages) == 1 and "another consumer" in messages.pop()

    # Alice attaches to her own call, and gets her result with it.
    again = await ok(secured, "/v1/calls", call_body(token, wait_ms=1_000), ALICE)
    assert again["tool_use_id"] == ref["tool_use_id"]
    assert again["result"]["result_json"] == SECRET_RESULT
    # The admin may attach as well (an admin sees every call).
    admin = await ok(secured, "/v1/calls", call_body(token, wait_ms=1_000), ADMIN)
    assert admin["result"]["result_json"] == SECRET_RESULT


async def test_another_consumer_cannot_retry_a_call(secured: Running) -> None:
    token = await register(secured)
    use_id = (await ok(secured, "/v1/calls", call_body(token), ALICE))["tool_use_id"]
    assert await claim(secured, token, "op-1") == [use_id]
    await overload(secured, use_id)

    await missing(secured, "/v1/calls/retry", retry_body(use_id, token), BOB)
    # A wrong token tells Bob nothing either (Alice would hear the admission it was made under).
    await missing(secured, "/v1/calls/retry", retry_body(use_id, "0" * 64), BOB)
    # Nothing was put back in line: the call is still overloaded, waiting for Alice.
    assert await claim(secured, token, "op-2") == []
    answer = await ok(secured, "/v1/calls/result", result_body(use_id, token), ALICE)
    assert answer["status"] == "overloaded"

    # Alice retries it; overloaded once more, the admin retries it; then it runs.
    assert (await ok(secured, "/v1/calls/retry", retry_body(use_id, token), ALICE))[
        "tool_use_id"
    ] == use_id
    assert await claim(secured, token, "op-3") == [use_id]
    await overload(secured, use_id)
    await ok(secured, "/v1/calls/retry", retry_body(use_id, token), ADMIN)
    assert await claim(secured, token, "op-4") == [use_id]
    await complete(secured, use_id)
    answer = await ok(secured, "/v1/calls/result", result_body(use_id, token), ALICE)
    assert answer["result_json"] == SECRET_RESULT


async def test_a_record_stored_before_calls_had_callers_is_the_admins_alone(
    secured: Running,
) -> None:
    """A record written by the registry before this change has no ``caller``: it still loads,
    nobody's consumer token reads, retries or attaches to it, the admin reads it."""
    token = await register(secured)
    use_id = (await ok(secured, "/v1/calls", call_body(token), ALICE))["tool_use_id"]
    assert await claim(secured, token, "op-1") == [use_id]
    await complete(secured, use_id)
    key = record_key(use_id)
    stored = json.loads(await secured.store.get(key) or "{}")
    stored.pop("caller", None)  # what the registry wrote before calls had callers

    def rewrite(values: Any, now: int) -> Change[None]:
        return Change(None, writes={key: Write(json.dumps(stored), stored["expires_at_ms"])})

    await secured.store.transact([key], rewrite)
    assert await secured.app.state.operations.verify_catalog() == 1

    for who in (ALICE, BOB):
        await missing(secured, "/v1/calls/result", result_body(use_id, token), who)
        response = await post(secured, "/v1/calls", call_body(token), who)
        assert code_of(response) == "call_conflict"
    answer = await ok(secured, "/v1/calls/result", result_body(use_id, token), ADMIN)
    assert (answer["status"], answer["result_json"]) == ("completed", SECRET_RESULT)


async def test_an_open_registrys_calls_are_everyones_and_stay_the_admins(store: Store) -> None:
    """Without tokens nothing changes: every request may read and attach to every call. Served
    with tokens (a second registry on the same store), those calls are the open registry's
    principal's, an admin's, alone."""
    async with running_registry(store) as running:
        token = await register(running, None)
        ref = await ok(running, "/v1/calls", call_body(token), None)
        use_id = ref["tool_use_id"]
        assert await claim(running, token, "op-1", None) == [use_id]
        await complete(running, use_id, None)
        answer = await ok(running, "/v1/calls/result", result_body(use_id, token), None)
        assert answer["result_json"] == SECRET_RESULT
        again = await ok(running, "/v1/calls", call_body(token, wait_ms=1_000), None)
        assert again["result"]["result_json"] == SECRET_RESULT

        tokens = TokenTable.from_json(TOKENS, "test")
        async with running_registry(store, tokens=tokens) as secured:
            await missing(secured, "/v1/calls/result", result_body(use_id, token), ALICE)
            response = await post(secured, "/v1/calls", call_body(token), ALICE)
            assert code_of(response) == "call_conflict"
            answer = await ok(secured, "/v1/calls/result", result_body(use_id, token), ADMIN)
            assert answer["result_json"] == SECRET_RESULT
