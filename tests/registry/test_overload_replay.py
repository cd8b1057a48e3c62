"""An overload names the claim operation that took the call: a repeat of it (the client's
transport retry) that lands after the consumer retried the call and the same lease claimed it
again changes nothing, where it used to give back the call the lease was running (its result
was then refused, and the call ran twice)."""

from __future__ import annotations

import httpx2
import pytest

from agentgen.runtime.contracts.fingerprint import schema_fingerprint
from agentgen.runtime.registry import api
from agentgen.runtime.registry.auth import LOCAL
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.http_client import HttpRegistryClient
from agentgen.runtime.registry.operations import RegistryOperations
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from agentgen.runtime.registry.store import Store
from tests.registry.conftest import FAST, running_registry
from tests.registry.helpers import call, echo_toolset, registration


async def _claimed(ops: RegistryOperations, token: str, op: str) -> list[str]:
    return [c.tool_use_id for c in await ops.claim("echo", token, "p1", "i1", 16, 1_000, op)]


async def test_a_stale_overload_leaves_the_call_the_lease_runs_again(store: Store) -> None:
    ops = RegistryOperations(store, FAST)
    token = (await ops.register(registration(lease_ms=5_000))).registration_token
    use = (await ops.call(call(token)))["tool_use_id"]
    assert await _claimed(ops, token, "op-1") == [use]
    await ops.report_overload("echo", use, "p1", "i1", claim_operation_id="op-1")
    # The same overload again (its answer was lost): applied already, answered as applied.
    await ops.report_overload("echo", use, "p1", "i1", claim_operation_id="op-1")
    assert (await ops.await_result(use, token, 0, caller=LOCAL)).status == "overloaded"
    await ops.retry(use, token, caller=LOCAL)
    # Still in line: an overload of the earlier claim changes nothing either.
    await ops.report_overload("echo", use, "p1", "i1", claim_operation_id="op-1")
    assert await _claimed(ops, token, "op-2") == [use]
    await ops.report_overload("echo", use, "p1", "i1", claim_operation_id="op-1")
    assert (await ops.await_result(use, token, 0, caller=LOCAL)).status == "pending"
    await refused_retry(ops, use, token)
    await ops.complete("echo", use, "p1", "i1", "completed", '{"said":"hi"}', "")
    done = await ops.await_result(use, token, 0, caller=LOCAL)
    assert (done.status, done.result_json) == ("completed", '{"said":"hi"}')
    # Nothing put the call back in line: no claim takes it a second time.
    assert await _claimed(ops, token, "op-3") == []


async def refused_retry(ops: RegistryOperations, use: str, token: str) -> None:
    """The running call is not overloaded: a consumer's retry changes nothing."""
    before = await ops.await_result(use, token, 0, caller=LOCAL)
    await ops.retry(use, token, caller=LOCAL)
    assert await ops.await_result(use, token, 0, caller=LOCAL) == before


async def test_an_overload_of_the_claim_that_holds_the_call_gives_it_back(store: Store) -> None:
    ops = RegistryOperations(store, FAST)
    token = (await ops.register(registration(lease_ms=5_000))).registration_token
    use = (await ops.call(call(token)))["tool_use_id"]
    assert await _claimed(ops, token, "op-1") == [use]
    await ops.report_overload("echo", use, "p1", "i1", claim_operation_id="op-1")
    assert (await ops.await_result(use, token, 0, caller=LOCAL)).status == "overloaded"
    # Another lease cannot give back a call it does not hold, whatever operation it names.
    await ops.register(registration(provider="p2", incarnation="i2", lease_ms=5_000))
    await ops.retry(use, token, caller=LOCAL)
    assert [
        c.tool_use_id for c in await ops.claim("echo", token, "p2", "i2", 16, 1_000, "op-9")
    ] == [use]
    with pytest.raises(RegistryError) as info:
        await ops.report_overload("echo", use, "p1", "i1", claim_operation_id="op-9")
    assert info.value.code == "provider_lease_lost"


async def test_overloads_without_an_operation_are_judged_by_the_lease_as_before(
    store: Store,
) -> None:
    # What a provider older than the header sends.
    ops = RegistryOperations(store, FAST)
    token = (await ops.register(registration(lease_ms=5_000))).registration_token
    use = (await ops.call(call(token)))["tool_use_id"]
    assert await _claimed(ops, token, "op-1") == [use]
    await ops.report_overload("echo", use, "p1", "i1")
    assert (await ops.await_result(use, token, 0, caller=LOCAL)).status == "overloaded"


async def test_the_client_sends_the_claim_operation_in_a_header() -> None:
    async with running_registry(SQLiteStore(":memory:")) as running:
        client = HttpRegistryClient(running.url)
        try:
            toolset = echo_toolset()
            token = (
                await client.register(
                    toolset,
                    schema_fingerprint=schema_fingerprint(toolset),
                    revision="r1",
                    provider_id="p1",
                    incarnation_id="i1",
                    lease_ms=5_000,
                )
            ).registration_token
            ops = running.app.state.operations
            use = (await ops.call(call(token)))["tool_use_id"]

            async def claim(op: str) -> list[str]:
                calls = await client.claim(
                    "echo", token, "p1", "i1", max_calls=4, wait_ms=1_000, operation_id=op
                )
                return [c.tool_use_id for c in calls]

            assert await claim("op-1") == [use]
            await client.report_overload("echo", use, "p1", "i1", claim_operation_id="op-1")
            await ops.retry(use, token, caller=LOCAL)
            assert await claim("op-2") == [use]
            await client.report_overload("echo", use, "p1", "i1", claim_operation_id="op-1")
            await client.complete(
                "echo", use, "p1", "i1", status="completed", result_json='{"said":"hi"}'
            )
            assert (await ops.await_result(use, token, 0, caller=LOCAL)).status == "completed"
            async with httpx2.AsyncClient(base_url=running.url, timeout=10) as http:
                answer = await http.post(
                    "/v1/providers/overload",
                    json={
                        "toolset": "echo",
                        "tool_use_id": use,
                        "provider_id": "p1",
                        "incarnation_id": "i1",
                    },
                    headers={api.CLAIM_OPERATION_HEADER: "not an operation"},
                )
            assert answer.status_code == 422, answer.text
            assert api.CLAIM_OPERATION_HEADER in answer.json()["error"]["message"]
        finally:
            await client.aclose()


async def test_the_openapi_document_describes_the_header() -> None:
    async with running_registry(SQLiteStore(":memory:")) as running:
        async with httpx2.AsyncClient(base_url=running.url, timeout=10) as http:
            document = (await http.get("/openapi.json")).json()
    parameters = document["paths"]["/v1/providers/overload"]["post"]["parameters"]
    assert [(p["name"], p["in"]) for p in parameters] == [(api.CLAIM_OPERATION_HEADER, "header")]
