"""Real servers for the registry tests, on 127.0.0.1 only.

``redis-server`` (the Debian package, installed by ``make test``) runs once per session on a
free loopback port; registries run with uvicorn in the test's own event loop (or as separate
processes where a test kills them). Nothing listens anywhere else.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentgen.runtime.registry.admission import Limits
from agentgen.runtime.registry.auth import TokenTable
from agentgen.runtime.registry.redis_store import RedisStore
from agentgen.runtime.registry.service import ServiceConfig, create_app
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from agentgen.runtime.registry.store import Store

ROOT = Path(__file__).resolve().parents[2]
#: Short leases and deadlines so that expiry happens within a test.
FAST = Limits(min_lease_ms=200, max_lease_ms=60_000, call_timeout_ms=20_000)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class RedisServer:
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


def start_redis_server(folder: Path) -> RedisServer:
    """A redis-server of its own on a free loopback port, answering once this returns."""
    binary = shutil.which("redis-server")
    assert binary, "redis-server is not installed: `make test` installs it (apt-get)"
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder), "--protected-mode", "yes", "--loglevel", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            pass
        assert process.poll() is None, "redis-server exited at start"
        assert time.monotonic() < deadline, "redis-server did not answer within 10 s"
        time.sleep(0.05)
    return RedisServer(port, process)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = start_redis_server(tmp_path_factory.mktemp("redis"))
    yield server
    server.process.terminate()
    server.process.wait(10)


STORES = ["sqlite-file", "sqlite-memory", "redis"]


def make_store(kind: str, tmp_path: Path, redis: RedisServer | None) -> Store:
    if kind == "sqlite-file":
        return SQLiteStore(str(tmp_path / "registry.db"), redelivery_ms=500)
    if kind == "sqlite-memory":
        return SQLiteStore(":memory:", redelivery_ms=500)
    assert redis is not None
    return RedisStore(redis.url, namespace=f"test:{uuid.uuid4().hex}", redelivery_ms=500)


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
async def store(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Store]:
    redis = request.getfixturevalue("redis_server") if store_kind == "redis" else None
    the_store = make_store(store_kind, tmp_path, redis)
    await the_store.open()
    yield the_store
    await the_store.close()


@dataclass
class Running:
    url: str
    app: Any
    store: Store


@asynccontextmanager
async def running_registry(
    store: Store,
    *,
    tokens: TokenTable | None = None,
    limits: Limits = FAST,
    config: ServiceConfig | None = None,
) -> AsyncIterator[Running]:
    """A registry served by uvicorn on a free loopback port, in this event loop."""
    import uvicorn

    app = create_app(store, tokens=tokens, limits=limits, config=config)
    # IPPROTO_TCP given explicitly: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
    # sockets that say so, and a response written as headers then body otherwise waits for a
    # delayed ACK (about 40 ms) on every request.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise AssertionError("the registry stopped before it started")
            await asyncio.sleep(0.01)
        yield Running(f"http://127.0.0.1:{port}", app, store)
    finally:
        server.should_exit = True
        await task
        sock.close()


@pytest.fixture
async def registry(store: Store) -> AsyncIterator[Running]:
    async with running_registry(store) as running:
        yield running


# --- registry processes (for the tests that kill them) ---------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    env.pop("AGENTGEN_REGISTRY_TOKENS", None)
    env.pop("AGENTGEN_REGISTRY_TOKENS_FILE", None)
    return env


def start_registry_process(store: str, port: int, *extra: str) -> subprocess.Popen[bytes]:
    """``agentgen registry serve`` in its own process; returns once it answers /health."""
    process = subprocess.Popen(
        [sys.executable, "-m", "agentgen.codegen.cli", "registry", "serve", "--store", store,
         "--port", str(port), "--min-lease", "200ms", "--call-timeout", "30s", *extra],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_healthy(process, port)
    except BaseException:
        # A registry that never answered is not left running behind the failed test.
        process.kill()
        process.wait(timeout=10)
        raise
    return process


def wait_healthy(process: subprocess.Popen[bytes], port: int, seconds: float = 20) -> None:
    import httpx2

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = process.stderr.read().decode() if process.stderr else ""
            raise AssertionError(f"the registry process exited ({process.returncode}): {err}")
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=0.5).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError("the registry process did not answer /health in time")


def python_process(code: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
