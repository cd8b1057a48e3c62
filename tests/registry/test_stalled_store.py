"""A store that stops answering (a stalled Redis: what a network partition looks like; a SQLite
file another process holds locked) makes every request answer ``503 service_unavailable``,
naming the store and what to do, within the store's answer bound; the registry serves again as
soon as the store answers. Requests queued behind one waiting for the store each waited for
those before them (eight requests on a locked SQLite file took 5 to 35 s, holding the event
loop; with Redis stalled, 300 took up to 16 s)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.http_client import HttpRegistryClient, RetryPolicy
from agentgen.runtime.registry.redis_store import RedisStore
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from agentgen.runtime.registry.store import Change, Operation, Store, StoreError, Write
from tests.registry.conftest import RedisServer, running_registry, start_redis_server
from tests.registry.helpers import register_body

#: How long the stores here wait for an answer: short, so that the stalls are short.
BOUND_S = 0.5


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own: it is stopped (SIGSTOP) while the others use theirs."""
    server = start_redis_server(tmp_path)
    yield server
    os.kill(server.process.pid, signal.SIGCONT)
    server.process.terminate()
    server.process.wait(10)


class Registry:
    """A registry with the echo toolset registered by two incarnations (i1 serves; i2 is
    drained while the store is stalled), and a call made to it."""

    def __init__(self, http: httpx2.AsyncClient, token: str, use_id: str) -> None:
        self.http, self.token, self.use_id = http, token, use_id

    def lease(self, incarnation: str = "i1") -> dict[str, str]:
        return {
            "toolset": "echo",
            "registration_token": self.token,
            "provider_id": "p1",
            "incarnation_id": incarnation,
        }

    def call_body(self, call_id: str) -> dict[str, Any]:
        return {
            "toolset": "echo",
            "tool": "echo.say",
            "payload_json": '{"text":"hi"}',
            "meta": {"run_id": "run", "tool_call_id": call_id},
            "expected_registration_token": self.token,
        }

    def every_kind(self) -> dict[str, tuple[str, dict[str, Any] | None]]:
        """One request of each kind, by name: path and body (None: a GET)."""
        claim = {**self.lease(), "wait_ms": 1_000, "max_calls": 1, "claim_operation_id": "stall"}
        return {
            "health": ("/health", None),
            "declare": ("/v1/providers/register", register_body(lease_ms=60_000)),
            "resolve": ("/v1/toolsets/resolve", {"toolset": "echo"}),
            "resolve_many": ("/v1/toolsets/resolve_many", {}),
            "list": ("/v1/toolsets/list", {}),
            "admit": (
                "/v1/toolsets/check_admission",
                {"toolset": "echo", "expected_registration_token": self.token},
            ),
            "call": ("/v1/calls", self.call_body("stalled")),
            "claim": ("/v1/providers/claim", claim),
            "result": (
                "/v1/calls/result",
                {"tool_use_id": self.use_id, "registration_token": self.token, "wait_ms": 1_000},
            ),
            "complete": (
                "/v1/providers/complete",
                {
                    "toolset": "echo",
                    "tool_use_id": self.use_id,
                    "provider_id": "p1",
                    "incarnation_id": "i1",
                    "status": "completed",
                    "result_json": '{"said": "hi"}',
                },
            ),
            "renew": ("/v1/providers/renew", {**self.lease(), "lease_ms": 60_000}),
            "drain": ("/v1/providers/drain", {**self.lease("i2"), "settle_ms": 60_000}),
        }

    async def send(self, path: str, body: dict[str, Any] | None) -> httpx2.Response:
        if body is None:
            return await self.http.get(path)
        return await self.http.post(path, json=body)

    async def send_every_kind(self) -> dict[str, httpx2.Response]:
        kinds = self.every_kind()
        answers = await asyncio.gather(*(self.send(*request) for request in kinds.values()))
        return dict(zip(kinds, answers, strict=True))

    async def serves_again(self) -> None:
        """Every kind of request works: a call is made, claimed, completed and read back."""
        ok = await self.send(*self.every_kind()["declare"])
        assert ok.status_code == 200, ok.text
        for name in ("resolve", "resolve_many", "list", "admit", "renew", "health"):
            answer = await self.send(*self.every_kind()[name])
            assert answer.status_code == 200, (name, answer.text)
        made = await self.http.post("/v1/calls", json=self.call_body("after"))
        assert made.status_code == 200, made.text
        use_id = made.json()["tool_use_id"]
        claimed: list[str] = []
        for attempt in range(10):  # the call made before the stall comes first
            body = {**self.lease(), "wait_ms": 1_000, "claim_operation_id": f"after-{attempt}"}
            answer = await self.http.post("/v1/providers/claim", json=body)
            assert answer.status_code == 200, answer.text
            claimed += [c["tool_use_id"] for c in answer.json()["calls"]]
            if use_id in claimed:
                break
        assert use_id in claimed
        done = await self.http.post(
            "/v1/providers/complete",
            json={
                "toolset": "echo",
                "tool_use_id": use_id,
                "provider_id": "p1",
                "incarnation_id": "i1",
                "status": "completed",
                "result_json": '{"said": "hi"}',
            },
        )
        assert done.status_code == 200, done.text
        result = await self.http.post(
            "/v1/calls/result",
            json={"tool_use_id": use_id, "registration_token": self.token, "wait_ms": 1_000},
        )
        assert result.json()["status"] == "completed", result.text
        drained = await self.http.post(
            "/v1/providers/drain", json={**self.lease(), "settle_ms": 1_000}
        )
        assert drained.status_code == 200, drained.text


