"""The embedded store: one SQLite file (WAL), owned by one registry process.

Operations run on the event loop, each as it is asked for: the registry's statements are
primary-key reads and writes of small rows, which take microseconds, while handing each one to
a thread cost more than running it (a thread switch and a wake-up of the loop per operation,
and the thread waiting for the interpreter lock while the loop parses requests). Everything the
loop asks for while a transaction is open joins it, each operation in a savepoint of its own
(read, decide, write; one that fails is rolled back alone), and the transaction commits at the
end of the loop's turn: many calls' admissions, claims and completions share a commit under
load, and no operation's result is handed out before the commit that made it durable.

The event loop still never waits for the disk to sync: with WAL and ``synchronous=NORMAL`` a
commit appends to the write-ahead log without syncing, and the log is checkpointed into the
database (where SQLite syncs) by a thread of its own, never by a commit. Commits survive the
process being killed; only an operating-system crash may lose the last ones. Waiters are woken
in process: a SQLite registry is a single process; several registry processes share state
through Redis instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from agentgen.runtime.registry.admission import record_key
from agentgen.runtime.registry.store import (
    ANSWER_TIMEOUT_S,
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
    delivered_at_ms INTEGER,
    expires_at_ms INTEGER
);
CREATE INDEX IF NOT EXISTS queue_order ON queue (queue, id);
"""
#: Expired keys are deleted once every this many commits.
_PURGE_EVERY = 1000
#: The log is checkpointed after this many commits, or this often (seconds) if any.
_CHECKPOINT_EVERY = 200
_CHECKPOINT_SECONDS = 0.5
#: Longest pause between two attempts at a database another process holds locked.
_LOCKED_PAUSE_S = 0.1
_READ = "SELECT value FROM kv WHERE key = ? AND (expires_at_ms IS NULL OR expires_at_ms > ?)"


@dataclass
class _Job:
    """One operation run in the open transaction, and who waits for its outcome."""

    future: asyncio.Future[Any]
    outcome: Any = None
    error: BaseException | None = field(default=None)


def _clock() -> int:
    return time.time_ns() // 1_000_000


def _read(db: sqlite3.Connection, key: str, now: int) -> str | None:
    row = db.execute(_READ, (key, now)).fetchone()
    return None if row is None else str(row[0])


def _apply(db: sqlite3.Connection, change: Change[Any]) -> None:
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
        db.execute(
            "INSERT INTO queue (queue, body, expires_at_ms) VALUES (?, ?, ?)",
            (queue_name, body, change.enqueue_until_ms),
        )
    if change.ack:
        db.executemany(
            "DELETE FROM queue WHERE queue = ? AND id = ?",
            [(queue_name, int(message_id)) for queue_name, message_id in change.ack],
        )


def _purge(db: sqlite3.Connection, now: int) -> None:
    """Delete expired keys, and queue messages of no use any more (their calls expired)."""
    db.execute("DELETE FROM kv WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?", (now,))
    db.execute("DELETE FROM queue WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?", (now,))


def _migrate(db: sqlite3.Connection, now: int) -> None:
    """Bring a database made by an earlier version up to the schema. Queue messages had no
    expiry: each one without any gets its call's, as a message written today does (a
    message names its call), so that a queue nobody reads (a withdrawn toolset's) does not
    keep it for good; one whose call is gone gets ``now`` (nobody can claim a call without a
    record). Looked for at every start: the release that added the column left them without."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(queue)")}
    if "expires_at_ms" not in columns:
        db.execute("ALTER TABLE queue ADD COLUMN expires_at_ms INTEGER")
    db.execute(
        "UPDATE queue SET expires_at_ms = coalesce((SELECT kv.expires_at_ms FROM kv WHERE "
        "kv.key = ? || queue.body), ?) WHERE expires_at_ms IS NULL",
        (record_key(""), now),
    )


def _decide(db: sqlite3.Connection, keys: Sequence[str], decide: Decide[T]) -> Change[T]:
    now = _clock()
    values = {key: _read(db, key, now) for key in keys}
    change = decide(values, now)
    _apply(db, change)
    return change


class _Checkpointer:
    """Moves the write-ahead log into the database on a thread of its own connection, so that
    no commit on the event loop ever waits for the disk to sync."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.wanted = threading.Event()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name="agentgen-sqlite-wal", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with contextlib.closing(sqlite3.connect(self.path, check_same_thread=False)) as db:
            db.execute("PRAGMA busy_timeout=5000")
            while not self.stopping:
                self.wanted.wait(_CHECKPOINT_SECONDS)
                if self.wanted.is_set():
                    self.wanted.clear()
                    with contextlib.suppress(sqlite3.Error):  # tried again next time
                        db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            with contextlib.suppress(sqlite3.Error):
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def stop(self) -> None:
        self.stopping = True
        self.wanted.set()
        self.thread.join()


#: The files a store of this process owns, by device and inode: a second store of the same
#: file in this process is refused without opening it (see :func:`_own`).
_OWNED: set[tuple[int, int]] = set()


