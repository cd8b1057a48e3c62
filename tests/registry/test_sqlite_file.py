"""What the SQLite store does to its file before it serves: it claims the file first, and
refuses a file SQLite keeps out of WAL mode."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentgen.runtime.registry.sqlite_store import SQLiteStore
from agentgen.runtime.registry.store import Change, StoreError

#: The tables of a registry file written before queue messages expired (the store brings it
#: up to date when it opens it).
_BEFORE_EXPIRY = (
    "CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at_ms INTEGER);"
    "CREATE TABLE queue (id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, "
    "body TEXT NOT NULL, delivered_to TEXT, delivered_at_ms INTEGER);"
)

#: Another process claiming the file as a registry does (an exclusive flock), until its
#: standard input closes.
_CLAIMER = """
import fcntl, os, sys
owner = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(owner, fcntl.LOCK_EX)
print("claimed", flush=True)
sys.stdin.read()
"""


def _layout(path: Path) -> tuple[str, list[str]]:
    """The file's journal mode and its queue table's columns, read without changing either."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        journal = str(db.execute("PRAGMA journal_mode").fetchone()[0])
        columns = [str(row[1]) for row in db.execute("PRAGMA table_info(queue)")]
    return journal, columns


@contextlib.contextmanager
def _claimed_by_another_process(path: Path) -> Iterator[None]:
    process = subprocess.Popen(
        [sys.executable, "-c", _CLAIMER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "claimed\n"
        yield
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(30)


async def test_a_registry_refused_a_file_another_one_holds_leaves_the_file_as_it_was(
    tmp_path: Path,
) -> None:
    """The store brought the file's schema up to date (and switched it to WAL) before it
    claimed it: two registries started on one file both migrated it at once, and the one
    refused had written to a file another registry served."""
    path = tmp_path / "registry.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(_BEFORE_EXPIRY)
        db.execute("INSERT INTO queue (queue, body) VALUES ('q', 'call-1')")
        db.commit()
    before = _layout(path)
    assert before == ("delete", ["id", "queue", "body", "delivered_to", "delivered_at_ms"])
    with _claimed_by_another_process(path):
        with pytest.raises(StoreError) as refused:
            await SQLiteStore(str(path)).open()
        assert str(refused.value).startswith(
            f"cannot open registry store sqlite:{path}: another registry has it open"
        )
        assert _layout(path) == before
    # Once the other process let go, the file is this registry's, brought up to date.
    store = SQLiteStore(str(path))
    await store.open()
    try:
        assert [d.body for d in await store.receive("q", "c", 4, 1)] == []  # its call is gone
    finally:
        await store.close()
    assert _layout(path) == ("wal", [*before[1], "expires_at_ms"])


async def test_a_file_sqlite_cannot_put_in_wal_mode_is_refused_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of WAL mode (a file system without the shared memory WAL needs), every commit
    needed the file's readers gone and the loop's connection does not wait for locks: a
    backup reading the file failed the registry's requests at once with "database is
    locked". SQLite's own unix-dotfile file system, which has no shared memory, keeps files
    out of WAL as such a file system does."""
    path = tmp_path / "registry.db"
    connect = sqlite3.connect

    def without_shared_memory(database: str, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if database == str(path):
            return connect(f"file:{database}?vfs=unix-dotfile", *args, uri=True, **kwargs)
        return connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", without_shared_memory)
    with pytest.raises(StoreError) as refused:
        await SQLiteStore(str(path)).open()
    assert str(refused.value) == (
        f"cannot open registry store sqlite:{path}: SQLite cannot put the file in WAL mode (it "
        "stays in journal mode 'delete'), which this store needs (its commits must not wait for "
        "readers of the file or for the disk): the file system lacks what WAL needs (shared "
        "memory: some network, FUSE or container volumes), or the file or its folder is "
        "read-only. Put the file on a local, writable file system (--store sqlite:PATH), or use "
        "a Redis store (--store redis://HOST:PORT/DB)"
    )
    monkeypatch.undo()
    # Refused, it let go of the file: on a file system with WAL, it serves.
    store = SQLiteStore(str(path))
    await store.open()
    try:
        await store.transact(["k"], lambda values, now: Change(None))
    finally:
        await store.close()


#: Another process asking whether this one holds any POSIX lock on the file (SQLite's locks
#: are POSIX locks): it tries to lock the whole file for writing without waiting.
_PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 0, 0)
    print("unlocked")
except OSError:
    print("locked")
"""


def _locked(path: Path) -> bool:
    answer = subprocess.run(
        [sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, check=True
    )
    return answer.stdout.strip() == "locked"


async def test_a_second_store_refused_in_the_serving_process_leaves_its_locks_alone(
    tmp_path: Path,
) -> None:
    """The refused store opened a descriptor of the file to claim it, and closed it: closing
    any descriptor of a file drops every POSIX lock the process holds on it, SQLite's own
    included. The serving store lost the shared lock WAL mode keeps on the database file, by
    which a connection closing last (a ``sqlite3`` shell, a backup) knows not to checkpoint
    and delete the write-ahead log under it."""
    path = tmp_path / "registry.db"
    serving = SQLiteStore(str(path))
    await serving.open()
    try:
        await serving.get("k")
        assert _locked(path)  # SQLite's shared lock, held while connected in WAL mode
        with pytest.raises(StoreError) as refused:
            await SQLiteStore(str(path)).open()
        assert str(refused.value).startswith(
            f"cannot open registry store sqlite:{path}: another registry has it open"
        )
        assert _locked(path)
    finally:
        await serving.close()
    again = SQLiteStore(str(path))  # closed, the file is free for the next store
    await again.open()
    await again.close()
