"""``agentgen registry ...``: running the registry service.

The service and its libraries (FastAPI, uvicorn, the store clients) are imported inside the
command: the generator's commands never load them.
"""

from __future__ import annotations

import errno
import gc
import signal
import socket
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

import click

from agentgen.codegen.exits import EXIT_UNUSABLE, unusable

if TYPE_CHECKING:
    import uvicorn

__all__ = ["MAX_DURATION_S", "registry"]

#: The longest duration a serve option takes: 100 years, far from the 64-bit milliseconds the
#: stores keep deadlines in.
MAX_DURATION_S = 100 * 365 * 86_400


def _duration_ms(value: str, option: str) -> int:
    from agentgen.dsl.durations import parse_duration

    try:
        seconds = parse_duration(value, hint=f"give the time allowed, or leave {option} out")
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None
    if seconds > MAX_DURATION_S:
        # Deadlines are stored as integer milliseconds (SQLite's 64-bit INTEGER, Redis scores):
        # a longer one failed every call with an OverflowError once the registry was up.
        raise click.BadParameter(
            f"{value} is longer than the registry keeps ({MAX_DURATION_S // 86_400:,} days)",
            param_hint=option,
        )
    return int(seconds * 1000)


@click.group()
def registry() -> None:
    """Run a tool registry: providers publish toolsets to it, consumers resolve and call them."""


