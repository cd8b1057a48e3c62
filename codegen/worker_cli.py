"""``agentgen worker``: run a Temporal worker for an application's durable runs.

The worker is built from the application's own wiring (``--app module:factory``, the function
that returns its ``Runtime``), so its activities see exactly the models, registries, agents and
executors the application registered. It runs until SIGINT or SIGTERM.

Exits as every command does: 2 when something it was given cannot be used (``--app`` that
cannot be loaded, a server it cannot reach, a namespace that does not exist, the Temporal SDK not
installed), 1 when the application's factory raised (its own code, as a design's is for
``agentgen gen``).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import traceback
from datetime import timedelta

import click

from agentgen.codegen.exits import unusable

__all__ = ["worker"]


def _task_queue(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """The SDK takes a blank task queue, and the worker then fails at its first poll."""
    if not value.strip():
        raise click.BadParameter("give the name of a task queue (it is empty)")
    return value


def _given(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An empty --address or --namespace (``--address "$TEMPORAL_ADDRESS"`` with the variable
    unset) is refused: it was taken as none given, and the worker polled the default server or
    namespace instead."""
    if value is not None and not value.strip():
        what = "the server's host:port" if param.name == "address" else "the namespace"
        raise click.BadParameter(f"give {what}, or leave --{param.name} out (it is empty)")
    return value


@click.command("worker")
@click.option(
    "--task-queue",
    required=True,
    callback=_task_queue,
    help="The Temporal task queue to poll.",
)
@click.option(
    "--app",
    "app",
    required=True,
    metavar="MODULE:FACTORY",
    help="The function that returns the application's wired Runtime (plain or async).",
)
@click.option(
    "--address",
    default=None,
    callback=_given,
    help="The Temporal server (host:port); default: the runtime's TemporalEngine's, else "
    "127.0.0.1:7233.",
)
@click.option(
    "--namespace",
    default=None,
    callback=_given,
    help="The Temporal namespace; default: the runtime's TemporalEngine's, else default.",
)
@click.option(
    "--sticky-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds a run cached by this worker waits for it before any worker takes it (after "
    "this worker is lost, each of its runs waits this long).",
)
@click.option(
    "--max-payload-bytes",
    type=click.IntRange(min=1),
    default=2 * 1024 * 1024,
    show_default=True,
    help="The largest answer an activity may give (the server's limit.blobSize.error); a "
    "larger one fails the run with PayloadTooLargeError. Raise it with the server's limit and "
    "TemporalSettings.max_payload_bytes.",
)
@click.option(
    "--heartbeat-interval",
    type=click.FloatRange(min=0, min_open=True, max=315_576_000_000),
    default=None,
    help="Seconds between a running activity's heartbeats (at most; a third of the run's "
    "heartbeat_timeout when that is shorter): a cancelled run's tools and planning steps hear "
    "of it within about this long, and each heartbeat is a request to the server. Default: a "
    "third of the heartbeat timeout, at most 10 s.",
)
def worker(
    task_queue: str,
    app: str,
    address: str | None,
    namespace: str | None,
    sticky_timeout: float,
    max_payload_bytes: int,
    heartbeat_interval: float | None,
) -> None:
    """Run a Temporal worker for an application's durable runs.

    The worker runs the run workflow and its activities (planning, tool execution, registry
    calls) against the Runtime that MODULE:FACTORY returns, the same factory the application
    starts runs with. It prints one line when it polls, and stops on SIGINT or SIGTERM.

    \b
    Example:
      agentgen worker --task-queue agents --app myapp.wiring:runtime --address 127.0.0.1:7233
    """
    try:
        from agentgen.runtime.engines.temporal.worker import (
            AddressError,
            AppFactoryError,
            AppLoadError,
            NamespaceNotFoundError,
            serve,
        )
    except ImportError as exc:  # the optional SDK is missing
        unusable(
            f"agentgen worker needs the Temporal SDK ({exc}): pip install 'agentgen[temporal]'"
        )
    gc.enable()  # a long-running process: the CLI's no-collection start-up does not apply
    sys.path.insert(0, "")  # --app modules are found from the current folder, like python -m

    def ready(line: str) -> None:
        click.echo(line)
        sys.stdout.flush()

    try:
        asyncio.run(
            serve(
                app,
                task_queue=task_queue,
                address=address,
                namespace=namespace,
                ready=ready,
                sticky_queue_schedule_to_start_timeout=timedelta(seconds=sticky_timeout),
                max_payload_bytes=max_payload_bytes,
                heartbeat_interval=heartbeat_interval,
            )
        )
    except (AppLoadError, AddressError) as exc:
        raise click.UsageError(str(exc)) from None
    except NamespaceNotFoundError as exc:
        unusable(str(exc))
    except AppFactoryError as exc:  # the application's own code: its traceback, then why
        cause = exc.__cause__
        assert cause is not None
        click.echo("".join(traceback.format_exception(cause)).rstrip(), err=True)
        raise click.ClickException(str(exc)) from None
    except RuntimeError as exc:  # the SDK's connection failure
        if "connect" not in str(exc).lower():
            raise
        unusable(f"cannot reach Temporal: {exc}")
