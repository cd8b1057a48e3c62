"""A provider gives back, unrun, the calls of a claim whose answer it could not read: they end
``failed`` with code ``not_run`` (safe to call again) instead of ``outcome_unknown`` ("may have
run: never retry") once its lease ends. Only the calls that claim operation of the lease still
holds change; the operation is closed, so nothing more joins it."""

from __future__ import annotations

import json

import pytest

from agentgen.runtime.registry.auth import LOCAL
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.operations import RegistryOperations
from agentgen.runtime.registry.store import Store
from tests.registry.conftest import FAST
from tests.registry.helpers import call, registration


async def _claimed(ops: RegistryOperations, token: str, op: str, wait_ms: int = 1_000) -> list[str]:
    return [c.tool_use_id for c in await ops.claim("echo", token, "p1", "i1", 16, wait_ms, op)]


async def test_the_calls_a_claim_took_end_not_run_and_others_are_left_alone(store: Store) -> None:
    ops = RegistryOperations(store, FAST)
    token = (await ops.register(registration(lease_ms=5_000))).registration_token
    first = (await ops.call(call(token, call_id="c1")))["tool_use_id"]
    second = (await ops.call(call(token, call_id="c2")))["tool_use_id"]
    assert sorted(await _claimed(ops, token, "op-1")) == sorted([first, second])
    await ops.complete("echo", first, "p1", "i1", "completed", '{"said":"hi"}', "")
    other = (await ops.call(call(token, call_id="c3")))["tool_use_id"]
    assert await _claimed(ops, token, "op-2") == [other]

    assert await ops.give_back_unrun("echo", token, "p1", "i1", "op-1") == 1

    done = await ops.await_result(first, token, 0, caller=LOCAL)
    assert (done.status, done.result_json) == ("completed", '{"said":"hi"}')
    unrun = await ops.await_result(second, token, 0, caller=LOCAL)
    assert unrun.status == "failed"
    assert json.loads(unrun.result_json or "")["code"] == "not_run"
    assert "the call did not run: it is safe to call again" in unrun.message
    # Another operation's call is the lease's still, and completes.
    assert (await ops.await_result(other, token, 0, caller=LOCAL)).status == "pending"
    await ops.complete("echo", other, "p1", "i1", "completed", '{"said":"hi"}', "")
    # Repeated (its answer lost): nothing more to give back. Released, nothing changes.
    assert await ops.give_back_unrun("echo", token, "p1", "i1", "op-1") == 0
    await ops.release("echo", token, "p1", "i1")
    assert (await ops.await_result(second, token, 0, caller=LOCAL)).status == "failed"


async def test_a_closed_operation_takes_no_new_call(store: Store) -> None:
    """A claim of the operation still waiting (its request abandoned) or made later takes
    nothing: the calls stay in line for the lease's other claims."""
    ops = RegistryOperations(store, FAST)
    token = (await ops.register(registration(lease_ms=5_000))).registration_token
    assert await ops.give_back_unrun("echo", token, "p1", "i1", "op-1") == 0
    use = (await ops.call(call(token)))["tool_use_id"]
    assert await _claimed(ops, token, "op-1", wait_ms=0) == []
    assert await _claimed(ops, token, "op-2") == [use]


async def test_a_lease_that_is_gone_gives_nothing_back(store: Store) -> None:
    ops = RegistryOperations(store, FAST)
    token = (await ops.register(registration(lease_ms=5_000))).registration_token
    use = (await ops.call(call(token)))["tool_use_id"]
    assert await _claimed(ops, token, "op-1") == [use]
    await ops.release("echo", token, "p1", "i1")
    with pytest.raises(RegistryError) as refused:
        await ops.give_back_unrun("echo", token, "p1", "i1", "op-1")
    assert refused.value.code == "provider_lease_lost"
    assert (await ops.await_result(use, token, 0, caller=LOCAL)).status == "outcome_unknown"
