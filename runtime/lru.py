"""A small bounded least-recently-used mapping, for caches kept across planning activities."""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["LRU"]

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A bounded mapping that forgets the least recently used entry first. Not locked:
    callers that share one between threads hold their own lock.

    A plain dict keeps insertion order, and re-inserting a key moves it to the end: half the
    memory per entry of an ``OrderedDict``, which matters at tens of thousands of tools.
    """

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a cache must hold at least one entry, got {size}")
        self.size = size
        self.entries: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        value = self.entries.pop(key, None)
        if value is not None:
            self.entries[key] = value
        return value

    def peek(self, key: K) -> V | None:
        """The value kept for ``key``, without marking it used: one dictionary read, so another
        thread may call it while the owner's thread changes the cache."""
        return self.entries.get(key)

    def put(self, key: K, value: V) -> V:
        """Store ``value`` unless the key is already there; return what is stored."""
        existing = self.entries.get(key)
        if existing is not None:
            return existing
        self.entries[key] = value
        if len(self.entries) > self.size:
            del self.entries[next(iter(self.entries))]
        return value
