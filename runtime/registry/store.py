"""The registry's storage seam: atomic read-decide-write over a few keys, queues and wake-ups.

The admission rules (:mod:`.admission`) are pure functions; a store's only job is to run one of
them atomically: read the keys, hand their values and the store's clock to the rule, write what
it decided, append to queues and wake waiters, all in one transaction (SQLite: ``BEGIN
IMMEDIATE``; Redis: ``WATCH``/``MULTI`` retried on conflict). Both stores pass the same test
suite. Several decisions can be taken in one trip to the store (:meth:`Store.transact_many`):
each is still atomic on its own keys, and one's refusal does not undo the others.

Queues carry the IDs of admitted calls to providers. A message stays in its queue until it is
acknowledged, or until it is of no use any more (its call expired: a queue nobody reads, such
as a withdrawn toolset's, does not keep them for good); a message delivered and not
acknowledged within the store's redelivery time is delivered again (to whoever asks next), so
a registry that dies between delivering and recording a claim loses nothing. Channels wake
consumers waiting for a call's result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

__all__ = [
    "ANSWER_TIMEOUT_S",
    "Change",
    "Delivery",
    "Notify",
    "Operation",
    "Signals",
    "Store",
    "StoreError",
    "Write",
    "unanswered",
]

T = TypeVar("T")


class StoreError(Exception):
    """The store cannot be reached or used; the message names it."""


#: Longest one operation of a store may go unanswered before the request waiting for it is
#: answered ``503 service_unavailable``. Operations take microseconds (SQLite) to a millisecond
#: (Redis); without a bound of their own, requests queued behind an unanswered one (a stalled
#: Redis, a SQLite file another process holds locked) each waited for those before them too.
ANSWER_TIMEOUT_S = 5.0


def unanswered(description: str, seconds: float) -> StoreError:
    """The refusal of a request whose store did not answer within ``seconds``."""
    return StoreError(
        f"registry store {description} did not answer within {seconds:g} s: check that it is "
        "running and reachable from the registry (requests succeed again as soon as it answers)"
    )


@dataclass(frozen=True)
class Write:
    #: The new value; None deletes the key.
    value: str | None
    #: Absolute expiry on the store's clock (milliseconds), if the key expires.
    expires_at_ms: int | None = None


@dataclass(frozen=True)
class Notify:
    channel: str
    #: When the channel may be forgotten (the store's clock, milliseconds).
    expires_at_ms: int


@dataclass(frozen=True)
class Change(Generic[T]):
    """What a decision writes, and what the transaction returns (or raises, after writing)."""

    result: T
    writes: Mapping[str, Write] = field(default_factory=dict)
    #: (queue, message body) pairs appended in the same transaction.
    enqueue: Sequence[tuple[str, str]] = ()
    #: When the messages appended are of no use any more (the store's clock, milliseconds):
    #: a store may drop them then, delivered or not (the calls they name have expired).
    enqueue_until_ms: int | None = None
    notify: Sequence[Notify] = ()
    #: (queue, message ID) pairs acknowledged in the same transaction.
    ack: Sequence[tuple[str, str]] = ()
    error: Exception | None = None


@dataclass(frozen=True)
class Delivery:
    message_id: str
    body: str


Decide = Callable[[Mapping[str, str | None], int], Change[T]]
#: One decision of a :meth:`Store.transact_many` batch: its keys and its rule.
Operation = tuple[Sequence[str], Decide[Any]]


class Store(Protocol):
    #: How the store was given (``sqlite:PATH``, ``memory``, ``redis://...``), for messages.
    description: str

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def now_ms(self) -> int:
        """The store's clock: every lease and deadline is measured on it."""
        ...

    async def get(self, key: str) -> str | None: ...

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """The keys' values, read together (one trip to the store)."""
        ...

    async def snapshot(self, keys: Sequence[str]) -> tuple[list[str | None], int]:
        """The keys' values and the store's clock, read together."""
        ...

    async def scan(self, prefix: str) -> list[tuple[str, str]]:
        """Every live key starting with ``prefix`` (only ``toolset:`` keys are indexed)."""
        ...

    async def transact(self, keys: Sequence[str], decide: Decide[T]) -> T:
        """Run ``decide`` on the keys' current values and the store's clock, and apply its
        change atomically; a decision whose inputs changed meanwhile is taken again."""
        ...

    async def transact_many(self, operations: Sequence[Operation]) -> list[Any]:
        """Run several decisions in one trip to the store, in order: each is atomic over its
        own keys and sees what the decisions before it wrote. Returns, per decision, its
        result or the exception it raised (or carried in ``Change.error``); a decision that
        raised wrote nothing, and never undoes the others."""
        ...

    async def receive(self, queue: str, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        """Up to ``count`` messages, waiting up to ``block_ms`` for the first."""
        ...

    async def ack(self, queue: str, message_ids: Sequence[str]) -> None: ...

    async def cursor(self, channel: str) -> str:
        """A position in ``channel``: :meth:`wait` returns once something comes after it. The
        channel is watched until :meth:`release` (or, never released, for a minute after its
        last use)."""
        ...

    async def release(self, channel: str) -> None:
        """The position :meth:`cursor` gave (and the ones :meth:`wait` gave after it) is not
        needed any more."""
        ...

    async def wait(self, channel: str, cursor: str, block_ms: int) -> str: ...


class Signals:
    """Version counters with waiters: in-process wake-ups, by channel name.

    A name's version is kept only while something may compare against it: a waiter, a
    position held (:meth:`hold`, until :meth:`release`), or a position taken (:meth:`version`)
    within the last :attr:`KEEP` seconds. A bump nobody could be waiting for is not recorded,
    so finished calls leave nothing behind (every result of a Redis cluster is announced to
    every registry process: kept for good, each process held an entry per call ever made). A
    position is taken before the change it waits for is made (a call's admission), so that
    change's bump is recorded. A position taken without being held is forgotten :attr:`KEEP`
    seconds after it was last used: it then at most wakes once for nothing, or sleeps until its
    waiter looks again (waiters re-check on their own every second)."""

    #: Seconds a position keeps its name's version (far longer than an admission takes).
    KEEP = 60.0

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        #: Version and until when it is kept (the clock's seconds), by name.
        self._versions: dict[str, tuple[int, float]] = {}
        self._events: dict[str, asyncio.Event] = {}
        self._waiters: dict[str, int] = {}
        #: Positions held (:meth:`hold`) and not released yet, by name.
        self._holders: dict[str, int] = {}
        self._pruned_at = clock()

    def names(self) -> set[str]:
        """The names held (a version, a waiter or a holder): what a leak would grow."""
        return self._versions.keys() | self._waiters.keys() | self._holders.keys()

    def hold(self, name: str) -> int:
        """A position in ``name`` (its version now), kept until :meth:`release`."""
        self._holders[name] = self._holders.get(name, 0) + 1
        return self.version(name)

    def release(self, name: str) -> None:
        """A position :meth:`hold` gave is not needed any more."""
        left = self._holders.get(name, 0) - 1
        if left > 0:
            self._holders[name] = left
            return
        self._holders.pop(name, None)
        if name not in self._waiters:
            self._versions.pop(name, None)

    def version(self, name: str) -> int:
        """The name's version now, kept for :attr:`KEEP` seconds from now."""
        now = self._clock()
        version = self._versions.get(name, (0, 0.0))[0]
        self._versions[name] = (version, now + self.KEEP)
        self._prune(now)
        return version

    def bump(self, name: str) -> None:
        now = self._clock()
        kept = self._versions.get(name)
        if kept is not None or name in self._waiters:
            version = 0 if kept is None else kept[0]
            until = now + self.KEEP if kept is None else max(kept[1], now)
            self._versions[name] = (version + 1, until)
        event = self._events.pop(name, None)
        if event is not None:
            event.set()
        self._prune(now)

    def _prune(self, now: float) -> None:
        """Forget the versions nobody can compare against any more (every quarter of
        :attr:`KEEP`, so that the cost is spread over many operations)."""
        if now - self._pruned_at < self.KEEP / 4:
            return
        self._pruned_at = now
        for name in [n for n, (_, until) in self._versions.items() if until <= now]:
            if name not in self._waiters and name not in self._holders:
                del self._versions[name]

    async def wait(self, name: str, version: int, timeout: float) -> None:
        if self.version(name) != version or timeout <= 0:
            return
        event = self._events.setdefault(name, asyncio.Event())
        self._waiters[name] = self._waiters.get(name, 0) + 1
        try:
            with suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout)
        finally:
            self._waiters[name] -= 1
            if not self._waiters[name]:
                del self._waiters[name]
                if self._events.get(name) is event and not event.is_set():
                    del self._events[name]