@contextlib.asynccontextmanager
async def serving(store: Store) -> AsyncIterator[Registry]:
    async with running_registry(store) as running:
        async with httpx2.AsyncClient(base_url=running.url, timeout=60) as http:
            registered = await http.post(
                "/v1/providers/register", json=register_body(lease_ms=60_000)
            )
            assert registered.status_code == 200, registered.text
            token = registered.json()["registration_token"]
            second = await http.post(
                "/v1/providers/register", json=register_body(lease_ms=60_000, incarnation_id="i2")
            )
            assert second.status_code == 200, second.text
            registry = Registry(http, token, "")
            made = await http.post("/v1/calls", json=registry.call_body("before"))
            assert made.status_code == 200, made.text
            registry.use_id = made.json()["tool_use_id"]
            yield registry


def assert_unavailable(answers: dict[str, httpx2.Response], message: str) -> None:
    for name, answer in answers.items():
        assert answer.status_code == 503, (name, answer.text)
        error = answer.json()["error"]
        assert error["code"] == "service_unavailable", (name, error)
        assert error["message"].startswith(message), (name, error["message"])


async def test_every_request_to_a_stalled_redis_answers_503_and_the_registry_recovers(
    own_redis: RedisServer,
) -> None:
    store = RedisStore(
        own_redis.url, namespace=f"test:{uuid.uuid4().hex}", answer_timeout_s=BOUND_S
    )
    async with serving(store) as registry:
        os.kill(own_redis.process.pid, signal.SIGSTOP)
        try:
            answers = await registry.send_every_kind()
            # Sent together, so that they queue behind each other's trips to Redis.
            answers.update(await registry.send_every_kind())
        finally:
            os.kill(own_redis.process.pid, signal.SIGCONT)
        assert_unavailable(
            answers,
            f"registry store {store.description} did not answer within {BOUND_S:g} s: check "
            "that it is running and reachable from the registry",
        )
        await registry.serves_again()


async def test_every_request_to_a_locked_sqlite_file_answers_503_and_the_registry_recovers(
    tmp_path: Path,
) -> None:
    path = tmp_path / "registry.db"
    store = SQLiteStore(str(path), answer_timeout_s=BOUND_S)
    async with serving(store) as registry:
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")  # another program writing to the file
            answers = await registry.send_every_kind()
            other.execute("ROLLBACK")
        health = answers.pop("health")  # the registry's own clock: it answers
        assert health.status_code == 200, health.text
        assert_unavailable(
            answers,
            f"registry store {store.description} stayed locked by another process for "
            f"{BOUND_S:g} s: end what holds it",
        )
        await registry.serves_again()


