"""Wake-ups leave nothing behind: a store keeps a channel's version only while someone may
compare against it (every finished call used to leave an entry in every registry process for
good, and in a Redis cluster every process heard every call's result)."""

from __future__ import annotations

import asyncio
import uuid

from agentgen.runtime.registry.auth import LOCAL
from agentgen.runtime.registry.operations import RegistryOperations
from agentgen.runtime.registry.redis_store import RedisStore
from agentgen.runtime.registry.store import Signals, Store
from tests.registry.conftest import FAST, RedisServer
from tests.registry.helpers import call, registration


def _results(names: set[str]) -> set[str]:
    return {name for name in names if name.startswith("result:")}


async def _serve(ops: RegistryOperations, token: str, run: str, count: int) -> list[str]:
    """``count`` calls made, run and read: half waited for as they were made, half read
    after they ended."""
    ids = []
    for i in range(count):
        ids.append((await ops.call(call(token, run=run, call_id=f"c{i}")))["tool_use_id"])
    for claimed in await ops.claim("echo", token, "p1", "i1", count, 1_000, f"op-{run}"):
        await ops.complete("echo", claimed.tool_use_id, "p1", "i1", "completed", '{"said":"x"}', "")
    for use_id in ids:
        assert (await ops.await_result(use_id, token, 1_000, caller=LOCAL)).status == "completed"
    return ids


async def test_finished_calls_leave_no_wake_up_state(store: Store) -> None:
    ops = RegistryOperations(store, FAST)
    token = (await ops.register(registration(lease_ms=60_000))).registration_token
    await _serve(ops, token, "read-after", 20)
    # Waited for while they run: the admission and the wait share one position.
    waits = [
        asyncio.create_task(ops.call_and_wait(call(token, run="waited", call_id=f"c{i}"), 5_000))
        for i in range(10)
    ]
    claimed: list[str] = []
    while len(claimed) < 10:
        got = await ops.claim("echo", token, "p1", "i1", 10, 1_000, f"op-w{len(claimed)}")
        for one in got:
            await ops.complete("echo", one.tool_use_id, "p1", "i1", "completed", '{"said":"y"}', "")
        claimed += [one.tool_use_id for one in got]
    for _, result in await asyncio.gather(*waits):
        assert result.status == "completed"
    assert _results(store._signals.names()) == set()  # type: ignore[attr-defined]


async def test_a_registry_process_keeps_nothing_of_the_calls_of_others(
    redis_server: RedisServer,
) -> None:
    namespace = f"test:{uuid.uuid4().hex}"
    serving, bystander = (RedisStore(redis_server.url, namespace=namespace) for _ in range(2))
    await serving.open()
    await bystander.open()
    try:
        ops = RegistryOperations(serving, FAST)
        token = (await ops.register(registration(lease_ms=60_000))).registration_token
        ids = await _serve(ops, token, "r", 30)
        # One more result, watched by the bystander: once it hears it, it heard every earlier
        # announcement too (one pub/sub connection delivers them in order).
        last = (await ops.call(call(token, run="last", call_id="c")))["tool_use_id"]
        channel = f"result:{last}"
        position = await bystander.cursor(channel)
        await _serve_one(ops, token, last)
        while await bystander.wait(channel, position, 1_000) == position:
            pass
        await bystander.release(channel)
        assert ids and _results(bystander._signals.names()) == set()
        assert _results(serving._signals.names()) == set()
    finally:
        await serving.close()
        await bystander.close()


async def _serve_one(ops: RegistryOperations, token: str, use_id: str) -> None:
    (claimed,) = await ops.claim("echo", token, "p1", "i1", 1, 1_000, "op-last")
    assert claimed.tool_use_id == use_id
    await ops.complete("echo", use_id, "p1", "i1", "completed", '{"said":"z"}', "")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_bump_nobody_can_wait_for_is_not_kept() -> None:
    signals = Signals(Clock())
    signals.bump("result:a")
    assert signals.names() == set()


def test_a_position_taken_before_the_bump_sees_it_until_released() -> None:
    clock = Clock()
    signals = Signals(clock)
    position = signals.hold("result:a")
    clock.now += 10 * Signals.KEEP  # held: kept however long the admission takes
    signals.bump("result:a")
    assert signals.version("result:a") != position  # the waiter wakes at once
    signals.release("result:a")
    assert signals.names() == set()


def test_a_position_taken_without_holding_it_is_forgotten_after_a_while() -> None:
    clock = Clock()
    signals = Signals(clock)
    signals.version("queue:q")
    signals.bump("queue:q")
    clock.now += Signals.KEEP + 1
    signals.bump("result:other")  # forgetting is done as signals are used
    assert signals.names() == set()
