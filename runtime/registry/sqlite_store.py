"""The embedded store: one SQLite file (WAL), owned by one registry process.

Every operation runs on one dedicated thread, so the event loop never waits on disk and a
decision never interleaves with another. Operations that arrive while the thread is busy are
run together as one batch: one transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``) in which each
operation is a savepoint of its own (read, decide, write; an operation that fails is rolled
back alone), and one hand-over back to the event loop. Under load, many calls' admissions,
claims and completions thus share a commit and a thread switch instead of paying for one each;
alone, an operation is its own batch. Commits survive the process being killed (WAL). Waiters
are woken in process: a SQLite registry is a single process; several registry processes share
state through Redis instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from agentgen.runtime.registry.store import (
    Change,
    Decide,
    Delivery,
    Operation,
    Signals,
    StoreError,
)

__all__ = ["SQLiteStore"]

T = TypeVar("T")
R = TypeVar("R")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    expires_at_ms INTEGER
);
CREATE TABLE IF NOT EXISTS queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    queue TEXT NOT NULL,
    body TEXT NOT NULL,
    delivered_to TEXT,
    delivered_at_ms INTEGER
);
CREATE INDEX IF NOT EXISTS queue_order ON queue (queue, id);
"""
#: Expired keys are deleted once every this many write batches.
_PURGE_EVERY = 1000
#: Most operations run in one transaction.
_MAX_BATCH = 256
_READ = "SELECT value FROM kv WHERE key = ? AND (expires_at_ms IS NULL OR expires_at_ms > ?)"


@dataclass
class _Job:
    """One operation for the store's thread, and how to hand its outcome back."""

    run: Callable[[sqlite3.Connection], Any]
    writes: bool
    future: asyncio.Future[Any]
    outcome: Any = None
    error: BaseException | None = field(default=None)


def _clock() -> int:
    return time.time_ns() // 1_000_000


def _read(db: sqlite3.Connection, key: str, now: int) -> str | None:
    row = db.execute(_READ, (key, now)).fetchone()
    return None if row is None else str(row[0])


def _apply(db: sqlite3.Connection, change: Change[Any], now: int) -> None:
    for key, write in change.writes.items():
        if write.value is None:
            db.execute("DELETE FROM kv WHERE key = ?", (key,))
        else:
            db.execute(
                "INSERT INTO kv (key, value, expires_at_ms) VALUES (?, ?, ?) ON CONFLICT (key) "
                "DO UPDATE SET value = excluded.value, expires_at_ms = excluded.expires_at_ms",
                (key, write.value, write.expires_at_ms),
            )
    for queue_name, body in change.enqueue:
        db.execute("INSERT INTO queue (queue, body) VALUES (?, ?)", (queue_name, body))
    if change.ack:
        db.executemany(
            "DELETE FROM queue WHERE queue = ? AND id = ?",
            [(queue_name, int(message_id)) for queue_name, message_id in change.ack],
        )


def _decide(db: sqlite3.Connection, keys: Sequence[str], decide: Decide[T]) -> Change[T]:
    now = _clock()
    values = {key: _read(db, key, now) for key in keys}
    change = decide(values, now)
    _apply(db, change, now)
    return change


