"""The Redis store's blocking reads of provider queues: a claim's long poll waits as long as it
asked (redis-py's 5 s read timeout used to fail every claim waiting 5 s or more on an idle
queue with 503), and a message Redis delivers just as a read is given up is not stranded until
the redelivery time."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
import pytest
from redis.exceptions import TimeoutError as RedisTimeoutError

from agentgen.runtime.registry.redis_store import RedisStore
from agentgen.runtime.registry.store import StoreError
from tests.registry.conftest import RedisServer, running_registry
from tests.registry.helpers import register_body


async def test_a_claim_waiting_longer_than_five_seconds_on_an_idle_queue_answers_no_calls(
    redis_server: RedisServer,
) -> None:
    store = RedisStore(redis_server.url, namespace=f"test:{uuid.uuid4().hex}")
    async with running_registry(store) as running:
        async with httpx2.AsyncClient(base_url=running.url, timeout=30) as http:
            registered = await http.post("/v1/providers/register", json=register_body())
            assert registered.status_code == 200, registered.text
            claim = {
                "toolset": "echo",
                "registration_token": registered.json()["registration_token"],
                "provider_id": "p1",
                "incarnation_id": "i1",
                # Longer than redis-py's default socket timeout (5 s); the SDK asks for 5 s.
                "wait_ms": 5_500,
                "claim_operation_id": "op-1",
            }
            answer = await http.post("/v1/providers/claim", json=claim)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"calls": []}


async def test_a_message_delivered_as_a_read_is_given_up_comes_with_the_next_read(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Redelivery of unacknowledged messages is an hour away: only the next read can bring it.
    store = RedisStore(
        redis_server.url, namespace=f"test:{uuid.uuid4().hex}", redelivery_ms=3_600_000
    )
    await store.open()
    try:
        assert await store.receive("q", "lease-1", 4, 1) == []
        stream = store._k("queue:q")
        await store._r.xadd(stream, {"b": "call-1"})
        blocking = store._blocking
        read = blocking.xreadgroup

        async def lost_answer(*args: Any, **kwargs: Any) -> Any:
            # Redis delivers the message (it is now pending for this consumer), and the answer
            # is lost: what a read timing out just as Redis answers looks like.
            await read(*args, **kwargs)
            raise RedisTimeoutError("Timeout reading from the store")

        monkeypatch.setattr(blocking, "xreadgroup", lost_answer)
        with pytest.raises(StoreError):
            await store.receive("q", "lease-1", 4, 100)
        monkeypatch.setattr(blocking, "xreadgroup", read)
        delivered = await store.receive("q", "lease-1", 4, 100)
        assert [d.body for d in delivered] == ["call-1"]
        await store.ack("q", [d.message_id for d in delivered])
        assert await store.receive("q", "lease-1", 4, 1) == []
    finally:
        await store.close()
