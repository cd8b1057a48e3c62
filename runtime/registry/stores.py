"""Choosing a registry store from its description (``sqlite:PATH``, ``memory``, ``redis://``).

Each store's module (and its client library) is imported only when that store is chosen.
"""

from __future__ import annotations

from agentgen.runtime.registry.store import Store

__all__ = ["open_store"]


def open_store(spec: str, *, redelivery_ms: int = 5_000) -> Store:
    """A store from its description: ``sqlite:PATH``, ``memory`` (SQLite in memory, for tests
    and trials: nothing survives the process) or ``redis://HOST:PORT/DB``."""
    if spec in {"memory", "sqlite::memory:"}:
        from agentgen.runtime.registry.sqlite_store import SQLiteStore

        return SQLiteStore(":memory:", redelivery_ms=redelivery_ms)
    if spec.startswith("sqlite:"):
        from agentgen.runtime.registry.sqlite_store import SQLiteStore

        path = spec.removeprefix("sqlite:")
        if not path:
            raise ValueError("sqlite store needs a path: sqlite:PATH (or 'memory')")
        return SQLiteStore(path, redelivery_ms=redelivery_ms)
    if spec.startswith(("redis://", "rediss://", "unix://")):
        from agentgen.runtime.registry.redis_store import RedisStore

        return RedisStore(spec, redelivery_ms=redelivery_ms)
    raise ValueError(
        f"unknown registry store {spec!r}: use sqlite:PATH, memory or redis://HOST:PORT/DB"
    )
