"""The distributed store: registry state in Redis, shared by every registry process using it.

Records are plain keys (JSON values; call records expire at their absolute expiry with
``PXAT``). A decision reads its keys and the store's clock (Redis's ``TIME``) in one round trip,
is taken in Python, and is written by a Lua script that first checks, atomically, that every
key it read still holds what was read (by SHA-1); if one changed, the decision is taken again,
so concurrent registry processes never overwrite each other's decisions. Decisions that arrive
while others are on their way to Redis go together: one read and one script for all of them,
each still judged against its own keys; so do plain reads (one ``MGET`` with ``TIME``).

Provider queues are streams read through one consumer group, so each message goes to one
reader; messages delivered and not acknowledged are taken over with ``XAUTOCLAIM`` after the
redelivery time (looked for a few times per redelivery period), except those delivered to a
read whose answer never came, which that consumer's next read takes at once. A queue expires
with the last of its calls, or five minutes after it was last read if that is later (its
consumer group is made again by the next read); a consumer (a provider process's lease) that
has held no message for five minutes is forgotten. Each result
is also appended to its call's result stream (capped with ``MAXLEN``, expiring with the
call), and announced on one pub/sub channel that every registry process listens to, so a
consumer waiting on any process wakes at once (without holding a Redis connection per waiting
consumer; a missed announcement costs at most the waiter's periodic re-check).

Each read, decision and command gives Redis :attr:`RedisStore.answer_timeout_s` (5 s) from
when it is asked for, the wait behind the round trips before it included: a stalled Redis
answers every request ``503`` within that, rather than after every command queued before it. A
decision whose request was answered so (or gave up) before it went to Redis is dropped: only
what was already on its way may still take effect.

Works with Redis 7.0 (no 7.4+ commands such as ``HEXPIRE``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from agentgen.runtime.registry.store import (
    ANSWER_TIMEOUT_S,
    Change,
    Decide,
    Delivery,
    Operation,
    Signals,
    StoreError,
    unanswered,
)

__all__ = ["RedisStore"]

T = TypeVar("T")

_GROUP = "providers"
#: Most decisions one read and one commit script carry.
_BATCH = 256
#: Commits a batch of decisions: checks that every key read still holds what was read (given
#: as key, "1" and the SHA-1 of the value, or key, "0" and "" for a missing key), then runs the
#: commands (each given as its length, then its parts). Returns 0, writing nothing, if a key
#: changed.
_COMMIT = """
local n = tonumber(ARGV[1])
local i = 2
for _ = 1, n do
  local value = redis.call('GET', ARGV[i])
  if ARGV[i + 1] == '1' then
    if not value or redis.sha1hex(value) ~= ARGV[i + 2] then return 0 end
  elseif value then
    return 0
  end
  i = i + 3
end
while i <= #ARGV do
  local length = tonumber(ARGV[i])
  redis.call(unpack(ARGV, i + 1, i + length))
  i = i + length + 1
end
return 1
"""
_INDEXED = "toolset:"
_CHANNEL_MAXLEN = 512
#: Connections for ordinary commands (callers wait for a free one rather than fail).
_POOL = 64
#: Connections for blocking reads of provider queues (one per waiting claim).
_BLOCKING_POOL = 256
#: How long past the time a blocking read asked Redis to block for its answer may take before
#: Redis counts as unreachable. Blocking reads have no socket timeout of their own: a claim
#: waits up to its long poll (10 s by default, 60 s at most), longer than any fixed one.
_BLOCK_MARGIN_S = 5.0
#: Most interrupted readers remembered (a provider that never claims again is never forgotten
#: otherwise).
_INTERRUPTED_KEPT = 4096
#: How long a provider queue is kept after the last read of it, once none of its calls is
#: alive: far longer than a claim's longest wait (60 s), so a queue being read never expires
#: under its readers.
_QUEUE_IDLE_MS = 300_000
#: How often (seconds) a queue's consumers are looked over for ones to forget.
_FORGET_EVERY_S = 60.0
#: Deletes the consumers named (ARGV[2], ...) of group ARGV[1] of stream KEYS[1] that hold no
#: message: checked and deleted in one step, since a consumer's pending messages are dropped
#: with it (one delivered meanwhile could never be taken over again). Returns how many went.
_FORGET = """
local n = 0
for i = 2, #ARGV do
  if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[i]) == 0 then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[i])
    n = n + 1
  end
