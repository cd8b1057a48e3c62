"""``agentgen worker`` against a real Temporal server (the session's dev server): a
configuration the server refuses is named before the worker says it polls, without a
traceback."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from agentgen.runtime.app import Runtime
from agentgen.runtime.engines.temporal import TemporalEngine

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
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # it never said it polled
    assert "Traceback" not in done.stderr
    assert (
        f"error: Temporal namespace 'no-such-namespace' does not exist on {address}: create it"
    ) in done.stderr


def engine_runtime() -> Runtime:
    """An application whose engine names the server and namespace given in the environment."""
    return Runtime(
        engine=TemporalEngine(
            address=os.environ["AGENTGEN_TEST_ENGINE_ADDRESS"],
            namespace=os.environ["AGENTGEN_TEST_ENGINE_NAMESPACE"],
        )
    )


async def run_worker(engine: tuple[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    address, namespace = engine
    environment = {
        **os.environ,
        "AGENTGEN_TEST_ENGINE_ADDRESS": address,
        "AGENTGEN_TEST_ENGINE_NAMESPACE": namespace,
    }
    return await asyncio.to_thread(
        subprocess.run,
        [str(AGENTGEN), "worker", "--task-queue", "q", "--app",
         "tests.engines.test_worker_command:engine_runtime", *options],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip


async def test_an_address_alone_keeps_the_engines_namespace(
    temporal: WorkflowEnvironment,
) -> None:
    # The engine's own server is unreachable: only --address says where to poll, and the
    # engine's namespace (which does not exist there) is the one asked for, not "default".
    address = temporal.client.service_client.config.target_host
    done = await run_worker(("127.0.0.1:1", "engine-namespace"), "--address", address)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert f"namespace 'engine-namespace' does not exist on {address}" in done.stderr


async def test_a_namespace_alone_keeps_the_engines_server(temporal: WorkflowEnvironment) -> None:
    address = temporal.client.service_client.config.target_host
    done = await run_worker((address, "default"), "--namespace", "other-namespace")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert f"namespace 'other-namespace' does not exist on {address}" in done.stderr
