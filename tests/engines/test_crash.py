"""A worker process killed with SIGKILL mid-run, replaced by a new one: the run completes.

Workers run as ``agentgen worker`` processes built from the application's factory
(``tests/engines/crash_app.py``); the registry and the provider run in the test process, over
HTTP on 127.0.0.1, and count what they execute. Each kill lands at a known point: after the
tool call was accepted and while its provider holds it (the provider waits for the test).

* A registry call: admitted, then waited for when the worker dies. The new worker waits again
  (the registry keeps the result), the provider ran it once, the saved contract (its token and
  result contract, not the provider's replacement published meanwhile) decided the result.
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
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType, PendingActivityState
from temporalio.testing import WorkflowEnvironment

from agentgen.runtime.app import Runtime
from agentgen.runtime.engines.temporal import TemporalEngine
from agentgen.runtime.messages import Message
from agentgen.runtime.runs.requests import RunRequest
from tests.engines import crash_app
from tests.engines.http_registry import RegistryServer

pytestmark = pytest.mark.asyncio(loop_scope="session")

ROOT = Path(__file__).resolve().parents[2]
AGENTGEN = Path(sys.executable).with_name("agentgen")


class Workers:
    """Worker processes of the crash app, started with the CLI."""

    def __init__(self, queue: str, logs: Path) -> None:
        self.queue = queue
        self.logs = logs
        self.processes: list[subprocess.Popen[str]] = []

    async def start(self) -> subprocess.Popen[str]:
        log = (self.logs / f"worker-{len(self.processes)}.log").open("w")
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
            stderr=log,
            text=True,
        )
        self.processes.append(process)
        assert process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 60)
        assert line.startswith("agentgen worker: polling task queue"), (
            f"the worker did not start: {line!r}; see {log.name}"
        )
        return process

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            process.wait(timeout=30)


@pytest_asyncio.fixture(loop_scope="session")
async def crash(
    temporal: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[RegistryServer, Workers, Runtime]]:
    with RegistryServer() as server:
        queue = f"crash-{uuid.uuid4().hex}"
        monkeypatch.setenv("AGENTGEN_CRASH_REGISTRY", server.url)
        monkeypatch.setenv(
            "AGENTGEN_CRASH_TEMPORAL", temporal.client.service_client.config.target_host
        )
        monkeypatch.setenv("AGENTGEN_CRASH_QUEUE", queue)
        monkeypatch.setenv("PYTHONPATH", str(ROOT))
        workers = Workers(queue, tmp_path)
        try:
            yield server, workers, crash_app.build()
        finally:
            workers.stop()


async def killed_mid_call(
    temporal: WorkflowEnvironment,
    server: RegistryServer,
    workers: Workers,
    rt: Runtime,
    text: str,
    *,
    activity: str,
    meanwhile: Callable[[], Awaitable[Any]] | None = None,
) -> tuple[str, Any]:
    """Start a run on a first worker, SIGKILL it while the provider holds the call and the
    worker runs ``activity``, replace it, release the provider, and wait for the run."""
    engine = rt.engine
    assert isinstance(engine, TemporalEngine)
    first = await workers.start()
    run_id = await engine.start(rt, RunRequest("crash.payer", (Message.user(text),)))
    assert await asyncio.to_thread(server.provider.started.wait, 60), "the call never ran"
    await running(temporal, run_id, activity)
    os.kill(first.pid, signal.SIGKILL)
    assert await asyncio.to_thread(first.wait, 30) == -signal.SIGKILL
    if meanwhile is not None:
        await meanwhile()
    await workers.start()
    server.provider.release.set()
    import time

    t = time.perf_counter()
    outcome = await asyncio.wait_for(engine.result(rt, run_id), 120)
    print("RESULT AFTER", time.perf_counter() - t)
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
    temporal: WorkflowEnvironment, crash: tuple[RegistryServer, Workers, Runtime]
) -> None:
    server, workers, rt = crash
    token = server.publish(crash_app.ledger(crash_app.CHARGED), "r1")
    replaced: list[str] = []

    async def republish() -> None:
        # The provider is replaced, with another result contract, while the call is held.
        replaced.append(server.publish(crash_app.ledger(crash_app.RECEIPT, "v2"), "r2"))

    run_id, outcome = await killed_mid_call(
        temporal,
        server,
        workers,
        rt,
        "pay 5",
        activity="agentgen.await_outcome",
        meanwhile=republish,
    )

    assert outcome.final_text == 'result: {"charged":5}'
    assert [e["tool"] for e in server.provider.executions] == ["ledger.pay"]  # ran once
    assert [(tool, t) for tool, t, _ in server.calls] == [("ledger.pay", token)]
    (accepted,) = outcome.accepted_calls
    assert accepted.binding is not None
    assert accepted.binding.registration_token == token != replaced[0]
    result_schema = accepted.binding.declaration["result_schema"]
    assert result_schema["required"] == ["charged"]  # the saved contract, not the receipt one
    attempts = await activity_attempts(temporal, run_id)
    ((admitted, admitter),) = attempts["agentgen.admit"]
    ((waited, waiter),) = attempts["agentgen.await_outcome"]  # the attempt that completed
    assert admitted == 1  # never repeated
    assert waited == 2 and waiter != admitter  # waited again, on the new worker


async def test_a_tool_running_on_a_lost_worker_is_never_run_again(
    temporal: WorkflowEnvironment, crash: tuple[RegistryServer, Workers, Runtime]
) -> None:
    server, workers, rt = crash
    server.publish(crash_app.ledger(crash_app.CHARGED), "r1")
    run_id, outcome = await killed_mid_call(
        temporal, server, workers, rt, "charge 5", activity="agentgen.execute"
    )

    result = outcome.transcript[2].parts[0]
    assert result.is_error
    error = json.loads(result.content)["error"]
    assert error["kind"] == "outcome_unknown"
    assert "the worker running it was lost" in error["message"]
    assert outcome.final_text.startswith("result: ")
    assert [e["tool"] for e in server.provider.executions] == ["charge"]  # never repeated
    attempts = await activity_attempts(temporal, run_id)
    assert [a for a, _ in attempts["agentgen.execute"]] == [1]