end
return n
"""


#: Removes from the index set KEYS[1] the names (ARGV[2], ...) whose key (ARGV[1] + name) does
#: not exist, checked and removed in one step: a key written meanwhile stays indexed.
_UNINDEX = """
local n = 0
for i = 2, #ARGV do
  if redis.call('EXISTS', ARGV[1] .. ARGV[i]) == 0 then
    n = n + redis.call('SREM', KEYS[1], ARGV[i])
  end
end
return n
"""


def _check_url(url: str, description: str) -> None:
    """Refuse what the client would fail on later (a port that is not one) or read silently
    as something else (a database that is not a number becomes database 0)."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - parsing it is the check
    except ValueError as exc:
        raise ValueError(f"registry store {description}: {exc}: use redis://HOST:PORT/DB") from None
    database = parts.path.strip("/")
    if parts.scheme != "unix" and database and not database.isdigit():
        raise ValueError(
            f"registry store {description}: database {database!r} is not a number: use "
            "redis://HOST:PORT/DB (DB: 0, 1, ...)"
        )


class RedisStore:
    def __init__(
        self,
        url: str,
        *,
        namespace: str = "agentgen:registry",
        redelivery_ms: int = 5_000,
        answer_timeout_s: float = ANSWER_TIMEOUT_S,
    ) -> None:
        self.url = url
        #: How long an operation (a command, or a decision or read waiting for its batch's
        #: round trip) may go unanswered before Redis counts as unreachable: ordinary commands
        #: take microseconds. A blocking read's bound is its own (see :meth:`_read_blocking`).
        self.answer_timeout_s = answer_timeout_s
        # Never print a password.
        scheme, _, rest = url.partition("://")
        self.description = f"{scheme}://{rest.rsplit('@', maxsplit=1)[-1]}"
        _check_url(url, self.description)
        self.namespace = namespace
        self.redelivery_ms = redelivery_ms
        self._redis: Any = None
        self._blocking: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._signals = Signals()
        self._groups: set[str] = set()
        self._pending: list[tuple[Operation, asyncio.Future[Any]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._reads: list[tuple[Sequence[str], asyncio.Future[tuple[list[str | None], int]]]] = []
        self._reader: asyncio.Task[None] | None = None
        self._script_sha = hashlib.sha1(_COMMIT.encode()).hexdigest()
        #: When each queue was last searched for messages to deliver again (monotonic s).
        self._reclaimed: dict[str, float] = {}
        #: When each queue's consumers were last looked over (monotonic s).
        self._forgotten: dict[str, float] = {}
        #: When each queue was last read by this process (monotonic s): a queue nobody here
        #: has read for :data:`_QUEUE_IDLE_MS` is dropped from the three maps above (see
        #: :meth:`_drop_idle_queues`).
        self._read_at: dict[str, float] = {}
        self._dropped_at = 0.0
        self._clock: Callable[[], float] = time.monotonic
        #: (stream, consumer) pairs whose last blocking read ended without its answer (timed
        #: out, failed, cancelled): Redis may have delivered messages to it that nobody saw.
        self._interrupted: set[tuple[str, str]] = set()
        #: Reads and decisions waiting for their batch's round trip, oldest first, with when
        #: they give up (the loop's clock), and the timer that fails the oldest then.
        self._waiting: deque[tuple[float, asyncio.Future[Any]]] = deque()
        self._watch: asyncio.TimerHandle | None = None

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

        def client(size: int, read_timeout: float | None) -> Any:
            pool = redis.BlockingConnectionPool.from_url(
                self.url,
                decode_responses=True,
                max_connections=size,
                timeout=30,
                socket_timeout=read_timeout,
                socket_connect_timeout=self.answer_timeout_s,
            )
            return redis.Redis(connection_pool=pool)

        # A blocking read's bound is its own block time (see receive): a socket timeout shorter
        # than a claim's wait failed every claim waiting 5 s or more on an idle queue.
        main = client(_POOL, self.answer_timeout_s)
        blocking = client(_BLOCKING_POOL, None)
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
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        self._waiting.clear()
        for task in (self._flusher, self._reader):
            if task is not None:
                with contextlib.suppress(Exception):
                    await task
        self._flusher = self._reader = None
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None
        if self._redis is not None:
            await self._redis.aclose()
            await self._blocking.aclose()
            self._redis = self._blocking = None

    async def _call(self, coro: Awaitable[T], *, bounded: bool = True) -> T:
        """Redis's answer; StoreError, naming the store, if it cannot be reached or (unless
        ``bounded`` is False) does not answer within :attr:`answer_timeout_s`."""
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        try:
            return await (self._answered(coro) if bounded else coro)
        except RedisTimeoutError:
            raise unanswered(self.description, self.answer_timeout_s) from None
        except (RedisConnectionError, OSError) as exc:
            raise StoreError(
                f"registry store {self.description} cannot be reached ({exc}): check that it is "
                "running and reachable from the registry (requests succeed again as soon as it "
                "answers)"
            ) from exc

    async def _answered(self, work: Awaitable[T]) -> T:
        """``work``'s outcome, or StoreError once it took :attr:`answer_timeout_s`: bounded
        from when it is asked for, the wait for a free connection included (while Redis is
        stalled, commands queue for connections)."""
        limit = asyncio.timeout(self.answer_timeout_s)
        try:
            async with limit:
                return await work
        except TimeoutError:
            if not limit.expired():
                raise
            raise unanswered(self.description, self.answer_timeout_s) from None

    async def now_ms(self) -> int:
        seconds, micros = await self._call(self._r.time())
        return int(seconds) * 1000 + int(micros) // 1000

    async def get(self, key: str) -> str | None:
        return (await self.get_many([key]))[0]

    async def scan(self, prefix: str) -> list[tuple[str, str]]:
        if not prefix.startswith(_INDEXED):
            raise StoreError(f"only {_INDEXED!r} keys are indexed, not {prefix!r}")
        names = sorted(await self._call(self._r.smembers(self._k("index"))))
        keys = [n for n in names if n.startswith(prefix)]
        if not keys:
            return []
        values = await self._call(self._r.mget([self._k(k) for k in keys]))
        gone = [k for k, v in zip(keys, values, strict=True) if v is None]
        if gone:
            # Catalog entries never expire and the registry never deletes one (a withdrawn
            # toolset's is kept: its tokens are never admitted again), so an indexed key that
            # is gone was deleted by hand: its name is dropped, or every scan read it again.
            await self._call(self._r.eval(_UNINDEX, 1, self._k("index"), self._k(""), *gone))
        return [(k, v) for k, v in zip(keys, values, strict=True) if v is not None]

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        return (await self.snapshot(keys))[0]

    async def snapshot(self, keys: Sequence[str]) -> tuple[list[str | None], int]:
        """Reads that arrive while others are on their way share the next round trip: one
        ``MGET`` of all their keys with ``TIME``."""
        done: asyncio.Future[tuple[list[str | None], int]]
        done = asyncio.get_running_loop().create_future()
        self._reads.append((keys, done))
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._read_pending())
        self._bound(done)
        return await done

    async def _read_pending(self) -> None:
        while self._reads:
            batch, self._reads = self._reads, []
            keys = list(dict.fromkeys(key for wanted, _ in batch for key in wanted))
            try:
                async with self._r.pipeline(transaction=False) as pipe:
                    pipe.mget([self._k(k) for k in keys])
                    pipe.time()
                    read, (seconds, micros) = await self._call(pipe.execute(), bounded=False)
            except Exception as exc:  # every read of the batch failed alike
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
                continue
            values = dict(zip(keys, read, strict=True))
            now = int(seconds) * 1000 + int(micros) // 1000
            for wanted, done in batch:
                if not done.done():
                    done.set_result(([values[key] for key in wanted], now))

    async def transact(self, keys: Sequence[str], decide: Decide[T]) -> T:
        (outcome,) = await self._submit([(keys, decide)])
        if isinstance(outcome, Exception):
            raise outcome
        return cast(T, outcome)

    async def transact_many(self, operations: Sequence[Operation]) -> list[Any]:
        return await self._submit(operations)

    async def _submit(self, operations: Sequence[Operation]) -> list[Any]:
        """Queue decisions for the next batch; returns each one's result or exception."""
        loop = asyncio.get_running_loop()
        waiting = [(operation, loop.create_future()) for operation in operations]
        self._pending.extend(waiting)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        for _, done in waiting:
            self._bound(done)
        try:
            return [await done for _, done in waiting]
        except BaseException:
            # One failed (its bound passed: they all do together) or its waiter was cancelled:
            # the others are not waited for. Each is cancelled, or its failure marked seen,
            # else every one of them is logged as "Future exception was never retrieved"
            # (a stalled Redis: one traceback per completion of every batch refused).
            for _, done in waiting:
                if not done.done():
                    done.cancel()
                elif not done.cancelled():
                    done.exception()
            raise

    def _bound(self, done: asyncio.Future[Any]) -> None:
        """Fail ``done`` with StoreError unless it is settled within :attr:`answer_timeout_s`.

        A read or decision waits for its batch's round trip, and that batch for the one before
        it: while Redis is stalled each command of the line has its socket's timeout, and the
        requests queued behind them waited for all of them (300 requests: up to 16 s). Bounded
        from when it is asked for, with one timer for every waiting operation (a timer each,
        armed and cancelled, cost about 17 us per operation: a call's round trip makes a dozen
        of them)."""
        loop = done.get_loop()
        waiting = self._waiting
        while waiting and waiting[0][1].done():
            waiting.popleft()
        waiting.append((loop.time() + self.answer_timeout_s, done))
        if self._watch is None:
            self._watch = loop.call_at(waiting[0][0], self._expire, loop)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        """Fail the operations whose time is up; watch the next one."""
        self._watch = None
        now, waiting = loop.time(), self._waiting
        while waiting and (waiting[0][1].done() or waiting[0][0] <= now):
            _, done = waiting.popleft()
            if not done.done():
                done.set_exception(unanswered(self.description, self.answer_timeout_s))
        if waiting:
            self._watch = loop.call_at(waiting[0][0], self._expire, loop)

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[:_BATCH], self._pending[_BATCH:]
            # A decision whose waiter gave up (its bound passed, answered 503; or cancelled) is
            # never taken: while Redis stalled, those queued behind the batch on its way were
            # all applied once it answered, after their requests had been refused (an
            # admission the consumer was told failed, run later; a claim for nobody).
            batch = [(op, done) for op, done in batch if not done.done()]
            if not batch:
                continue
            try:
                # Unbounded here: each of its commands has the socket's timeout, and every
                # decision its own bound (see _bound).
                outcomes: list[Any] = await self._call(self._decide_all(batch), bounded=False)
            except Exception as exc:  # the store failed: nothing of the batch is known
                outcomes = [exc] * len(batch)
            for (_, done), outcome in zip(batch, outcomes, strict=True):
                if not done.done():
                    done.set_result(outcome)

    async def _decide_all(
        self, operations: Sequence[tuple[Operation, asyncio.Future[Any]]]
    ) -> list[Any]:
        """Take every decision on one read of all their keys and write what they decided with
        one script, which checks first that none of the keys changed since the read (else
        everything is read and decided again). Each decision sees what the ones before it
        wrote; one that raises writes nothing; one whose waiter gave up while the keys were
        read is not taken (its outcome: None, which nobody reads)."""
        keys = list(dict.fromkeys(key for (op_keys, _), _ in operations for key in op_keys))
        while True:
            read, now = await self.snapshot(keys)
            values = dict(zip(keys, read, strict=True))
            checks: list[str] = [str(len(keys))]
            for key, value in values.items():
                digest = "" if value is None else hashlib.sha1(value.encode()).hexdigest()
                checks += [self._k(key), "0" if value is None else "1", digest]
            outcomes: list[Any] = []
            commands: list[str] = []
            for (op_keys, decide), done in operations:
                if done.done():
                    outcomes.append(None)
                    continue
                try:
                    change = decide({k: values[k] for k in op_keys}, now)
                except Exception as exc:
                    outcomes.append(exc)
                    continue
                for key, write in change.writes.items():
                    values[key] = write.value
                commands += self._commands(change)
                outcomes.append(change.error if change.error is not None else change.result)
            if all(done.done() for _, done in operations):
                return outcomes  # every waiter gave up while the keys were read
            if await self._commit(checks + commands):
                return outcomes

    async def _commit(self, args: list[str]) -> bool:
        from redis.exceptions import NoScriptError, ResponseError

        try:
            try:
                done = await self._r.evalsha(self._script_sha, 0, *args)
            except NoScriptError:
                self._script_sha = await self._r.script_load(_COMMIT)
                done = await self._r.evalsha(self._script_sha, 0, *args)
        except ResponseError as exc:
            raise StoreError(f"registry store {self.description}: {exc}") from exc
        return bool(int(done))

    def _commands(self, change: Change[Any]) -> list[str]:
        """A change as the commands the commit script runs (each: its length, then it)."""
        out: list[list[str]] = []
        for key, write in change.writes.items():
            if write.value is None:
                out.append(["DEL", self._k(key)])
            elif write.expires_at_ms is not None:
                out.append(["SET", self._k(key), write.value, "PXAT", str(write.expires_at_ms)])
            else:
                out.append(["SET", self._k(key), write.value])
            if key.startswith(_INDEXED):
                out.append(["SADD", self._k("index"), key])
        for queue, body in change.enqueue:
            out.append(["XADD", self._k(f"queue:{queue}"), "*", "b", body])
        if change.enqueue_until_ms is not None:
            # A queue expires with the last of its calls: one nobody reads any more (a
            # withdrawn toolset's) does not keep its messages for good. NX sets the expiry of a
            # queue without one, GT only ever extends it (Redis 7.0 has both).
            until = str(change.enqueue_until_ms)
            for stream in dict.fromkeys(self._k(f"queue:{queue}") for queue, _ in change.enqueue):
                out += [["PEXPIREAT", stream, until, "NX"], ["PEXPIREAT", stream, until, "GT"]]
        for queue, message_id in change.ack:
            stream = self._k(f"queue:{queue}")
            out += [["XACK", stream, _GROUP, message_id], ["XDEL", stream, message_id]]
        for notify in change.notify:
            channel = self._k(notify.channel)
            out += [
                ["XADD", channel, "MAXLEN", "~", str(_CHANNEL_MAXLEN), "*", "e", "1"],
                ["PEXPIREAT", channel, str(notify.expires_at_ms)],
                ["PUBLISH", self._k("wake"), notify.channel],
            ]
        return [part for command in out for part in (str(len(command)), *command)]

    async def _ensure_group(self, stream: str) -> None:
        if stream in self._groups:
            return
        from redis.exceptions import ResponseError

        # The queue made for the group expires as one read does (see _receive), in the same
        # transaction: made by a claim, with no call ever queued (or after its calls expired),
        # it was kept for good once its toolset was withdrawn and nobody read it again.
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.xgroup_create(stream, _GROUP, id="0", mkstream=True)
            pipe.pexpire(stream, _QUEUE_IDLE_MS, nx=True)
            made, _ = await self._call(pipe.execute(raise_on_error=False))
        if isinstance(made, ResponseError) and "BUSYGROUP" not in str(made):
            raise StoreError(f"registry store {self.description}: {made}") from made
        self._groups.add(stream)

    async def receive(self, queue: str, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        from redis.exceptions import ResponseError

        stream = self._k(f"queue:{queue}")
        deadline = time.monotonic() + block_ms / 1000
        try:
            return await self._receive(stream, consumer, count, block_ms)
        except ResponseError as exc:
            # The queue expired with its last call (its consumer group with it), before or
            # while this read waited: made again, and read again for the rest of the wait.
            if not str(exc).startswith(("NOGROUP", "UNBLOCKED")):
                raise StoreError(f"registry store {self.description}: {exc}") from exc
            self._groups.discard(stream)
            self._reclaimed.pop(stream, None)  # the queue made again is kept from this read
            left = int((deadline - time.monotonic()) * 1000)
            return await self._receive(stream, consumer, count, max(1, left))

    def _drop_idle_queues(self, now: float) -> None:
        """Forget what this process knows of the queues it has not read for
        :data:`_QUEUE_IDLE_MS` (looked for every :data:`_FORGET_EVERY_S`): each toolset's queue
        ever read kept an entry in each map for good, a withdrawn toolset's too, long after the
        queue itself expired. What is forgotten is only worth something to a queue being read:
        its consumer group is made again by the next read (an existing one is kept), and its
        messages are looked over by that read as by a first."""
        if now - self._dropped_at < _FORGET_EVERY_S:
            return
        self._dropped_at = now
        idle = _QUEUE_IDLE_MS / 1000
        for stream in [s for s, read in self._read_at.items() if now - read >= idle]:
            del self._read_at[stream]
            self._groups.discard(stream)
            self._reclaimed.pop(stream, None)
            self._forgotten.pop(stream, None)

    async def _receive(
        self, stream: str, consumer: str, count: int, block_ms: int
    ) -> list[Delivery]:
        now = self._clock()
        self._drop_idle_queues(now)
        self._read_at[stream] = now
        await self._ensure_group(stream)
        # Messages delivered to this consumer by a read whose answer never arrived (Redis
        # delivered them just as the read was given up) come first, at once: otherwise they
        # would wait for the redelivery time, their calls unclaimed meanwhile.
        messages: list[Any] = []
        if (stream, consumer) in self._interrupted:
            read = await self._call(
                self._r.xreadgroup(_GROUP, consumer, {stream: "0"}, count=count)
            )
            self._interrupted.discard((stream, consumer))
            messages = _entries(read)
        # Messages another reader took and never acknowledged come next. They are looked for
        # a few times per redelivery period, not on every read: a read costs one round trip.
        # The same round trip keeps the queue for _QUEUE_IDLE_MS more (never shortening the
        # life its calls gave it): a queue expires with the last of its calls, or once nobody
        # has read it for that long, whichever is later.
        if not messages and now - self._reclaimed.get(stream, 0.0) >= self.redelivery_ms / 4000:
            self._reclaimed[stream] = now
            async with self._r.pipeline(transaction=False) as pipe:
                pipe.xautoclaim(stream, _GROUP, consumer, self.redelivery_ms, "0-0", count=count)
                pipe.pexpire(stream, _QUEUE_IDLE_MS, nx=True)
                pipe.pexpire(stream, _QUEUE_IDLE_MS, gt=True)
                claimed, _, _ = await self._call(pipe.execute())
            messages = list(claimed[1]) if claimed else []
            if now - self._forgotten.get(stream, 0.0) >= _FORGET_EVERY_S:
                self._forgotten[stream] = now
                await self._forget_consumers(stream)
        if not messages:
            messages = await self._read_blocking(stream, consumer, count, max(1, block_ms))
        return [
            Delivery(str(message_id), str(fields["b"]))
            for message_id, fields in messages
            if fields and "b" in fields
        ]

    async def _forget_consumers(self, stream: str) -> None:
        """Delete the queue's consumers that hold no message and have not been served for
        :data:`_QUEUE_IDLE_MS`. A consumer is a provider's lease (one per process started),
        and Redis keeps each one in the group for as long as the queue lives: a toolset whose
        calls never stop kept every provider process it ever had. A live provider forgotten
        so is made a consumer again by its next read that delivers."""
        from redis.exceptions import ResponseError

        consumers = await self._call(self._r.xinfo_consumers(stream, _GROUP))
        idle = [
            str(consumer["name"])
            for consumer in consumers
            if int(consumer["pending"]) == 0 and int(consumer["idle"]) >= _QUEUE_IDLE_MS
        ]
        if idle:
            with contextlib.suppress(ResponseError):  # the queue expired meanwhile
                await self._call(self._r.eval(_FORGET, 1, stream, _GROUP, *idle))

    async def _read_blocking(
        self, stream: str, consumer: str, count: int, block_ms: int
    ) -> list[Any]:
        """New messages, waiting up to ``block_ms`` for the first; Redis that has not answered
        :data:`_BLOCK_MARGIN_S` after that is unreachable (StoreError)."""
        try:
            async with asyncio.timeout(block_ms / 1000 + _BLOCK_MARGIN_S):
                read = await self._call(
                    self._blocking.xreadgroup(
                        _GROUP, consumer, {stream: ">"}, count=count, block=block_ms
                    ),
                    bounded=False,
                )
        except BaseException as exc:
            # Timed out, failed or cancelled: Redis may have delivered messages meanwhile.
            if len(self._interrupted) >= _INTERRUPTED_KEPT:
                self._interrupted.clear()  # theirs are delivered again after the redelivery time
            self._interrupted.add((stream, consumer))
            if isinstance(exc, TimeoutError):
                raise StoreError(
                    f"registry store {self.description}: a read of provider queue {stream} "
                    f"blocking for {block_ms} ms was not answered {_BLOCK_MARGIN_S:g} s after "
                    "it should have been: check that it is running and reachable from the "
                    "registry (requests succeed again as soon as it answers)"
                ) from None
            raise
        return _entries(read)

    async def ack(self, queue: str, message_ids: Sequence[str]) -> None:
        if not message_ids:
            return
        stream = self._k(f"queue:{queue}")
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.xack(stream, _GROUP, *message_ids)
            pipe.xdel(stream, *message_ids)
            await self._call(pipe.execute())

    async def cursor(self, channel: str) -> str:
        return str(self._signals.hold(channel))

    async def release(self, channel: str) -> None:
        self._signals.release(channel)

    async def wait(self, channel: str, cursor: str, block_ms: int) -> str:
        await self._signals.wait(channel, int(cursor), block_ms / 1000)
        return str(self._signals.version(channel))


def _entries(read: Any) -> list[Any]:
    """The (message ID, fields) entries of an ``XREADGROUP`` answer, of every stream read."""
    return [entry for _, entries in read or [] for entry in entries]
