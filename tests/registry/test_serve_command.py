"""``agentgen registry serve`` as an operator runs it: where it says it listens, and what it
says when it cannot listen (a separate process each time, on 127.0.0.1)."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys

import httpx2

from tests.registry.conftest import _env


def serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentgen.codegen.cli", "registry", "serve", "--store", "memory",
         *args],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def test_an_address_in_use_is_named_with_what_to_do() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # Even with uvicorn's own messages silenced, the command says why it stopped.
        process = serve("--port", str(port), "--log-level", "critical")
        _, err = process.communicate(timeout=60)
    assert process.returncode == 2, err
    assert err.startswith(f"error: cannot listen on 127.0.0.1:{port}: "), err
    assert "choose another --port" in err
    assert "agentgen registry: http" not in err  # it never said it served
    assert "Traceback" not in err


def test_port_zero_announces_the_port_it_listens_on() -> None:
    process = serve("--port", "0")
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.match(r"agentgen registry: http://127\.0\.0\.1:(\d+) \(store memory", line)
        assert found, line
        port = int(found[1])
        assert port != 0
        health = httpx2.get(f"http://127.0.0.1:{port}/health", timeout=10)
        assert health.json()["store"] == "memory"
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in err