def _own(path: str) -> int:
    """Claim the database file for this process (an exclusive ``flock``, released when the
    process dies): wake-ups are in process, so a second registry on the same file would
    serve, and its waiters would sleep through what the first one commits. ``flock`` does not
    touch SQLite's own (POSIX) locks; the descriptor is closed only after SQLite's, since
    closing any descriptor of a file drops the process's POSIX locks on it. For that same
    reason a file a store of this process owns is refused before a descriptor of it is
    opened: closing it would drop the serving store's locks (among them the shared lock by
    which a connection closing last knows not to checkpoint and delete the log under it)."""
    try:
        stat = os.stat(path)
    except OSError:
        stat = None
    if stat is not None and (stat.st_dev, stat.st_ino) in _OWNED:
        raise StoreError(_TAKEN)
    owner = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(owner)
        raise StoreError(_TAKEN) from None
    held = os.fstat(owner)
    _OWNED.add((held.st_dev, held.st_ino))
    return owner


def _disown(owner: int) -> None:
    """Let go of a file :func:`_own` claimed (after SQLite closed its own descriptors)."""
    held = os.fstat(owner)
    _OWNED.discard((held.st_dev, held.st_ino))
    os.close(owner)


_TAKEN = (
    "another registry has it open, and a SQLite store belongs to one registry process: "
    "stop the other one, or share a Redis store between registries (--store "
    "redis://HOST:PORT/DB)"
)


def _create_private(path: str) -> None:
    """Create a new database file readable by its owner only: it holds every call's payload and
    result, which other users of the machine have no business reading (SQLite gives its
    write-ahead log and shared-memory files the database file's permissions). An existing
    file keeps the permissions its operator gave it."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _without_wal(journal: str) -> str:
    """Why a file SQLite keeps out of WAL mode is refused. Without WAL, a commit needs every
    reader of the file (a backup, a ``sqlite3`` shell) gone, and the loop's connection does not
    wait for locks: requests failed at once with "database is locked"; and each commit syncs
    the disk, on the event loop. The store is built on WAL: such a file is refused at start,
    saying what to do, rather than served worse."""
    return (
        f"SQLite cannot put the file in WAL mode (it stays in journal mode {journal!r}), which "
        "this store needs (its commits must not wait for readers of the file or for the disk): "
        "the file system lacks what WAL needs (shared memory: some network, FUSE or container "
        "volumes), or the file or its folder is read-only. Put the file on a local, writable "
        "file system (--store sqlite:PATH), or use a Redis store (--store redis://HOST:PORT/DB)"
    )


def _busy(exc: sqlite3.Error) -> bool:
    """Whether another connection holds the lock ``exc`` was refused for."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_BUSY


