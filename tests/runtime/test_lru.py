"""The bounded caches' eviction rules: by count, and by weight where entries can be large."""

from __future__ import annotations

import pytest

from agentgen.runtime.lru import LRU


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the oldest
    cache.put("c", 3)
    assert list(cache.entries) == ["a", "c"]


def test_a_weight_budget_forgets_the_oldest_until_the_rest_fits() -> None:
    # A count alone let 1,024 renewed forms of a 5 MB registry entry pile up (5 GB).
    cache: LRU[str, str] = LRU(1024, max_weight=10, weight=lambda key, value: len(value))
    cache.put("a", "xxxx")
    cache.put("b", "xxxx")
    assert cache.total == 8
    cache.get("a")  # "b" is now the oldest
    cache.put("c", "xxxx")
    assert list(cache.entries) == ["a", "c"] and cache.total == 8
    cache.put("huge", "x" * 50)  # kept alone: the newest entry stays whatever it weighs
    assert list(cache.entries) == ["huge"] and cache.total == 50
    cache.put("d", "x")
    assert list(cache.entries) == ["d"] and cache.total == 1


def test_a_weight_budget_needs_its_measure() -> None:
    with pytest.raises(ValueError, match="go together"):
        LRU(4, max_weight=10)
