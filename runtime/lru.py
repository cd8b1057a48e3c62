"""A small bounded least-recently-used mapping, for caches kept across planning activities."""

from __future__ import annotations

from collections.abc import Callable
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

    def __init__(
        self,
        size: int,
        *,
        max_weight: int | None = None,
        weight: Callable[[K, V], int] | None = None,
    ) -> None:
        """``size`` entries at most; with ``max_weight``, also at most that much in all as
        ``weight`` measures each entry (the newest entry is kept whatever it weighs): a count
        alone does not bound memory when entries can be megabytes each."""
        if size < 1:
            raise ValueError(f"a cache must hold at least one entry, got {size}")
        if (max_weight is None) != (weight is None):
            raise ValueError("max_weight and weight go together")
        self.size = size
        self.entries: dict[K, V] = {}
        self.max_weight = max_weight
        self._weight = weight
        self._weights: dict[K, int] = {}
        self.total = 0

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
        if self._weight is not None:
            self._weights[key] = weighs = self._weight(key, value)
            self.total += weighs
        while len(self.entries) > self.size or (
            self.max_weight is not None and self.total > self.max_weight and len(self.entries) > 1
        ):
            oldest = next(iter(self.entries))
            del self.entries[oldest]
            self.total -= self._weights.pop(oldest, 0)
        return value
