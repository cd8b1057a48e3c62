"""``GET /health`` answers 503 ``service_unavailable``, with the registry's error body, when its
store does not answer in time (a stalled store used to answer a bare 500)."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from agentgen.runtime.registry import operations
from agentgen.runtime.registry.store import Store
from tests.registry.conftest import running_registry


async def test_a_store_that_does_not_answer_makes_health_unavailable(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_registry(store) as running:
        async with httpx2.AsyncClient(base_url=running.url, timeout=30) as http:
            assert (await http.get("/health")).status_code == 200

            async def stalled() -> int:
                await asyncio.Event().wait()  # what a stalled Redis (a partition) looks like
                raise AssertionError("unreachable")

            monkeypatch.setattr(store, "now_ms", stalled)
            monkeypatch.setattr(operations, "HEALTH_TIMEOUT_S", 0.2, raising=False)
            answer = await http.get("/health")
    assert answer.status_code == 503, answer.text
    error = answer.json()["error"]
    assert error["code"] == "service_unavailable"
    assert error["message"] == (
        f"registry store {store.description} did not answer within 0.2 s: check that it is "
        "running and reachable from the registry (requests succeed again as soon as it answers)"
    )