class SQLiteStore:
    def __init__(
        self,
        path: str,
        *,
        redelivery_ms: int = 5_000,
        answer_timeout_s: float = ANSWER_TIMEOUT_S,
    ) -> None:
        self.path = path
        #: How long an operation waits for a database another process holds locked.
        self.answer_timeout_s = answer_timeout_s
        self.description = "memory" if path == ":memory:" else f"sqlite:{path}"
        self.redelivery_ms = redelivery_ms
        self._db: sqlite3.Connection | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._checkpointer: _Checkpointer | None = None
        #: The operations of the open transaction (None when none is open).
        self._open: list[_Job] | None = None
        self._signals = Signals()
        self._commits = 0
        #: The descriptor holding this process's claim on the file (see :func:`_own`).
        self._owner: int | None = None

    # ------------------------------------------------------------------ the transaction

    def _run(self, fn: Callable[[sqlite3.Connection], R], *, writes: bool) -> Awaitable[R]:
        """Run ``fn`` now, in the open transaction (opened if needed); its outcome is handed
        out once that transaction has committed. If another process holds the database locked,
        ``fn`` runs once it is free (see :meth:`_once_unlocked`)."""
        db, loop = self._db, self._loop
        if db is None or loop is None:
            raise StoreError(f"registry store {self.description} is not open")
        if not self._begin(db, loop):
            return self._once_unlocked(fn, writes)
        return self._join(db, loop, fn, writes)

    def _begin(self, db: sqlite3.Connection, loop: asyncio.AbstractEventLoop) -> bool:
        """Open the transaction if none is open; False if another process holds the lock."""
        if self._open is not None:
            return True
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            if _busy(exc):
                return False
            raise self._wrap(exc) from exc
        self._open = []
        loop.call_soon(self._commit)
        return True

    async def _once_unlocked(self, fn: Callable[[sqlite3.Connection], R], writes: bool) -> R:
        """Run ``fn`` once no other process holds the database locked (a program writing to
        the file: a ``sqlite3`` shell with a transaction open, a backup tool), looking again
        after growing pauses; StoreError after :attr:`answer_timeout_s`. The connection does
        not wait for the lock itself (no ``busy_timeout``): it would wait on the event loop,
        and every request, long poll and health check of the registry with it, one locked
        operation after the other (eight requests took 5 to 35 s)."""
        deadline = time.monotonic() + self.answer_timeout_s
        pause = 0.005
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreError(
                    f"registry store {self.description} stayed locked by another process for "
                    f"{self.answer_timeout_s:g} s: end what holds it (a program writing to the "
                    "file, such as a sqlite3 shell with a transaction open); requests succeed "
                    "again as soon as it is free"
                )
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, _LOCKED_PAUSE_S)
            db, loop = self._db, self._loop
            if db is None or loop is None:
                raise StoreError(f"registry store {self.description} is not open")
            if self._begin(db, loop):
                return await self._join(db, loop, fn, writes)

    def _join(
        self,
        db: sqlite3.Connection,
        loop: asyncio.AbstractEventLoop,
        fn: Callable[[sqlite3.Connection], R],
        writes: bool,
    ) -> asyncio.Future[R]:
        """Run ``fn`` in the open transaction."""
        assert self._open is not None
        job = _Job(loop.create_future())
        self._open.append(job)
        try:
            if writes:
                db.execute("SAVEPOINT operation")
            try:
                job.outcome = fn(db)
            except Exception as exc:
                job.error = self._wrap(exc)
                if writes:
                    db.execute("ROLLBACK TO operation")
            if writes:
                db.execute("RELEASE operation")
        except sqlite3.Error as exc:  # the transaction itself failed: none of it is kept
            self._abort(exc)
        return cast(asyncio.Future[R], job.future)

    def _commit(self) -> None:
        db, jobs = self._db, self._open
        if jobs is None:  # aborted meanwhile
            return
        self._open = None
        assert db is not None
        try:
            self._commits += 1
            if self._commits % _PURGE_EVERY == 0:
                _purge(db, _clock())
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._open = jobs
            self._abort(exc)
            return
        for job in jobs:
            _settle(job.future, job.outcome, job.error)
        if self._checkpointer is not None and self._commits % _CHECKPOINT_EVERY == 0:
            self._checkpointer.wanted.set()

    def _abort(self, exc: sqlite3.Error) -> None:
        """Roll the open transaction back: every operation in it fails (nothing it read or
        wrote may be believed)."""
        jobs, self._open = self._open or [], None
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
        error = self._wrap(exc)
        for job in jobs:
            _settle(job.future, None, error)

    def _wrap(self, exc: BaseException) -> BaseException:
        if isinstance(exc, sqlite3.Error):
            return StoreError(f"registry store {self.description}: {exc}")
        return exc

    async def open(self) -> None:
        if self._db is not None:
            return
        owner: int | None = None
        db: sqlite3.Connection | None = None
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                _create_private(self.path)
                # The file is claimed before anything reads or writes it: two registries
                # started on one file both brought its schema up to date, at once (the one
                # refused had already written to a file another registry served).
                owner = _own(self.path)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            journal = str(db.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
            if self.path != ":memory:" and journal != "wal":
                raise StoreError(_without_wal(journal))
            # WAL with synchronous=NORMAL: a commit survives the process being killed; only
            # an operating-system crash may lose the last transactions.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=5000")
            # Checkpoints (where SQLite syncs) are the checkpointer thread's, never a commit's.
            db.execute("PRAGMA wal_autocheckpoint=0")
            db.executescript(_SCHEMA)
            _migrate(db, _clock())
            # From now on the connection never waits for another process's lock: it would wait
            # on the event loop (see _once_unlocked).
            db.execute("PRAGMA busy_timeout=0")
        except (sqlite3.Error, OSError, StoreError) as exc:
            if db is not None:
                db.close()
            if owner is not None:  # closed after SQLite's own descriptors (see _own)
                _disown(owner)
            cause = None if isinstance(exc, StoreError) else exc
            raise StoreError(f"cannot open registry store {self.description}: {exc}") from cause
        self._db, self._loop, self._owner = db, asyncio.get_running_loop(), owner
        if journal == "wal":
            self._checkpointer = _Checkpointer(self.path)

    async def close(self) -> None:
        db = self._db
        if db is None:
            return
        if self._open is not None:
            self._commit()
        if self._checkpointer is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._checkpointer.stop)
            self._checkpointer = None
        self._db, self._loop = None, None
        db.close()
        if self._owner is not None:  # closed after SQLite's own descriptors (see _own)
            _disown(self._owner)
            self._owner = None

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
                db.execute("SAVEPOINT decision")
                try:
                    done.append(_decide(db, keys, decide))
                except Exception as exc:
                    db.execute("ROLLBACK TO decision")
                    done.append(exc)
                db.execute("RELEASE decision")
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
                "delivered_at_ms <= ?) AND (expires_at_ms IS NULL OR expires_at_ms > ?) "
                "ORDER BY id LIMIT ?",
                (queue, now - self.redelivery_ms, now, count),
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
        return str(self._signals.hold(channel))

    async def release(self, channel: str) -> None:
        self._signals.release(channel)

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
