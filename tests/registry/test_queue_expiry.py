"""Queue messages go with their calls: a queue nobody reads any more (a withdrawn toolset's)
kept the message of every call made to it for good, though the calls ended and expired."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import uuid
from pathlib import Path

import pytest

from agentgen.runtime.registry import redis_store, sqlite_store
from agentgen.runtime.registry.admission import Limits, record_key
from agentgen.runtime.registry.operations import RegistryOperations
from agentgen.runtime.registry.redis_store import RedisStore
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from agentgen.runtime.registry.store import Change, Store, Write
from tests.registry.conftest import RedisServer
from tests.registry.helpers import call, registration

#: Calls expire 300 ms after they are made.
SHORT = Limits(min_lease_ms=100, call_timeout_ms=200, result_retention_ms=100)


async def _queued(store: Store) -> int:
    """Messages the store holds in the echo toolset's queue."""
    if isinstance(store, SQLiteStore):
        db = store._db
        assert db is not None
        return int(db.execute("SELECT count(*) FROM queue").fetchone()[0])
    assert isinstance(store, RedisStore)
    stream = store._k("queue:requests:echo")
    return int(await store._r.xlen(stream)) if await store._r.exists(stream) else 0


async def test_messages_of_calls_nobody_claims_go_when_the_calls_expire(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    ops = RegistryOperations(store, SHORT)
    token = (await ops.register(registration(lease_ms=60_000))).registration_token
    for i in range(20):
        await ops.call(call(token, run="r", call_id=f"c{i}"))
    await ops.unregister("echo", token)
    assert await _queued(store) == 20
    await asyncio.sleep(0.5)  # past every call's expiry
    monkeypatch.setattr(sqlite_store, "_PURGE_EVERY", 1)  # SQLite purges at its next commit
    await store.transact(["x"], lambda values, now: Change(None))
    assert await _queued(store) == 0
    # The queue still serves what comes next (Redis: the expired queue's consumer group is
    # made again).
    token = (await ops.register(registration(revision="r2", lease_ms=60_000))).registration_token
    made = await ops.call(call(token, run="r", call_id="after"))
    claimed = await ops.claim("echo", token, "p1", "i1", 16, 1_000, "op-after")
    assert [c.tool_use_id for c in claimed] == [made["tool_use_id"]]


async def test_a_redis_queue_that_expires_while_a_claim_waits_goes_on_serving(
    redis_server: RedisServer,
) -> None:
    # Redis streams expire as keys, their consumer group with them.
    store = RedisStore(redis_server.url, namespace=f"test:{uuid.uuid4().hex}")
    await store.open()
    try:
        ops = RegistryOperations(store, SHORT)
        token = (await ops.register(registration(lease_ms=60_000))).registration_token
        assert await ops.claim("echo", token, "p1", "i1", 16, 1, "op-0") == []  # queue made
        waiting = asyncio.create_task(ops.claim("echo", token, "p1", "i1", 16, 5_000, "op-1"))
        await asyncio.sleep(0.3)
        await store._r.delete(store._k("queue:requests:echo"))  # what its expiry does
        await asyncio.sleep(0.3)
        made = await ops.call(call(token, run="r", call_id="c"))
        claimed = await waiting
        assert [c.tool_use_id for c in claimed] == [made["tool_use_id"]]
    finally:
        await store.close()


@pytest.mark.parametrize("made_by", ["a claim", "the previous release"])
async def test_a_redis_queue_nobody_reads_any_more_expires_though_no_call_was_queued(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch, made_by: str
) -> None:
    """A queue is made by the first claim that reads it (its consumer group with it): with no
    call ever queued, or after its calls expired and a claim made it again, it had no expiry,
    and a withdrawn toolset's queue stayed in Redis for good."""
    monkeypatch.setattr(redis_store, "_QUEUE_IDLE_MS", 300)
    store = RedisStore(redis_server.url, namespace=f"test:{uuid.uuid4().hex}")
    await store.open()
    try:
        stream = store._k("queue:requests:echo")
        if made_by == "the previous release":  # a queue made without an expiry
            await store._r.xgroup_create(stream, "providers", id="0", mkstream=True)
            assert await store._r.pttl(stream) == -1
        ops = RegistryOperations(store, SHORT)
        token = (await ops.register(registration(lease_ms=60_000))).registration_token
        assert await ops.claim("echo", token, "p1", "i1", 16, 1, "op-0") == []
        await ops.unregister("echo", token)
        assert 0 < await store._r.pttl(stream) <= 300
        await asyncio.sleep(0.5)  # past the idle time: nobody read it since
        assert not await store._r.exists(stream)
    finally:
        await store.close()


async def test_a_redis_queue_keeps_the_life_its_calls_gave_it_when_read(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a queue never shortens its life below its calls' expiry."""
    monkeypatch.setattr(redis_store, "_QUEUE_IDLE_MS", 300)
    store = RedisStore(redis_server.url, namespace=f"test:{uuid.uuid4().hex}")
    await store.open()
    try:
        ops = RegistryOperations(store, Limits(call_timeout_ms=60_000))
        token = (await ops.register(registration(lease_ms=60_000))).registration_token
        made = await ops.call(call(token, run="r", call_id="c"))
        claimed = await ops.claim("echo", token, "p1", "i1", 16, 1, "op-0")
        assert [c.tool_use_id for c in claimed] == [made["tool_use_id"]]
        assert await store._r.pttl(store._k("queue:requests:echo")) > 30_000
    finally:
        await store.close()


#: The tables of a registry file written before queue messages expired.
_BEFORE_EXPIRY = (
    "CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at_ms INTEGER);"
    "CREATE TABLE queue (id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, "
    "body TEXT NOT NULL, delivered_to TEXT, delivered_at_ms INTEGER);"
)


@pytest.mark.parametrize("layout", ["before expiry", "column added without expiries"])
async def test_messages_of_a_sqlite_file_of_an_earlier_version_get_their_calls_expiry(
    tmp_path: Path, layout: str
) -> None:
    """Messages written before queue messages expired stayed for good: a file brought up to
    date gave them no expiry, and a queue nobody reads kept them."""
    path = tmp_path / "registry.db"
    live_until = sqlite_store._clock() + 3_600_000
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(_BEFORE_EXPIRY)
        if layout == "column added without expiries":  # what the previous release left
            db.execute("ALTER TABLE queue ADD COLUMN expires_at_ms INTEGER")
        db.execute("INSERT INTO kv VALUES (?, '{}', ?)", (record_key("call-alive"), live_until))
        db.executemany(
            "INSERT INTO queue (queue, body) VALUES ('q', ?)", [("call-alive",), ("call-gone",)]
        )
        db.commit()
    store = SQLiteStore(str(path))
    await store.open()
    try:
        assert store._db is not None
        expiries = dict(store._db.execute("SELECT body, expires_at_ms FROM queue").fetchall())
        assert expiries["call-alive"] == live_until
        # A message whose call is gone is of no use: nobody can claim it.
        assert expiries["call-gone"] <= sqlite_store._clock()
        assert [d.body for d in await store.receive("q", "c", 4, 1)] == ["call-alive"]
        await store.transact(["k"], lambda values, now: Change(None, enqueue=[("q", "new")]))
        assert [d.body for d in await store.receive("q", "c", 4, 1)] == ["new"]
    finally:
        await store.close()


async def test_a_redis_queue_forgets_the_consumers_of_providers_gone_but_not_their_calls(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each provider process is a consumer of its toolset's queue (its lease names it), and
    Redis kept every one for as long as the queue lived: a toolset whose calls never stop kept
    every provider process it ever had. Only consumers holding no message are forgotten: a
    consumer's pending messages go with it, and could never be taken over again."""
    monkeypatch.setattr(redis_store, "_QUEUE_IDLE_MS", 200)
    monkeypatch.setattr(redis_store, "_FORGET_EVERY_S", 0.0)
    store = RedisStore(redis_server.url, namespace=f"test:{uuid.uuid4().hex}", redelivery_ms=60_000)
    await store.open()
    try:
        queue, stream = "requests:echo", store._k("queue:requests:echo")

        async def delivered_to(consumer: str, body: str) -> list[str]:
            await store.transact(
                ["x"],
                lambda values, now: Change(None, enqueue=[(queue, body)], enqueue_until_ms=2**42),
            )
            store._reclaimed.clear()  # the read looks the queue over at once
            return [d.message_id for d in await store.receive(queue, consumer, 1, 1)]

        for i in range(5):  # five provider processes, gone after running a call each
            await store.ack(queue, await delivered_to(f"gone-{i}", f"call-{i}"))
        held = await delivered_to("holding", "held")  # one holds a call it has not completed
        assert len(await store._r.xinfo_consumers(stream, "providers")) == 6
        await asyncio.sleep(0.3)  # past the idle time
        assert len(await delivered_to("live", "next")) == 1
        names = {c["name"] for c in await store._r.xinfo_consumers(stream, "providers")}
        assert names == {"holding", "live"}
        pending = await store._r.xpending_range(stream, "providers", "-", "+", 10, "holding")
        assert [p["message_id"] for p in pending] == held
    finally:
        await store.close()


def _known(store: RedisStore) -> set[str]:
    """The queues the store's process holds anything about."""
    return store._groups | store._reclaimed.keys() | store._forgotten.keys()


async def test_a_redis_registry_process_forgets_the_queues_it_no_longer_reads(
    redis_server: RedisServer,
) -> None:
    """Each toolset queue a registry process ever read kept an entry in three of its maps
    for good (a withdrawn toolset's too, long after the queue expired in Redis): they only
    grew. A queue not read for the idle time is forgotten, and one read again works as
    before."""
    store = RedisStore(redis_server.url, namespace=f"test:{uuid.uuid4().hex}", redelivery_ms=500)
    await store.open()
    now = [1_000.0]
    store._clock = lambda: now[0]
    try:
        for i in range(5):
            assert await store.receive(f"requests:t{i}", "p1", 1, 1) == []
        streams = {store._k(f"queue:requests:t{i}") for i in range(5)}
        assert _known(store) == streams
        now[0] += redis_store._QUEUE_IDLE_MS / 1000 - 1  # not idle long enough yet
        assert await store.receive("requests:live", "p1", 1, 1) == []
        assert _known(store) == {*streams, store._k("queue:requests:live")}
        now[0] += redis_store._FORGET_EVERY_S
        assert await store.receive("requests:live", "p1", 1, 1) == []
        assert _known(store) == {store._k("queue:requests:live")}
        # Read again, a forgotten queue delivers its messages as before.
        await store.transact(
            ["x"],
            lambda values, at: Change(
                None, enqueue=[("requests:t0", "call-1")], enqueue_until_ms=2**42
            ),
        )
        delivered = await store.receive("requests:t0", "p1", 1, 1_000)
        assert [d.body for d in delivered] == ["call-1"]
    finally:
        await store.close()


async def test_a_redis_index_drops_the_names_of_catalog_keys_deleted_by_hand(
    redis_server: RedisServer,
) -> None:
    store = RedisStore(redis_server.url, namespace=f"test:{uuid.uuid4().hex}")
    await store.open()
    try:
        for name in ("toolset:kept", "toolset:deleted"):
            await store.transact(
                [name], lambda values, at, name=name: Change(None, writes={name: Write("{}")})
            )
        await store._r.delete(store._k("toolset:deleted"))  # an operator purging an entry
        assert await store.scan("toolset:") == [("toolset:kept", "{}")]
        assert await store._r.smembers(store._k("index")) == {"toolset:kept"}
        # Written again, it is indexed again.
        await store.transact(
            ["toolset:deleted"],
            lambda values, at: Change(None, writes={"toolset:deleted": Write("{}")}),
        )
        assert [k for k, _ in await store.scan("toolset:")] == ["toolset:deleted", "toolset:kept"]
    finally:
        await store.close()
