"""The registry's storage seam: atomic read-decide-write over a few keys, queues and wake-ups.

The admission rules (:mod:`.admission`) are pure functions; a store's only job is to run one of
them atomically: read the keys, hand their values and the store's clock to the rule, write what
it decided, append to queues and wake waiters, all in one transaction (SQLite: ``BEGIN
IMMEDIATE``; Redis: ``WATCH``/``MULTI`` retried on conflict). Both stores pass the same test
suite. Several decisions can be taken in one trip to the store (:meth:`Store.transact_many`):
each is still atomic on its own keys, and one's refusal does not undo the others.

Queues carry the IDs of admitted calls to providers. A message stays in its queue until it is
acknowledged; a message delivered and not acknowledged within the store's redelivery time is
delivered again (to whoever asks next), so a registry that dies between delivering and
recording a claim loses nothing. Channels wake consumers waiting for a call's result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

__all__ = [
    "Change",
    "Delivery",
    "Notify",
    "Operation",
    "Signals",
    "Store",
    "StoreError",
    "Write",
]

T = TypeVar("T")


class StoreError(Exception):
    """The store cannot be reached or used; the message names it."""


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
        """A position in ``channel``: :meth:`wait` returns once something comes after it."""
        ...

    async def wait(self, channel: str, cursor: str, block_ms: int) -> str: ...


class Signals:
    """Version counters with waiters: in-process wake-ups, by channel name."""

    def __init__(self) -> None:
        self._versions: dict[str, int] = {}
        self._events: dict[str, asyncio.Event] = {}
        self._waiters: dict[str, int] = {}

    def version(self, name: str) -> int:
        return self._versions.get(name, 0)

    def bump(self, name: str) -> None:
        self._versions[name] = self._versions.get(name, 0) + 1
        event = self._events.pop(name, None)
        if event is not None:
            event.set()

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
        if name.startswith("result:") and not self._waiters.get(name):
            # Forget the versions of results nobody waits for any more (a later waiter at most
            # wakes once for nothing and reads the record again).
            self._versions.pop(name, None)