class SQLiteStore:
    def __init__(self, path: str, *, redelivery_ms: int = 5_000) -> None:
        self.path = path
        self.description = "memory" if path == ":memory:" else f"sqlite:{path}"
        self.redelivery_ms = redelivery_ms
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._db: sqlite3.Connection | None = None
        self._signals = Signals()
        self._batches = 0

    # ------------------------------------------------------------------ the one thread

    async def _run(self, fn: Callable[[sqlite3.Connection], R], *, writes: bool) -> R:
        if self._thread is None or self._loop is None:
            raise StoreError(f"registry store {self.description} is not open")
        job = _Job(fn, writes, self._loop.create_future())
        self._jobs.put(job)
        return cast(R, await job.future)

    def _work(self, ready: asyncio.Future[None]) -> None:
        """The store's thread: open the database, then take what is queued, run it as one
        batch and hand it back, until closed."""
        loop = ready.get_loop()
        try:
            db = self._db = self._connect()
        except (sqlite3.Error, OSError) as exc:
            error = StoreError(f"cannot open registry store {self.description}: {exc}")
            loop.call_soon_threadsafe(_settle, ready, None, error)
            return
        loop.call_soon_threadsafe(_settle, ready, None, None)
        stop = False
        while not stop:
            first = self._jobs.get()
            if first is None:
                break
            jobs = [first]
            while len(jobs) < _MAX_BATCH:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    stop = True
                    break
                jobs.append(job)
            try:
                self._batch(jobs)
            except BaseException as exc:  # the connection itself failed: nothing ran
                for job in jobs:
                    job.outcome, job.error = None, self._wrap(exc)
            try:
                loop.call_soon_threadsafe(_deliver, jobs)
            except RuntimeError:  # the loop is closed: nobody waits any more
                break
        db.close()

    def _connect(self) -> sqlite3.Connection:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        # WAL with synchronous=NORMAL: a commit survives the process being killed; only an
        # operating-system crash may lose the last transactions.
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=5000")
        db.executescript(_SCHEMA)
        return db

    def _batch(self, jobs: list[_Job]) -> None:
        """Run ``jobs`` in one transaction, each writing one in a savepoint of its own."""
        db = self._db
        assert db is not None
        writes = any(job.writes for job in jobs)
        db.execute("BEGIN IMMEDIATE" if writes else "BEGIN")
        try:
            for job in jobs:
                if job.writes:
                    db.execute("SAVEPOINT job")
                try:
                    job.outcome = job.run(db)
                except Exception as exc:
                    job.error = self._wrap(exc)
                    if job.writes:
                        db.execute("ROLLBACK TO job")
                if job.writes:
                    db.execute("RELEASE job")
            if writes:
                self._batches += 1
                if self._batches % _PURGE_EVERY == 0:
                    db.execute(
                        "DELETE FROM kv WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?",
                        (_clock(),),
                    )
            db.execute("COMMIT")
        except BaseException:
            # Nothing of the batch was committed, so nothing that read it may be believed.
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise

    def _wrap(self, exc: BaseException) -> BaseException:
        if isinstance(exc, sqlite3.Error):
            return StoreError(f"registry store {self.description}: {exc}")
        return exc

    async def open(self) -> None:
        if self._thread is not None:
            return
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._jobs = queue.SimpleQueue()
        thread = threading.Thread(
            target=self._work, args=(ready,), name="agentgen-sqlite", daemon=True
        )
        thread.start()
        await ready
        self._thread, self._loop = thread, loop

    async def close(self) -> None:
        thread = self._thread
        if thread is None:
            return
        self._jobs.put(None)
        await asyncio.get_running_loop().run_in_executor(None, thread.join)
        self._thread, self._db, self._loop = None, None, None

    async def now_ms(self) -> int:
        return _clock()

    # ------------------------------------------------------------------ keys

    async def get(self, key: str) -> str | None:
        return (await self.get_many([key]))[0]

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        return (await self.snapshot(keys))[0]

    async def snapshot(self, keys: Sequence[str]) -> tuple[list[str | None], int]:
        def read(db: sqlite3.Connection) -> tuple[list[str | None], int]:
            now = _clock()
            return [_read(db, key, now) for key in keys], now

        return await self._run(read, writes=False)

    async def scan(self, prefix: str) -> list[tuple[str, str]]:
        def read(db: sqlite3.Connection) -> list[tuple[str, str]]:
            rows = db.execute(
                "SELECT key, value FROM kv WHERE key >= ? AND key < ? AND (expires_at_ms IS "
                "NULL OR expires_at_ms > ?) ORDER BY key",
                (prefix, prefix + "\U0010ffff", _clock()),
            ).fetchall()
            return [(str(k), str(v)) for k, v in rows]

        return await self._run(read, writes=False)

    async def transact(self, keys: Sequence[str], decide: Decide[T]) -> T:
        change = await self._run(lambda db: _decide(db, keys, decide), writes=True)
        self._announce(change)
        if change.error is not None:
            raise change.error
        return change.result

    async def transact_many(self, operations: Sequence[Operation]) -> list[Any]:
        def run(db: sqlite3.Connection) -> list[Change[Any] | Exception]:
            done: list[Change[Any] | Exception] = []
            for keys, decide in operations:
                db.execute("SAVEPOINT operation")
                try:
                    done.append(_decide(db, keys, decide))
                except Exception as exc:
                    db.execute("ROLLBACK TO operation")
                    done.append(exc)
                db.execute("RELEASE operation")
            return done

        outcomes: list[Any] = []
        for done in await self._run(run, writes=True):
            if isinstance(done, Exception):
                outcomes.append(self._wrap(done))
                continue
            self._announce(done)
            outcomes.append(done.error if done.error is not None else done.result)
        return outcomes

    def _announce(self, change: Change[Any]) -> None:
        for queue_name, _ in change.enqueue:
            self._signals.bump(f"queue:{queue_name}")
        for notify in change.notify:
            self._signals.bump(notify.channel)

    # ------------------------------------------------------------------ queues

    async def receive(self, queue: str, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        deadline = time.monotonic() + block_ms / 1000

        def take(db: sqlite3.Connection) -> list[Delivery]:
            now = _clock()
            rows = db.execute(
                "SELECT id, body FROM queue WHERE queue = ? AND (delivered_to IS NULL OR "
                "delivered_at_ms <= ?) ORDER BY id LIMIT ?",
                (queue, now - self.redelivery_ms, count),
            ).fetchall()
            if rows:
                db.executemany(
                    "UPDATE queue SET delivered_to = ?, delivered_at_ms = ? WHERE id = ?",
                    [(consumer, now, row[0]) for row in rows],
                )
            return [Delivery(str(row[0]), str(row[1])) for row in rows]

        name = f"queue:{queue}"
        while True:
            version = self._signals.version(name)
            delivered = await self._run(take, writes=True)
            remaining = deadline - time.monotonic()
            if delivered or remaining <= 0:
                return delivered
            # Redelivered messages appear without a wake-up: look again at least every second.
            await self._signals.wait(name, version, min(remaining, 1.0))

    async def ack(self, queue: str, message_ids: Sequence[str]) -> None:
        if not message_ids:
            return

        def delete(db: sqlite3.Connection) -> None:
            db.executemany(
                "DELETE FROM queue WHERE queue = ? AND id = ?",
                [(queue, int(m)) for m in message_ids],
            )

        await self._run(delete, writes=True)

    # ------------------------------------------------------------------ channels

    async def cursor(self, channel: str) -> str:
        return str(self._signals.version(channel))

    async def wait(self, channel: str, cursor: str, block_ms: int) -> str:
        await self._signals.wait(channel, int(cursor), block_ms / 1000)
        return str(self._signals.version(channel))


def _settle(future: asyncio.Future[Any], outcome: Any, error: BaseException | None) -> None:
    if future.done():  # the waiter was cancelled; its operation ran regardless
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(outcome)


def _deliver(jobs: list[_Job]) -> None:
    """On the event loop: hand each operation's outcome to whoever waits for it."""
    for job in jobs:
        _settle(job.future, job.outcome, job.error)
