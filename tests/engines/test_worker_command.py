"""``agentgen worker`` against a real Temporal server (the session's dev server): a
configuration the server refuses is named before the worker says it polls, without a
traceback."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

pytestmark = pytest.mark.asyncio(loop_scope="session")

ROOT = Path(__file__).resolve().parents[2]
AGENTGEN = Path(sys.executable).with_name("agentgen")


async def test_an_unknown_namespace_is_named(temporal: WorkflowEnvironment) -> None:
    address = temporal.client.service_client.config.target_host
    done = await asyncio.to_thread(
        subprocess.run,
        [str(AGENTGEN), "worker", "--task-queue", "q", "--app",
         "tests.cli.test_worker_cli:make_runtime", "--address", address,
         "--namespace", "no-such-namespace"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""  # it never said it polled
    assert "Traceback" not in done.stderr
    assert (
        f"Error: Temporal namespace 'no-such-namespace' does not exist on {address}: create it"
    ) in done.stderr