async def test_a_locked_sqlite_file_does_not_hold_the_other_requests(tmp_path: Path) -> None:
    """The connection waited for the lock on the event loop (``busy_timeout``): every other
    request (health checks, long polls) waited with it, one locked operation after the other."""
    path = tmp_path / "registry.db"
    store = SQLiteStore(str(path), answer_timeout_s=60)
    async with serving(store) as registry:
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")  # another program writing to the file
            waiting = asyncio.create_task(store.get("toolset:echo"))
            await asyncio.sleep(0)  # it runs up to the lock (it held the loop there)
            assert not waiting.done()
            health = await registry.http.get("/health")
            assert health.status_code == 200, health.text
            assert not waiting.done()
            other.execute("ROLLBACK")
        assert await waiting is not None  # read once the file is free


async def test_decisions_taken_together_on_a_stalled_redis_fail_without_unseen_errors(
    own_redis: RedisServer,
) -> None:
    """Decisions taken in one trip (a provider's batched completions) failed at their bound
    together: the first was raised, and each of the others was logged, once collected, as
    "Future exception was never retrieved" (63 tracebacks per batch of 64 refused)."""
    store = RedisStore(
        own_redis.url, namespace=f"test:{uuid.uuid4().hex}", answer_timeout_s=BOUND_S
    )
    unseen: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: unseen.append(context))
    await store.open()
    try:
        decisions: list[Operation] = [
            ([f"k{i}"], lambda values, now, i=i: Change(i)) for i in range(5)
        ]
        assert await store.transact_many(decisions) == [0, 1, 2, 3, 4]
        os.kill(own_redis.process.pid, signal.SIGSTOP)
        try:
            with pytest.raises(StoreError, match="did not answer within"):
                await store.transact_many(decisions)
        finally:
            os.kill(own_redis.process.pid, signal.SIGCONT)
        assert await store.transact_many(decisions) == [0, 1, 2, 3, 4]
    finally:
        await store.close()
        gc.collect()
        loop.set_exception_handler(None)
    assert unseen == []


async def test_the_client_repeats_the_registrys_whole_503_message(tmp_path: Path) -> None:
    """The client quoted the first 200 characters of the answer's JSON: what the registry said
    to do about its store was cut off mid-sentence."""
    path = tmp_path / "registry.db"
    store = SQLiteStore(str(path), answer_timeout_s=BOUND_S)
    async with running_registry(store) as running:
        client = HttpRegistryClient(running.url, name="company", retry=RetryPolicy(max_retries=0))
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")  # another program writing to the file
            with pytest.raises(RegistryError) as failed:
                await client.list_toolsets()
            other.execute("ROLLBACK")
        await client.aclose()
    assert failed.value.code == "service_unavailable"
    assert failed.value.message == (
        f"registry 'company' at {running.url}: /toolsets/list failed after 1 attempt(s): "
        f"HTTP 503: service_unavailable: registry store {store.description} stayed locked by "
        f"another process for {BOUND_S:g} s: end what holds it (a program writing to the file, "
        "such as a sqlite3 shell with a transaction open); requests succeed again as soon as it "
        "is free"
    )


async def test_decisions_refused_on_a_stalled_redis_are_never_applied_later(
    own_redis: RedisServer,
) -> None:
    """Decisions queued behind the batch on its way to a stalled Redis were refused at their
    bound (503), then applied once Redis answered (344 of 600 here): an admission the
    consumer was told failed was admitted, and run, after all."""
    store = RedisStore(
        own_redis.url, namespace=f"test:{uuid.uuid4().hex}", answer_timeout_s=BOUND_S
    )
    await store.open()
    try:
        keys = [f"k{i}" for i in range(600)]

        async def write(key: str) -> str:
            try:
                await store.transact(
                    [key], lambda values, now: Change(None, writes={key: Write("x")})
                )
            except StoreError:
                return "refused"
            return "written"

        os.kill(own_redis.process.pid, signal.SIGSTOP)
        try:
            told = await asyncio.gather(*(write(key) for key in keys))
        finally:
            os.kill(own_redis.process.pid, signal.SIGCONT)
        assert set(told) == {"refused"}
        # Redis answers again: what was on its way, and what queued behind it, is not taken.
        assert await store.transact(["after"], lambda values, now: Change("served")) == "served"
        assert await store.get_many(keys) == [None] * len(keys)
    finally:
        await store.close()
