"""The distributed store: registry state in Redis, shared by every registry process using it.

Records are plain keys (JSON values; call records expire at their absolute expiry with
``PXAT``); decisions run under ``WATCH``/``MULTI`` and are taken again when a watched key
changed, so concurrent registry processes never overwrite each other's decisions. The store's
clock is Redis's ``TIME``. Provider queues are streams read through one consumer group, so
each message goes to one reader; messages delivered and not acknowledged are taken over with
``XAUTOCLAIM`` after the redelivery time. Each result is also appended to its call's result
stream (capped with ``MAXLEN``, expiring with the call), and announced on one pub/sub channel
that every registry process listens to, so a consumer waiting on any process wakes at once
(without holding a Redis connection per waiting consumer; a missed announcement costs at most
the waiter's periodic re-check).

Works with Redis 7.0 (no 7.4+ commands such as ``HEXPIRE``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any, TypeVar, cast

from agentgen.runtime.registry.store import (
    Change,
    Decide,
    Delivery,
    Operation,
    Signals,
    StoreError,
)

__all__ = ["RedisStore"]

T = TypeVar("T")

_GROUP = "providers"
_INDEXED = "toolset:"
_CHANNEL_MAXLEN = 512
#: Connections for ordinary commands (callers wait for a free one rather than fail).
_POOL = 64
#: Connections for blocking reads of provider queues (one per waiting claim).
_BLOCKING_POOL = 256


class RedisStore:
    def __init__(
        self, url: str, *, namespace: str = "agentgen:registry", redelivery_ms: int = 5_000
    ) -> None:
        self.url = url
        # Never print a password.
        self.description = url.rsplit("@", maxsplit=1)[-1] if "@" in url else url
        self.namespace = namespace
        self.redelivery_ms = redelivery_ms
        self._redis: Any = None
        self._blocking: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._signals = Signals()
        self._groups: set[str] = set()

    def _k(self, key: str) -> str:
        return f"{self.namespace}:{key}"

    @property
    def _r(self) -> Any:
        if self._redis is None:
            raise StoreError(f"registry store {self.description} is not open")
        return self._redis

    async def open(self) -> None:
        if self._redis is not None:
            return
        import redis.asyncio as redis

        def client(size: int) -> Any:
            pool = redis.BlockingConnectionPool.from_url(
                self.url, decode_responses=True, max_connections=size, timeout=30
            )
            return redis.Redis(connection_pool=pool)

        main, blocking = client(_POOL), client(_BLOCKING_POOL)
        try:
            await main.ping()
        except Exception as exc:
            await main.aclose()
            await blocking.aclose()
            raise StoreError(f"cannot reach registry store {self.description}: {exc}") from exc
        self._redis, self._blocking = main, blocking
        ready = asyncio.Event()
        self._listener = asyncio.create_task(self._listen(ready))
        await ready.wait()

    async def _listen(self, ready: asyncio.Event) -> None:
        """Relay result announcements to this process's waiters, reconnecting as needed."""
        while True:
            try:
                async with self._r.pubsub() as pubsub:
                    await pubsub.subscribe(self._k("wake"))
                    ready.set()
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            self._signals.bump(str(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception:
                ready.set()
                await asyncio.sleep(0.5)  # waiters re-check on their own meanwhile

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None
        if self._redis is not None:
            await self._redis.aclose()
            await self._blocking.aclose()
            self._redis = self._blocking = None

    async def _call(self, coro: Any) -> Any:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        try:
            return await coro
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise StoreError(f"registry store {self.description}: {exc}") from exc

    async def now_ms(self) -> int:
        seconds, micros = await self._call(self._r.time())
        return int(seconds) * 1000 + int(micros) // 1000

    async def get(self, key: str) -> str | None:
        value: str | None = await self._call(self._r.get(self._k(key)))
        return value

    async def scan(self, prefix: str) -> list[tuple[str, str]]:
        if not prefix.startswith(_INDEXED):
            raise StoreError(f"only {_INDEXED!r} keys are indexed, not {prefix!r}")
        names = sorted(await self._call(self._r.smembers(self._k("index"))))
        keys = [n for n in names if n.startswith(prefix)]
        if not keys:
            return []
        values = await self._call(self._r.mget([self._k(k) for k in keys]))
        return [(k, v) for k, v in zip(keys, values, strict=True) if v is not None]

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        values: list[str | None] = await self._call(self._r.mget([self._k(k) for k in keys]))
        return values

    async def transact(self, keys: Sequence[str], decide: Decide[T]) -> T:
        (outcome,) = await self._decide_all([(keys, decide)], raise_errors=True)
        return cast(T, outcome)

    async def transact_many(self, operations: Sequence[Operation]) -> list[Any]:
        return await self._decide_all(operations, raise_errors=False)

    async def _decide_all(
        self, operations: Sequence[Operation], *, raise_errors: bool
    ) -> list[Any]:
        """Take every decision on one read of all their keys, and write what they decided in
        one ``MULTI``; if another registry process changed one of the keys meanwhile, take
        them all again. Each decision sees what the ones before it wrote."""
        from redis.exceptions import WatchError

        keys = list(dict.fromkeys(key for op_keys, _ in operations for key in op_keys))
        full = [self._k(k) for k in keys]

        async def attempt() -> list[Change[Any] | Exception]:
            async with self._r.pipeline(transaction=True) as pipe:
                while True:
                    try:
                        await pipe.watch(*full)
                        values = dict(zip(keys, await pipe.mget(full), strict=True))
                        seconds, micros = await pipe.time()
                        now = int(seconds) * 1000 + int(micros) // 1000
                        done: list[Change[Any] | Exception] = []
                        changes: list[Change[Any]] = []
                        for op_keys, decide in operations:
                            try:
                                change = decide({k: values[k] for k in op_keys}, now)
                            except Exception as exc:
                                if raise_errors:
                                    raise
                                done.append(exc)
                                continue
                            for key, write in change.writes.items():
                                values[key] = write.value
                            done.append(change)
                            changes.append(change)
                        pipe.multi()
                        for change in changes:
                            self._queue_writes(pipe, change)
                        await pipe.execute()
                        return done
                    except WatchError:
                        continue

        outcomes: list[Any] = []
        for done in await self._call(attempt()):
            if isinstance(done, Exception):
                outcomes.append(done)
            elif done.error is not None:
                if raise_errors:
                    raise done.error
                outcomes.append(done.error)
            else:
                outcomes.append(done.result)
        return outcomes

    def _queue_writes(self, pipe: Any, change: Change[Any]) -> None:
        for key, write in change.writes.items():
            if write.value is None:
                pipe.delete(self._k(key))
            elif write.expires_at_ms is not None:
                pipe.set(self._k(key), write.value, pxat=write.expires_at_ms)
            else:
                pipe.set(self._k(key), write.value)
            if key.startswith(_INDEXED):
                pipe.sadd(self._k("index"), key)
        for queue, body in change.enqueue:
            pipe.xadd(self._k(f"queue:{queue}"), {"b": body})
        for queue, message_id in change.ack:
            stream = self._k(f"queue:{queue}")
            pipe.xack(stream, _GROUP, message_id)
            pipe.xdel(stream, message_id)
        for notify in change.notify:
            channel = self._k(notify.channel)
            pipe.xadd(channel, {"e": "1"}, maxlen=_CHANNEL_MAXLEN, approximate=True)
            pipe.pexpireat(channel, notify.expires_at_ms)
            pipe.publish(self._k("wake"), notify.channel)

    async def _ensure_group(self, stream: str) -> None:
        if stream in self._groups:
            return
        from redis.exceptions import ResponseError

        try:
            await self._call(self._r.xgroup_create(stream, _GROUP, id="0", mkstream=True))
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise StoreError(f"registry store {self.description}: {exc}") from exc
        self._groups.add(stream)

    async def receive(self, queue: str, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        stream = self._k(f"queue:{queue}")
        await self._ensure_group(stream)
        # Messages another reader took and never acknowledged come first.
        claimed = await self._call(
            self._r.xautoclaim(stream, _GROUP, consumer, self.redelivery_ms, "0-0", count=count)
        )
        messages = list(claimed[1]) if claimed else []
        if not messages:
            read = await self._call(
                self._blocking.xreadgroup(
                    _GROUP, consumer, {stream: ">"}, count=count, block=max(1, block_ms)
                )
            )
            for _, entries in read or []:
                messages.extend(entries)
        return [
            Delivery(str(message_id), str(fields["b"]))
            for message_id, fields in messages
            if fields and "b" in fields
        ]

    async def ack(self, queue: str, message_ids: Sequence[str]) -> None:
        if not message_ids:
            return
        stream = self._k(f"queue:{queue}")
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.xack(stream, _GROUP, *message_ids)
            pipe.xdel(stream, *message_ids)
            await self._call(pipe.execute())

    async def cursor(self, channel: str) -> str:
        return str(self._signals.version(channel))

    async def wait(self, channel: str, cursor: str, block_ms: int) -> str:
        await self._signals.wait(channel, int(cursor), block_ms / 1000)
        return str(self._signals.version(channel))
