"""``agentgen worker``: its options, and what it says when the application or the server
cannot be used (the crash test in tests/engines runs real workers with it)."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from click.testing import CliRunner

from agentgen.codegen.cli import main
from agentgen.runtime.app import Runtime


def make_runtime() -> Runtime:
    return Runtime()


def broken_factory() -> Runtime:
    raise KeyError("MODEL_API_KEY")


def not_a_runtime() -> dict[str, str]:
    return {}


def worker(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["worker", "--task-queue", "q", *args])
    return result.exit_code, result.stdout, result.stderr


def test_help_names_every_option() -> None:
    result = CliRunner().invoke(main, ["worker", "--help"])
    assert result.exit_code == 0
    for option in (
        "--task-queue",
        "--app MODULE:FACTORY",
        "--address",
        "--namespace",
        "--max-payload-bytes",
        "--heartbeat-interval",
    ):
        assert option in result.stdout
    assert "worker" in CliRunner().invoke(main, ["--help"]).stdout


@pytest.mark.parametrize(
    ("app", "message"),
    [
        ("tests.cli.test_worker_cli", "expected module:factory"),
        ("tests.cli.no_such_module:make", "cannot import 'tests.cli.no_such_module'"),
        ("tests.cli.test_worker_cli:missing", "has no function 'missing'"),
        ("tests.cli.test_worker_cli:not_a_runtime", "returned dict, not an agentgen Runtime"),
    ],
)
def test_an_app_that_cannot_be_used_is_a_usage_error(app: str, message: str) -> None:
    code, _, err = worker("--app", app)
    assert code == 2
    assert message in err


def test_a_failing_factory_shows_its_traceback() -> None:
    code, _, err = worker("--app", "tests.cli.test_worker_cli:broken_factory")
    assert code == 1
    assert "Traceback" in err and 'raise KeyError("MODEL_API_KEY")' in err
    assert "--app 'tests.cli.test_worker_cli:broken_factory' raised KeyError" in err


def test_an_unreachable_server_is_named() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, _, err = worker(
        "--app", "tests.cli.test_worker_cli:make_runtime", "--address", f"127.0.0.1:{port}"
    )
    assert code == 2  # an address the command was given cannot be used
    assert "cannot reach Temporal" in err and f"127.0.0.1:{port}" in err


def test_the_payload_limit_reaches_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentgen.runtime.engines.temporal import worker as worker_module

    given: dict[str, Any] = {}

    async def serve(reference: str, **options: Any) -> None:
        given.update(options, reference=reference)

    monkeypatch.setattr(worker_module, "serve", serve)
    code, _, _ = worker("--app", "m:f", "--max-payload-bytes", "4194304")
    assert code == 0 and given["max_payload_bytes"] == 4 * 1024 * 1024
    code, _, err = worker("--app", "m:f", "--max-payload-bytes", "0")
    assert code == 2 and "--max-payload-bytes" in err


def test_the_heartbeat_interval_reaches_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentgen.runtime.engines.temporal import worker as worker_module

    given: dict[str, Any] = {}

    async def serve(reference: str, **options: Any) -> None:
        given.update(options, reference=reference)

    monkeypatch.setattr(worker_module, "serve", serve)
    code, _, _ = worker("--app", "m:f")
    assert code == 0 and given["heartbeat_interval"] is None  # derived from the timeout
    code, _, _ = worker("--app", "m:f", "--heartbeat-interval", "5")
    assert code == 0 and given["heartbeat_interval"] == 5.0
    code, _, err = worker("--app", "m:f", "--heartbeat-interval", "0")
    assert code == 2 and "--heartbeat-interval" in err


@pytest.mark.parametrize("queue", ["", "  "])
def test_a_blank_task_queue_is_a_usage_error(queue: str) -> None:
    # The SDK accepts it; the worker then said it polled and failed at its first poll.
    result = CliRunner().invoke(
        main,
        ["worker", "--task-queue", queue, "--app", "tests.cli.test_worker_cli:make_runtime"],
    )
    assert result.exit_code == 2
    assert "Invalid value for '--task-queue': give the name of a task queue" in result.stderr


@pytest.mark.parametrize(
    ("address", "message"),
    [
        # The SDK's ValueError was reported as a bug in agentgen (exit 3).
        ("not an address", "--address 'not an address': not an address Temporal can connect to"),
        ("127.0.0.1:99999", "(invalid target URL: invalid port number); give host:port"),
        # Taken as no address: the worker polled the default server.
        ("", "Invalid value for '--address': give the server's host:port"),
    ],
)
def test_an_address_that_cannot_be_used_is_a_usage_error(address: str, message: str) -> None:
    code, _, err = worker("--app", "tests.cli.test_worker_cli:make_runtime", "--address", address)
    assert code == 2
    assert message in err


def test_an_empty_namespace_is_a_usage_error() -> None:
    # Taken as no namespace: the worker polled the engine's, else "default".
    code, _, err = worker("--app", "tests.cli.test_worker_cli:make_runtime", "--namespace", "")
    assert code == 2
    assert "Invalid value for '--namespace': give the namespace, or leave --namespace out" in err
