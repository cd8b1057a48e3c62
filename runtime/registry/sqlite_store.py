"""The embedded store: one SQLite file (WAL), owned by one registry process.

Every transaction runs whole on one dedicated thread (``BEGIN IMMEDIATE``, read, decide, write,
commit), so a decision never interleaves with another and the event loop never waits on disk.
Commits survive the process being killed (WAL). Waiters are woken in process: a SQLite
registry is a single process; several registry processes share state through Redis instead.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from agentgen.runtime.registry.store import Change, Decide, Delivery, Signals, StoreError

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
_PURGE_EVERY = 1000


class SQLiteStore:
    def __init__(self, path: str, *, redelivery_ms: int = 5_000) -> None:
        self.path = path
        self.description = "memory" if path == ":memory:" else f"sqlite:{path}"
        self.redelivery_ms = redelivery_ms
        self._executor: ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None
        self._signals = Signals()
        self._commits = 0

    # ------------------------------------------------------------------ the one thread

    async def _run(self, fn: Callable[[sqlite3.Connection], R]) -> R:
        if self._executor is None or self._db is None:
            raise StoreError(f"registry store {self.description} is not open")
        db = self._db
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, fn, db)
        except sqlite3.Error as exc:
            raise StoreError(f"registry store {self.description}: {exc}") from exc

    async def open(self) -> None:
        if self._executor is not None:
            return
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentgen-sqlite")

        def connect() -> sqlite3.Connection:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            # WAL with synchronous=NORMAL: a commit survives the process being killed; only
            # an operating-system crash may lose the last transactions.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=5000")
            db.executescript(_SCHEMA)
            return db

        loop = asyncio.get_running_loop()
        try:
            self._db = await loop.run_in_executor(self._executor, connect)
        except sqlite3.Error as exc:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise StoreError(f"cannot open registry store {self.description}: {exc}") from exc

    async def close(self) -> None:
        if self._executor is None:
            return
        if self._db is not None:
            db = self._db
            await asyncio.get_running_loop().run_in_executor(self._executor, db.close)
        self._executor.shutdown(wait=True)
        self._executor, self._db = None, None

    @staticmethod
    def _clock() -> int:
        return time.time_ns() // 1_000_000

    async def now_ms(self) -> int:
        return self._clock()

    # ------------------------------------------------------------------ keys

    async def get(self, key: str) -> str | None:
        now = self._clock()

        def read(db: sqlite3.Connection) -> str | None:
            row = db.execute(
                "SELECT value FROM kv WHERE key = ? AND (expires_at_ms IS NULL OR "
                "expires_at_ms > ?)",
                (key, now),
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._run(read)

    async def scan(self, prefix: str) -> list[tuple[str, str]]:
        now = self._clock()

        def read(db: sqlite3.Connection) -> list[tuple[str, str]]:
            rows = db.execute(
                "SELECT key, value FROM kv WHERE key >= ? AND key < ? AND (expires_at_ms IS "
                "NULL OR expires_at_ms > ?) ORDER BY key",
                (prefix, prefix + "\U0010ffff", now),
            ).fetchall()
            return [(str(k), str(v)) for k, v in rows]

        return await self._run(read)

    async def transact(self, keys: Sequence[str], decide: Decide[T]) -> T:
        purge = False
        self._commits += 1
        if self._commits % _PURGE_EVERY == 0:
            purge = True

        def run(db: sqlite3.Connection) -> Change[T]:
            db.execute("BEGIN IMMEDIATE")
            try:
                now = self._clock()
                values: dict[str, str | None] = {}
                for key in keys:
                    row = db.execute(
                        "SELECT value FROM kv WHERE key = ? AND (expires_at_ms IS NULL OR "
                        "expires_at_ms > ?)",
                        (key, now),
                    ).fetchone()
                    values[key] = None if row is None else str(row[0])
                change = decide(values, now)
                for key, write in change.writes.items():
                    if write.value is None:
                        db.execute("DELETE FROM kv WHERE key = ?", (key,))
                    else:
                        db.execute(
                            "INSERT INTO kv (key, value, expires_at_ms) VALUES (?, ?, ?) ON "
                            "CONFLICT (key) DO UPDATE SET value = excluded.value, "
                            "expires_at_ms = excluded.expires_at_ms",
                            (key, write.value, write.expires_at_ms),
                        )
                for queue, body in change.enqueue:
                    db.execute("INSERT INTO queue (queue, body) VALUES (?, ?)", (queue, body))
                if purge:
                    db.execute(
                        "DELETE FROM kv WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?",
                        (now,),
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return change

        change = await self._run(run)
        for queue, _ in change.enqueue:
            self._signals.bump(f"queue:{queue}")
        for notify in change.notify:
            self._signals.bump(notify.channel)
        if change.error is not None:
            raise change.error
        return change.result

    # ------------------------------------------------------------------ queues

    async def receive(self, queue: str, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        deadline = time.monotonic() + block_ms / 1000

        def take(db: sqlite3.Connection) -> list[Delivery]:
            now = self._clock()
            db.execute("BEGIN IMMEDIATE")
            try:
                rows = db.execute(
                    "SELECT id, body FROM queue WHERE queue = ? AND (delivered_to IS NULL OR "
                    "delivered_at_ms <= ?) ORDER BY id LIMIT ?",
                    (queue, now - self.redelivery_ms, count),
                ).fetchall()
                db.executemany(
                    "UPDATE queue SET delivered_to = ?, delivered_at_ms = ? WHERE id = ?",
                    [(consumer, now, row[0]) for row in rows],
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return [Delivery(str(row[0]), str(row[1])) for row in rows]

        name = f"queue:{queue}"
        while True:
            version = self._signals.version(name)
            delivered = await self._run(take)
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

        await self._run(delete)

    # ------------------------------------------------------------------ channels

    async def cursor(self, channel: str) -> str:
        return str(self._signals.version(channel))

    async def wait(self, channel: str, cursor: str, block_ms: int) -> str:
        await self._signals.wait(channel, int(cursor), block_ms / 1000)
        return str(self._signals.version(channel))
