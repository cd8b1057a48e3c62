"""A call to a toolset that no provider serves ends ``no_provider`` at once, on every store.

A toolset stays published after its providers leave (their leases expired, were released or
are draining), so a consumer can still resolve it and call it. Such a call used to be queued
for nobody and end only at the call timeout (ten minutes by default); a call already queued
when the last lease ended did the same. Both now end ``no_provider`` (the call did not run)
as soon as the registry sees it: at admission, or at the waiting consumer's next look.

The calls here have a call timeout of a minute and the waits for them are shorter than that,
so an outcome that arrives proves it did not wait for the timeout; nothing is timed.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Literal

import pytest

from agentgen.runtime import ToolContext
from agentgen.runtime.registry.admission import record_key, tool_use_id
from agentgen.runtime.registry.auth import LOCAL
from agentgen.runtime.registry.operations import RegistryOperations
from agentgen.runtime.registry.store import Store
from examples.quickstart.gen.quickstart.toolsets.weather import types
from tests.registry.conftest import FAST, Running, running_registry
from tests.registry.helpers import call, registration
from tests.registry.test_admission import refused
from tests.registry.test_provider import (
    OPTIONS,
    WEATHER,
    Weather,
    consumer,
    providing,
    result_of,
)
from tests.runtime.agents import ScriptedPlanner, answer, calls

#: A call timeout far longer than any wait below: an outcome is never the timeout's.
LONG = dataclasses.replace(FAST, call_timeout_ms=60_000)
#: How long a consumer waits for an outcome here (a sixth of the call timeout).
WAIT_MS = 10_000

Ending = Literal["released", "drained", "expired"]
ENDINGS: tuple[Ending, ...] = ("released", "drained", "expired")


@pytest.fixture
def ops(store: Store) -> RegistryOperations:
    return RegistryOperations(store, LONG)


async def register(
    ops: RegistryOperations, *, incarnation: str = "i1", lease_ms: int = 5_000
) -> str:
    done = await ops.register(registration(incarnation=incarnation, lease_ms=lease_ms))
    return done.registration_token


async def end_lease(ops: RegistryOperations, token: str, how: Ending, incarnation: str) -> None:
    """End the lease of provider p1's ``incarnation`` (registered with a 200 ms lease when it is
    to expire): what the toolset has left decides what happens to its calls."""
    if how == "released":
        await ops.release("echo", token, "p1", incarnation)
    elif how == "drained":
        await ops.drain("echo", token, "p1", incarnation, 30_000)
    else:
        await asyncio.sleep(0.4)  # the 200 ms lease expires on the store's clock


def assert_names_the_remedy(message: str) -> None:
    assert "toolset 'echo' has no live provider" in message
    assert "did not run" in message
    assert "start or restart a provider of 'echo'" in message


@pytest.mark.parametrize("how", ENDINGS)
async def test_a_call_to_a_toolset_without_a_live_lease_is_refused_at_once(
    ops: RegistryOperations, how: Ending
) -> None:
    token = await register(ops, lease_ms=200 if how == "expired" else 5_000)
    await end_lease(ops, token, how, "i1")
    error = await refused("no_provider", ops.call(call(token)))
    assert_names_the_remedy(error.message)
    # A provider coming back does not run it: the same call gives the same answer...
    await register(ops, incarnation="i2")
    again = await refused("no_provider", ops.call(call(token)))
    assert again.message == error.message
    ids = await ops.claim("echo", token, "p1", "i2", 16, 100, "op-1")
    assert ids == []  # ...and nothing was queued for the new incarnation to claim
    # while a new call is queued for it as before.
    fresh = await ops.call(call(token, call_id="fresh"))
    claimed = await ops.claim("echo", token, "p1", "i2", 16, 1_000, "op-2")
    assert [c.tool_use_id for c in claimed] == [fresh["tool_use_id"]]


async def test_one_routable_lease_is_enough_to_admit_a_call(ops: RegistryOperations) -> None:
    token = await register(ops)
    await ops.register(registration(provider="p2"))
    await ops.drain("echo", token, "p1", "i1", 30_000)
    ref = await ops.call(call(token))
    claimed = await ops.claim("echo", token, "p2", "i1", 16, 1_000, "op-1")
    assert [c.tool_use_id for c in claimed] == [ref["tool_use_id"]]


@pytest.mark.parametrize("how", ENDINGS)
async def test_a_queued_call_ends_when_the_last_live_lease_ends(
    ops: RegistryOperations, how: Ending
) -> None:
    token = await register(ops, lease_ms=200 if how == "expired" else 5_000)
    held = await ops.call(call(token, call_id="held"))
    claimed = await ops.claim("echo", token, "p1", "i1", 1, 1_000, "op-1")
    assert [c.tool_use_id for c in claimed] == [held["tool_use_id"]]
    queued = await ops.call(call(token, call_id="queued"))
    await end_lease(ops, token, how, "i1")

    result = await ops.await_result(queued["tool_use_id"], token, WAIT_MS, caller=LOCAL)
    assert result.status == "no_provider"
    assert_names_the_remedy(result.message)
    # The call that WAS claimed keeps its rule: a lost lease is outcome_unknown, and a
    # draining one still runs it to the end.
    if how == "drained":
        await ops.complete("echo", held["tool_use_id"], "p1", "i1", "completed", '{"said":"x"}', "")
        result = await ops.await_result(held["tool_use_id"], token, WAIT_MS, caller=LOCAL)
        assert result.status == "completed"
    else:
        result = await ops.await_result(held["tool_use_id"], token, WAIT_MS, caller=LOCAL)
        assert result.status == "outcome_unknown"
    # A provider that comes back never runs the call that ended: it was never claimed.
    await register(ops, incarnation="i2")
    assert await ops.claim("echo", token, "p1", "i2", 16, 300, "op-2") == []
    again = await refused("no_provider", ops.call(call(token, call_id="queued")))
    assert_names_the_remedy(again.message)


async def test_a_queued_call_waits_while_another_lease_is_routable(
    ops: RegistryOperations,
) -> None:
    token = await register(ops)
    await ops.register(registration(provider="p2"))
    ref = await ops.call(call(token))
    await ops.release("echo", token, "p1", "i1")
    pending = await ops.await_result(ref["tool_use_id"], token, 1_200, caller=LOCAL)
    assert pending.status == "pending"  # looked at again after a second: still p2's to take
    claimed = await ops.claim("echo", token, "p2", "i1", 16, 1_000, "op-1")
    assert [c.tool_use_id for c in claimed] == [ref["tool_use_id"]]


async def test_an_overloaded_call_retried_without_a_provider_ends_no_provider(
    ops: RegistryOperations,
) -> None:
    token = await register(ops)
    ref = await ops.call(call(token))
    use = ref["tool_use_id"]
    await ops.claim("echo", token, "p1", "i1", 16, 1_000, "op-1")
    await ops.report_overload("echo", use, "p1", "i1")
    await ops.release("echo", token, "p1", "i1")
    assert await ops.retry(use, token, caller=LOCAL) == ref  # the same call, not queued
    result = await ops.await_result(use, token, WAIT_MS, caller=LOCAL)
    assert result.status == "no_provider"
    assert_names_the_remedy(result.message)


# --- through the service and the runtime --------------------------------------------------------


@pytest.fixture
async def service(store: Store) -> AsyncIterator[Running]:
    async with running_registry(store, limits=LONG) as running:
        yield running


async def test_the_model_reads_no_provider_when_every_provider_left(service: Running) -> None:
    weather = Weather()
    async with providing(service.url, weather):
        pass  # served, then drained and released: the toolset stays published
    planner = ScriptedPlanner([calls(("weather.forecast", {"city": "Oslo"})), answer()])
    rt, client = consumer(service.url, planner)
    try:
        outcome = await asyncio.wait_for(
            rt.client("test.forecaster").run("weather?"), WAIT_MS / 1000
        )
    finally:
        await client.aclose()
    error, value = result_of(outcome)
    assert error and value["error"]["kind"] == "no_provider"
    message = value["error"]["message"]
    assert message.startswith("weather.forecast: ")
    assert f"toolset {WEATHER!r} has no live provider" in message
    assert f"start or restart a provider of {WEATHER!r}" in message
    assert weather.seen == []


async def test_a_call_queued_behind_a_busy_provider_ends_no_provider_when_it_drains(
    service: Running,
) -> None:
    """Item 3 end to end: the provider (one call at a time) holds the first call while the
    second waits in line; the provider stops: the queued call ends ``no_provider`` while the
    draining provider still completes the one it holds."""
    entered, finish = asyncio.Event(), asyncio.Event()

    class Busy(Weather):
        async def forecast(self, args: types.ForecastArgs, context: ToolContext) -> types.Forecast:
            entered.set()
            await finish.wait()
            return await super().forecast(args, context)

    busy = Busy()
    options = dataclasses.replace(OPTIONS, concurrency=1, drain_seconds=WAIT_MS / 1000)
    async with providing(service.url, busy, options=options) as (task, stop, _):
        first = ScriptedPlanner([calls(("weather.forecast", {"city": "Oslo"})), answer()])
        rt, client = consumer(service.url, first)
        held = asyncio.create_task(rt.client("test.forecaster").run("weather?", run_id="held"))
        await entered.wait()
        second = ScriptedPlanner([calls(("weather.forecast", {"city": "Rome"})), answer()])
        other, other_client = consumer(service.url, second)
        queued = asyncio.create_task(other.client("test.forecaster").run("w?", run_id="queued"))
        await _admitted(service.store, "queued")
        stop.set()  # drains: the provider's only lease stops being routable
        outcome = await asyncio.wait_for(queued, WAIT_MS / 1000)
        finish.set()
        kept = await asyncio.wait_for(held, WAIT_MS / 1000)
        await task
        await client.aclose()
        await other_client.aclose()
    error, value = result_of(outcome)
    assert error and value["error"]["kind"] == "no_provider", value
    assert [args.city for args, _ in busy.seen] == ["Oslo"]  # Rome never ran
    error, value = result_of(kept)
    assert not error and value["city"] == "Oslo"


async def _admitted(store: Store, run_id: str) -> None:
    """Until the run's first call is admitted (its record stored): it is then in line."""
    key = record_key(tool_use_id(run_id, "c0_weather.forecast"))
    while await store.get(key) is None:
        await asyncio.sleep(0.01)
