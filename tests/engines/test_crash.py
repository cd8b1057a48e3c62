"""A worker process killed with SIGKILL mid-run, replaced by a new one: the run completes.

Workers run as ``agentgen worker`` processes built from the application's factory
(``tests/engines/crash_app.py``). The registry service (uvicorn on 127.0.0.1, SQLite) and the
providers run in the test process and count what they execute: the ledger toolset is served
to the registry with the provider SDK, and workers reach it with the registry's HTTP client;
the compiled tool calls a plain provider endpoint. Each kill lands at a known point: after the
tool call was accepted and while its provider holds it (the provider waits for the test).

* A registry call: admitted, then waited for when the worker dies. Meanwhile the provider is
  replaced by a revision with another result contract (it drains: the call it holds finishes,
  then the new revision takes the admission). The new worker waits again (the registry keeps
  the result), the provider ran the call once, and the saved contract (its token and result
  contract, not the replacement's) decided the result.
* A compiled tool: running when the worker dies. A tool execution is never repeated: the call
  is answered with ``outcome_unknown``, and the provider ran it once.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType, PendingActivityState
from temporalio.testing import WorkflowEnvironment

from agentgen.runtime.app import Runtime
from agentgen.runtime.engines.temporal import TemporalEngine
from agentgen.runtime.messages import Message
from agentgen.runtime.registry.admission import CallRecord, Limits, record_key, tool_use_id
from agentgen.runtime.registry.http_client import HttpRegistryClient
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from agentgen.runtime.runs.requests import RunRequest
from tests.engines import crash_app
from tests.engines.held_provider import ChargeEndpoint, Provider, Serving, serving_ledger
from tests.registry.conftest import Running, running_registry

pytestmark = pytest.mark.asyncio(loop_scope="session")

ROOT = Path(__file__).resolve().parents[2]
AGENTGEN = Path(sys.executable).with_name("agentgen")
#: Leases short enough to expire within a test; a call may be held for a minute.
LIMITS = Limits(min_lease_ms=200, max_lease_ms=60_000, call_timeout_ms=60_000)


class Workers:
    """Worker processes of the crash app, started with the CLI."""

    def __init__(self, queue: str, logs: Path) -> None:
        self.queue = queue
        self.logs = logs
        self.processes: list[subprocess.Popen[str]] = []

    async def start(self) -> subprocess.Popen[str]:
        log = self.logs / f"worker-{len(self.processes)}.log"
        with log.open("w") as stderr:  # the worker writes to its own copy
            process = subprocess.Popen(
                [
                    str(AGENTGEN),
                    "worker",
                    "--task-queue",
                    self.queue,
                    "--app",
                    crash_app.APP,
                    # The replacement gets the dead worker's run after 1 s (10 s by default).
                    "--sticky-timeout",
                    "1",
                ],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.processes.append(process)
        assert process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 60)
        assert line.startswith("agentgen worker: polling task queue"), (
            f"the worker did not start: {line!r}; see {log}"
        )
        return process

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            process.wait(timeout=30)
            if process.stdout is not None:
                process.stdout.close()


@dataclass
class Crash:
    """What a crash test runs against."""

    registry: Running
    provider: Provider
    #: The ledger's first revision (``CHARGED`` results), served from the start.
    ledger: Serving
    workers: Workers
    rt: Runtime
    exits: AsyncExitStack

    async def serve_ledger(self, result: dict[str, Any], revision: str) -> Serving:
        """Serve another revision of the ledger (until the test ends)."""
        answer = crash_app.charged if result is crash_app.CHARGED else crash_app.receipt
        declaration = crash_app.ledger(result, revision)
        return await self.exits.enter_async_context(
            serving_ledger(self.registry.url, self.provider, declaration, revision, answer)
        )

    async def record(self, run_id: str, call_id: str) -> CallRecord:
        """The registry's record of a call (from its store)."""
        raw = await self.registry.store.get(record_key(tool_use_id(run_id, call_id)))
        assert raw is not None, f"the registry has no call {call_id!r} of run {run_id!r}"
        return CallRecord.model_validate_json(raw)


@pytest_asyncio.fixture(loop_scope="session")
async def crash(
    temporal: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Crash]:
    provider = Provider()
    async with AsyncExitStack() as exits:
        store = SQLiteStore(str(tmp_path / "registry.db"))
        registry = await exits.enter_async_context(running_registry(store, limits=LIMITS))
        endpoint = exits.enter_context(ChargeEndpoint(provider))
        queue = f"crash-{uuid.uuid4().hex}"
        monkeypatch.setenv("AGENTGEN_CRASH_REGISTRY", registry.url)
        monkeypatch.setenv("AGENTGEN_CRASH_PROVIDER", endpoint.url)
        monkeypatch.setenv(
            "AGENTGEN_CRASH_TEMPORAL", temporal.client.service_client.config.target_host
        )
        monkeypatch.setenv("AGENTGEN_CRASH_QUEUE", queue)
        monkeypatch.setenv("PYTHONPATH", str(ROOT))
        workers = Workers(queue, tmp_path)
        exits.callback(workers.stop)  # before the registry stops
        first = await exits.enter_async_context(
            serving_ledger(
                registry.url, provider, crash_app.ledger(crash_app.CHARGED), "r1",
                crash_app.charged,
            )
        )  # fmt: skip
        await first.token(10)
        yield Crash(registry, provider, first, workers, crash_app.build(), exits)


