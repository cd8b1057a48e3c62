"""A registry served inside this process: the real service, for trials, tests and docs.

``LocalRegistry()`` runs what ``agentgen registry serve`` runs (the same ASGI application
under uvicorn), on a free 127.0.0.1 port, in a thread with its own event loop, so synchronous
code and ``asyncio.run`` alike can talk to it over HTTP::

    with LocalRegistry() as registry:
        client = HttpRegistryClient(registry.url)
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from types import TracebackType

from agentgen.runtime.registry.admission import Limits
from agentgen.runtime.registry.auth import TokenTable
from agentgen.runtime.registry.service import ServiceConfig, create_app
from agentgen.runtime.registry.store import Store

__all__ = ["LocalRegistry"]


class LocalRegistry:
    """The registry service on ``self.url`` until :meth:`close` (or the ``with`` block ends)."""

    def __init__(
        self,
        store: Store | str = "memory",
        *,
        tokens: TokenTable | None = None,
        limits: Limits | None = None,
        config: ServiceConfig | None = None,
        start_timeout: float = 30.0,
    ) -> None:
        import uvicorn
        from starlette.types import Receive, Scope, Send

        service = create_app(store, tokens=tokens, limits=limits, config=config)
        #: What the application's start (opening the store, verifying its catalog) raised:
        #: uvicorn only logs it and ends with SystemExit(3), which named nothing.
        self._start_failure: BaseException | None = None

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            try:
                await service(scope, receive, send)
            except BaseException as exc:
                if scope["type"] == "lifespan" and self._start_failure is None:
                    self._start_failure = exc
                raise

        # IPPROTO_TCP given explicitly: asyncio disables Nagle's algorithm only on sockets that
        # say they are TCP, and responses would otherwise wait for delayed ACKs.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._socket = sock
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self._server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
        )
        #: What ended the serving thread, if anything did; raised by the constructor (a start
        #: that failed) or by :meth:`close` (a failure while serving), once.
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name="agentgen-registry", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + start_timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                failure, self._failure = self._start_failure or self._failure, None
                self.close()
                reason = f"{type(failure).__name__}: {failure}" if failure else "see the log above"
                raise RuntimeError(f"the local registry did not start: {reason}") from failure
            time.sleep(0.01)

    def _serve(self) -> None:
        try:
            asyncio.run(self._server.serve(sockets=[self._socket]))
        except BaseException as exc:  # reported by the constructor or close()
            self._failure = exc

    def close(self) -> None:
        """Stop serving; raises ``RuntimeError`` if the service failed while it served (its
        requests may have failed with it), so that a test or trial does not pass over it."""
        self._server.should_exit = True
        self._thread.join(30)
        self._socket.close()
        failure, self._failure = self._failure, None
        if failure is not None:
            raise RuntimeError(
                f"the local registry at {self.url} failed while serving: "
                f"{type(failure).__name__}: {failure}"
            ) from failure

    def __enter__(self) -> LocalRegistry:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LocalRegistry({self.url!r})"