@registry.command(short_help="Serve the registry's HTTP API until stopped.")
@click.option(
    "--store",
    default="sqlite:agentgen-registry.db",
    show_default=True,
    help="sqlite:PATH (embedded, survives restarts), memory (nothing survives) or "
    "redis://HOST:PORT/DB (shared by several registry processes).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=9090,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on (0: a free port, printed when the registry starts).",
)
@click.option(
    "--tokens",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="JSON file of bearer tokens and their roles (default: $AGENTGEN_REGISTRY_TOKENS or "
    "$AGENTGEN_REGISTRY_TOKENS_FILE). Without tokens only a loopback address is allowed.",
)
@click.option(
    "--max-body",
    default=1 << 20,
    show_default=True,
    type=click.IntRange(1024),
    help="Largest request body accepted, in bytes (larger: 413 body_too_large).",
)
@click.option("--min-lease", default="45s", show_default=True, help="Shortest provider lease.")
@click.option("--max-lease", default="24h", show_default=True, help="Longest provider lease.")
@click.option(
    "--call-timeout",
    default="10m",
    show_default=True,
    help="How long an admitted call may wait for and run on a provider.",
)
@click.option(
    "--result-retention",
    default="5m",
    show_default=True,
    help="How long a call's outcome is kept after its deadline.",
)
@click.option(
    "--redelivery",
    default="5s",
    show_default=True,
    help="How long a call handed to a provider that never confirmed it waits before another "
    "provider may take it.",
)
@click.option(
    "--log-level",
    default="warning",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    help="The HTTP server's (uvicorn's) log level.",
)
def serve(
    store: str,
    host: str,
    port: int,
    tokens: Path | None,
    max_body: int,
    min_lease: str,
    max_lease: str,
    call_timeout: str,
    result_retention: str,
    redelivery: str,
    log_level: str,
) -> None:
    """Serve the registry's HTTP API (OpenAPI document at /openapi.json) until stopped.

    \b
    Examples:
      agentgen registry serve   # SQLite file agentgen-registry.db, 127.0.0.1:9090, loopback only
      agentgen registry serve --store redis://127.0.0.1:6379/0 --port 9091  # state in Redis
      agentgen registry serve --host 0.0.0.0 --tokens tokens.json  # see docs/registry.md
    """
    # `agentgen` pauses the garbage collector for its short commands; a server runs for long.
    gc.enable()
    import asyncio

    try:
        import uvicorn

        from agentgen.runtime.registry.service import ServiceConfig, create_app
    except ImportError as exc:  # the optional extra is missing: not a bug in agentgen (exit 3)
        _needs_extra(exc)
    from agentgen.runtime.registry.admission import Limits
    from agentgen.runtime.registry.auth import AuthConfigError, TokenTable, is_loopback
    from agentgen.runtime.registry.operations import CatalogCorruptError, RegistryOperations
    from agentgen.runtime.registry.store import StoreError
    from agentgen.runtime.registry.stores import open_store

    limits = Limits(
        min_lease_ms=_duration_ms(min_lease, "--min-lease"),
        max_lease_ms=_duration_ms(max_lease, "--max-lease"),
        call_timeout_ms=_duration_ms(call_timeout, "--call-timeout"),
        result_retention_ms=_duration_ms(result_retention, "--result-retention"),
    )
    if limits.min_lease_ms > limits.max_lease_ms:
        raise click.BadParameter("--min-lease is longer than --max-lease")
    try:
        table = TokenTable.from_file(tokens) if tokens is not None else TokenTable.from_env()
        the_store = open_store(store, redelivery_ms=_duration_ms(redelivery, "--redelivery"))
    except (AuthConfigError, ValueError) as exc:
        unusable(str(exc))
    if table.empty and not is_loopback(host):
        unusable(
            f"refusing to listen on {host}: no registry tokens are configured, so anyone "
            "who can reach the address could publish and call tools. Configure tokens (--tokens "
            "FILE or $AGENTGEN_REGISTRY_TOKENS, see docs/registry.md) or listen on 127.0.0.1."
        )

    async def verify() -> int:
        await the_store.open()
        try:
            return await RegistryOperations(the_store, limits).verify_catalog()
        finally:
            await the_store.close()

    try:
        entries = asyncio.run(verify())
    except (CatalogCorruptError, StoreError) as exc:
        unusable(str(exc))
    except ImportError as exc:  # the Redis client, imported when that store opens
        _needs_extra(exc)
    try:
        sock = _listen(host, port)
    except OSError as exc:
        todo = (
            "Stop whatever uses the address, or choose another --port."
            if exc.errno == errno.EADDRINUSE
            else "--host must name an address of this machine."
        )
        unusable(f"cannot listen on {host}:{port}: {exc.strerror or exc}. {todo}")
    bound = sock.getsockname()[1]  # --port 0: the port the system chose
    where = f"[{host}]" if ":" in host else host
    access = "bearer tokens required" if not table.empty else "open (no tokens: loopback only)"
    click.echo(
        f"agentgen registry: http://{where}:{bound} (store {the_store.description}, {entries} "
        f"toolset(s); {access})",
        err=True,
    )
    app = create_app(
        the_store, tokens=table, limits=limits, config=ServiceConfig(max_body_bytes=max_body)
    )
    # Long polls (claims, results) are cut after a few seconds on shutdown: their clients
    # retry, against this registry once it is back or another one sharing the store.
    server = uvicorn.Server(
        uvicorn.Config(app, log_level=log_level, access_log=False, timeout_graceful_shutdown=3)
    )
    stop = _Stop(server)
    previous = {number: signal.signal(number, stop) for number in _STOP_SIGNALS}
    try:
        server.run(sockets=[sock])
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if not server.started and not stop.received:
        sys.exit(EXIT_UNUSABLE)  # the application did not start (uvicorn logged why)


def _needs_extra(exc: ImportError) -> NoReturn:
    unusable(
        f"agentgen registry serve needs the registry extra ({exc}): "
        "pip install 'agentgen[registry]'"
    )


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Stop:
    """The command's handler of SIGINT and SIGTERM, for as long as the server runs.

    While it serves, uvicorn puts its own handlers in place; once it has shut down it puts this
    one back and raises the signal again, meaning for the default handler (SIGTERM's killed the
    process: exit 143, a failed stop to systemd and Kubernetes, after a clean shutdown). Here a
    stop signal only asks the server to stop, so a stopped registry exits 0. It never raises:
    the event loop still winds down after uvicorn is done (remaining tasks, the default
    executor), and a signal arriving then (a second ``kill``, sent because the first stop took
    a while) ran a handler that raised inside the loop's signal callback, printing a traceback
    or failing the command as a bug.
    """

    def __init__(self, server: uvicorn.Server) -> None:
        self.server = server
        self.received = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        self.server.should_exit = True


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, opened before the registry says where it serves: an address in
    use is refused here, with the command's own message, and ``--port 0`` is resolved."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)  # uvicorn's backlog; connections wait until it serves them
    except OSError:
        sock.close()
        raise
    return sock