async def killed_mid_call(
    temporal: WorkflowEnvironment,
    crash: Crash,
    text: str,
    *,
    activity: str,
    meanwhile: Callable[[], Awaitable[Any]] | None = None,
    released: Callable[[], Awaitable[Any]] | None = None,
) -> tuple[str, Any]:
    """Start a run on a first worker, SIGKILL it while the provider holds the call and the
    worker runs ``activity``, run ``meanwhile``, release the provider, wait for ``released``,
    start a new worker and wait for the run."""
    engine = crash.rt.engine
    assert isinstance(engine, TemporalEngine)
    first = await crash.workers.start()
    run_id = await engine.start(crash.rt, RunRequest("crash.payer", (Message.user(text),)))
    assert await asyncio.to_thread(crash.provider.started.wait, 60), "the call never ran"
    await running(temporal, run_id, activity)
    os.kill(first.pid, signal.SIGKILL)
    assert await asyncio.to_thread(first.wait, 30) == -signal.SIGKILL
    if meanwhile is not None:
        await meanwhile()
    crash.provider.release.set()
    if released is not None:
        await released()
    await crash.workers.start()
    outcome = await asyncio.wait_for(engine.result(crash.rt, run_id), 120)
    return run_id, outcome


async def running(temporal: WorkflowEnvironment, run_id: str, activity: str) -> None:
    """Wait until a worker runs ``activity`` of the run (started, not finished)."""
    handle = temporal.client.get_workflow_handle(run_id)
    for _ in range(600):
        described = await handle.describe()
        for pending in described.raw_description.pending_activities:
            started = pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
            if pending.activity_type.name == activity and started:
                return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{activity} never started in run {run_id!r}")


async def activity_attempts(temporal: WorkflowEnvironment, run_id: str) -> dict[str, list[Any]]:
    """Per activity type: the attempt and worker identity of each start."""
    history = await temporal.client.get_workflow_handle(run_id).fetch_history()
    kinds: dict[int, str] = {}
    found: dict[str, list[Any]] = {}
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            kinds[event.event_id] = (
                event.activity_task_scheduled_event_attributes.activity_type.name
            )
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started = event.activity_task_started_event_attributes
            kind = kinds[started.scheduled_event_id]
            found.setdefault(kind, []).append((started.attempt, started.identity))
    return found


async def test_a_registry_call_survives_its_worker(
    temporal: WorkflowEnvironment, crash: Crash
) -> None:
    token = crash.ledger.registered.result()
    replacing: list[Serving] = []

    async def replace_provider() -> None:
        # While the call is held, the provider is replaced with another result contract: the
        # new revision is published (the registry makes it wait while the old revision's lease
        # lives) and the old one drains (it finishes the call it holds, then lets go).
        replacement = await crash.serve_ledger(crash_app.RECEIPT, "r2")
        replacing.append(replacement)
        for _ in range(200):
            if replacement.refusals:
                break
            await asyncio.sleep(0.05)
        assert replacement.refusals[:1] == ["admission_blocked"]
        crash.ledger.stop.set()

    async def replaced() -> None:
        # Before the new worker waits again, the replacement holds the admission.
        replacement = await replacing[0].token(30)
        async with HttpRegistryClient(crash.registry.url) as client:
            current = await client.resolve_toolset("ledger")
        assert current.registration_token == replacement != token
        assert current.toolset.tools[0].result_schema["required"] == ["receipt"]

    run_id, outcome = await killed_mid_call(
        temporal,
        crash,
        "pay 5",
        activity="agentgen.await_outcome",
        meanwhile=replace_provider,
        released=replaced,
    )

    assert outcome.final_text == 'result: {"charged":5}'
    ran = [(e["tool"], e["run_id"], e["call_id"]) for e in crash.provider.executions]
    assert ran == [("ledger.pay", run_id, "call-1")]  # ran once, by either revision
    record = await crash.record(run_id, "call-1")  # the registry admitted it under r1
    assert (record.tool, record.registration_token, record.state) == (
        "ledger.pay",
        token,
        "completed",
    )
    (accepted,) = outcome.accepted_calls
    assert accepted.binding is not None
    assert accepted.binding.registration_token == token
    result_schema = accepted.binding.declaration["result_schema"]
    assert result_schema["required"] == ["charged"]  # the saved contract, not the receipt one
    attempts = await activity_attempts(temporal, run_id)
    ((admitted, admitter),) = attempts["agentgen.admit"]
    ((waited, waiter),) = attempts["agentgen.await_outcome"]  # the attempt that completed
    assert admitted == 1  # never repeated
    assert waited == 2 and waiter != admitter  # waited again, on the new worker
    report = await asyncio.wait_for(asyncio.shield(crash.ledger.task), 10)  # r1 drained
    assert (report.reason, report.completed, report.lost) == ("stopped", 1, 0)


async def test_a_tool_running_on_a_lost_worker_is_never_run_again(
    temporal: WorkflowEnvironment, crash: Crash
) -> None:
    run_id, outcome = await killed_mid_call(
        temporal, crash, "charge 5", activity="agentgen.execute"
    )

    result = outcome.transcript[2].parts[0]
    assert result.is_error
    error = json.loads(result.content)["error"]
    assert error["kind"] == "outcome_unknown"
    assert "the worker running it was lost" in error["message"]
    assert outcome.final_text.startswith("result: ")
    assert [e["tool"] for e in crash.provider.executions] == ["charge"]  # never repeated
    attempts = await activity_attempts(temporal, run_id)
    assert [a for a, _ in attempts["agentgen.execute"]] == [1]
