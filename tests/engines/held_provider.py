"""The providers of the crash test, in the test process: they count what they execute and hold
each execution until the test releases it, so that a worker can be killed at a known point.

* The ledger toolset is served to the real registry service with the provider SDK
  (:func:`serving_ledger`); worker processes reach it through the registry's HTTP client.
* ``/charge`` is a plain provider endpoint (:class:`ChargeEndpoint`, over HTTP on 127.0.0.1),
  which the compiled tool's executor calls from the worker (:func:`charge`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentgen.runtime.agents.executors import ToolContext
from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.registry import api
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.http_client import HttpRegistryClient
from agentgen.runtime.registry.provider import ServeOptions, ServeReport, serve_toolset

#: How long a held execution waits for the test before it goes on by itself.
HOLD_SECONDS = 120


@dataclass
class Provider:
    """What the providers did: every execution, each held until released."""

    executions: list[dict[str, Any]] = field(default_factory=list)
    started: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def execute(self, what: dict[str, Any]) -> None:
        with self.lock:
            self.executions.append(what)
        self.started.set()
        self.release.wait(timeout=HOLD_SECONDS)


@dataclass
class Ledger:
    """The ledger toolset's executor (JSON values in and out) for one provider revision."""

    provider: Provider
    #: The revision's result for an amount paid.
    answer: Callable[[int], dict[str, Any]]

    async def execute(self, tool_id: str, payload: Any, context: ToolContext) -> Any:
        what = {"tool": tool_id, "run_id": context.run_id, "call_id": context.tool_call_id}
        await asyncio.to_thread(self.provider.execute, {**what, **payload})
        return self.answer(payload["amount"])


class _Client(HttpRegistryClient):
    """The provider's registry client, remembering why its registrations were refused."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.refusals: list[str] = []

    async def register(self, toolset: ToolsetDeclaration, **kwargs: Any) -> api.RegisterResponse:
        try:
            return await super().register(toolset, **kwargs)
        except RegistryError as exc:
            self.refusals.append(exc.code)
            raise


@dataclass
class Serving:
    """A provider revision being served: its registration token (once admitted) and report."""

    task: asyncio.Task[ServeReport]
    stop: asyncio.Event
    registered: asyncio.Future[str]
    #: The codes of the registry's refusals of its registration (the SDK tries again).
    refusals: list[str]

    async def token(self, timeout: float) -> str:
        """The registration token, once admitted (what stopped the provider, if it stopped
        before)."""
        admitted: asyncio.Future[Any] = asyncio.shield(self.registered)
        await asyncio.wait(
            {self.task, admitted},
            timeout=timeout,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if self.registered.done():
            return self.registered.result()
        if self.task.done():
            raise AssertionError(f"the provider stopped unregistered: {self.task.result()!r}")
        raise AssertionError(f"the provider was not admitted within {timeout} s")


@contextlib.asynccontextmanager
async def serving_ledger(
    url: str,
    provider: Provider,
    declaration: ToolsetDeclaration,
    revision: str,
    answer: Callable[[int], dict[str, Any]],
) -> AsyncIterator[Serving]:
    """Serve ``declaration`` as ``revision`` with the provider SDK until the block ends (or
    ``stop`` is set: it then drains, finishing the calls it holds, and releases its lease). A
    revision that replaces a live one registers once that one's leases are gone."""
    registered: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    options = ServeOptions(
        provider_id=f"ledger-{revision}",
        lease_seconds=2,
        claim_wait_seconds=0.5,
        # A draining provider keeps its lease while the test holds its call.
        drain_seconds=HOLD_SECONDS,
        handle_signals=False,
    )
    client = _Client(url)
    async with client:
        task = asyncio.create_task(
            serve_toolset(
                client,
                declaration,
                Ledger(provider, answer),
                revision=revision,
                options=options,
                stop=stop,
                on_registered=registered.set_result,
            )
        )
        try:
            yield Serving(task, stop, registered, client.refusals)
        finally:
            provider.release.set()
            stop.set()
            await asyncio.wait_for(task, 30)


class ChargeEndpoint:
    """A plain provider endpoint: ``POST /charge {"amount": n}`` charges ``n``."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.provider.execute({"tool": "charge", **body})
                data = json.dumps({"charged": body["amount"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the worker that asked was killed meanwhile
                    self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.http.server_address[:2]
        return f"http://{host!s}:{port}/charge"

    def __enter__(self) -> ChargeEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.provider.release.set()
        self.http.shutdown()
        self.http.server_close()


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=HOLD_SECONDS + 10) as reply:
        return json.loads(reply.read())


async def charge(url: str, amount: int) -> dict[str, Any]:
    """What the compiled tool's executor calls: the provider endpoint at ``url``."""
    reply: dict[str, Any] = await asyncio.to_thread(_post, url, {"amount": amount})
    return reply
