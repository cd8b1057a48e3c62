"""Workers: the processes that run durable runs' workflows and activities.

A worker is built from the application's own ``Runtime`` (``module:factory``, the function
that wires it: models, registries, agents, confirmer), so its activities see exactly what the
application registered. ``agentgen worker --task-queue Q --app module:factory`` runs one;
:func:`build_worker` builds one inside a process that has its runtime at hand (tests, an
application that starts its own worker).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import signal
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from google.protobuf.json_format import ParseError
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from agentgen.runtime.engines.temporal.activities import HEARTBEAT_THROTTLE, RunActivities
from agentgen.runtime.engines.temporal.client import (
    DEFAULT_ADDRESS,
    TemporalEngine,
    agentgen_client,
)
from agentgen.runtime.engines.temporal.converter import data_converter
from agentgen.runtime.engines.temporal.namespaces import NamespaceNotFoundError, require_namespace
from agentgen.runtime.engines.temporal.payload_limits import DEFAULT_MAX_PAYLOAD_BYTES
from agentgen.runtime.engines.temporal.workflow import WORKFLOW_NAME, AgentRunWorkflow
from agentgen.runtime.runs.host import RunHost

__all__ = [
    "AddressError",
    "AppFactoryError",
    "AppLoadError",
    "NamespaceNotFoundError",
    "build_worker",
    "load_app",
    "replay",
    "sandbox_runner",
    "serve",
]


class AppLoadError(Exception):
    """``--app module:factory`` does not name a function that returns a runtime."""


class AddressError(ValueError):
    """``--address`` is not an address the Temporal SDK can connect to (a host name it cannot
    encode, a port out of range)."""


class AppFactoryError(Exception):
    """The application's factory raised (the cause is its exception)."""


def sandbox_runner() -> SandboxedWorkflowRunner:
    """The SDK's sandbox, with agentgen's modules passed through: they are imported once, not
    again for every workflow, and the workflow calls only their deterministic code."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules("agentgen")
    )


def build_worker(
    client: Client,
    host: RunHost,
    task_queue: str,
    *,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    heartbeat_interval: float | None = None,
    **options: Any,
) -> Worker:
    """A worker for ``task_queue`` whose activities run against ``host`` (the application's
    sealed ``Runtime``); an activity's answer over ``max_payload_bytes`` (the server's blob
    size limit) fails it for good. Running activities heartbeat every third of their run's
    ``heartbeat_timeout``, at most every ``heartbeat_interval`` seconds (without one, at most
    every 10 s: :func:`~.activities.heartbeat_every`), and the SDK sends each at once (its
    throttle, 80% of the heartbeat timeout by default, is set to 1 s, or to a shorter interval
    given): a cancelled run's activities hear of it within about that interval, and each
    heartbeat is a request to the server. ``options`` go to ``temporalio.worker.Worker``."""
    activities = RunActivities(host, max_payload_bytes, heartbeat_interval).all()
    shortest = HEARTBEAT_THROTTLE if heartbeat_interval is None else heartbeat_interval
    throttle = timedelta(seconds=min(shortest, HEARTBEAT_THROTTLE))
    options.setdefault("max_heartbeat_throttle_interval", throttle)
    options.setdefault("default_heartbeat_throttle_interval", throttle)
    seal: Callable[[], None] | None = getattr(host, "seal", None)
    if seal is not None:
        seal()  # what the runtime checks before its first run, checked before any activity
    return Worker(
        agentgen_client(client),
        task_queue=task_queue,
        workflows=[AgentRunWorkflow],
        activities=activities,
        workflow_runner=sandbox_runner(),
        **options,
    )


async def replay(histories: Sequence[WorkflowHistory | str]) -> None:
    """Replay run histories (``WorkflowHistory``, or their JSON export: ``to_json()``, or the
    Temporal CLI's and UI's) against this release's workflow code: raises if the code would
    take another path than a history took (a change that needs ``workflow.patched``, see
    docs/engines.md)."""
    if isinstance(histories, str):  # would be replayed character by character
        raise TypeError("replay takes a list of histories: replay([history_json])")
    checked = [_history(index, given) for index, given in enumerate(histories)]
    replayer = Replayer(
        workflows=[AgentRunWorkflow],
        data_converter=data_converter(),
        workflow_runner=sandbox_runner(),
    )
    for history in checked:
        await replayer.replay_workflow(history)


def _history(index: int, given: WorkflowHistory | str) -> WorkflowHistory:
    """A whole history of an agentgen run, checked before replaying: the SDK's replayer
    hangs on a history whose first event is not the workflow's start."""
    export = "export it again (temporal workflow show --workflow-id ID --output json)"
    history = given
    if isinstance(given, str):
        try:
            history = WorkflowHistory.from_json(f"history-{index}", given)
        except (ValueError, ParseError) as exc:  # JSONDecodeError is a ValueError
            raise ValueError(
                f"history {index}: not a Temporal workflow history in JSON ({exc}); {export}"
            ) from None
    assert isinstance(history, WorkflowHistory)
    events = list(history.events)
    if not events or events[0].event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        raise ValueError(
            f"history {index}: does not begin with the workflow's start (a whole history is "
            f"needed); {export}"
        )
    name = events[0].workflow_execution_started_event_attributes.workflow_type.name
    if name != WORKFLOW_NAME:
        raise ValueError(
            f"history {index}: a run of workflow {name!r}, not of agentgen's {WORKFLOW_NAME!r}"
        )
    return history


def load_app(reference: str) -> Callable[[], Any]:
    """The factory ``module:function`` names."""
    module_name, _, name = reference.partition(":")
    if not module_name or not name:
        raise AppLoadError(f"--app {reference!r}: expected module:factory (a function name)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AppLoadError(f"--app {reference!r}: cannot import {module_name!r}: {exc}") from exc
    factory = getattr(module, name, None)
    if not callable(factory):
        raise AppLoadError(f"--app {reference!r}: {module_name} has no function {name!r}")
    return factory  # type: ignore[no-any-return]


async def runtime_of(reference: str) -> RunHost:
    """Call the factory ``reference`` names (plain or ``async``) and check what it returned."""
    factory = load_app(reference)
    try:
        made = factory()
        if inspect.isawaitable(made):
            made = await made
    except Exception as exc:
        raise AppFactoryError(f"--app {reference!r} raised {type(exc).__name__}: {exc}") from exc
    if not all(callable(getattr(made, name, None)) for name in ("agent", "model", "registry")):
        raise AppLoadError(
            f"--app {reference!r} returned {type(made).__name__}, not an agentgen Runtime"
        )
    host: RunHost = made
    return host


async def serve(
    reference: str,
    *,
    task_queue: str,
    address: str | None = None,
    namespace: str | None = None,
    ready: Callable[[str], None] | None = None,
    **options: Any,
) -> None:
    """Run a worker for the application ``reference`` names until SIGINT or SIGTERM.

    The server is ``address`` and the namespace ``namespace`` when given, each else the
    runtime's own ``TemporalEngine``'s (giving one keeps the engine's other: a worker given only
    an address must not poll another namespace than the runs are started in), else the local
    default. ``ready`` is told when the worker polls; ``options`` go to
    ``temporalio.worker.Worker``.
    """
    host = await runtime_of(reference)
    engine = getattr(host, "engine", None)
    if address is None and isinstance(engine, TemporalEngine):
        client = await engine.client()
        if namespace is not None and namespace != client.namespace:
            config = client.config()
            config["namespace"] = namespace
            client = Client(**config)
    else:
        engine_namespace = engine.namespace if isinstance(engine, TemporalEngine) else "default"
        try:
            client = await Client.connect(
                address or DEFAULT_ADDRESS,
                namespace=namespace or engine_namespace,
                data_converter=data_converter(),
            )
        except ValueError as exc:  # the SDK refuses the address itself, before connecting
            raise AddressError(
                f"--address {address!r}: not an address Temporal can connect to ({exc}); give "
                "host:port, such as 127.0.0.1:7233"
            ) from None
    # Checked before the worker starts: the SDK's worker finds out only once it runs (after
    # the worker would have said it polls), and fails with the server's raw status.
    await require_namespace(client, "--namespace")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    async with build_worker(client, host, task_queue, **options):
        if ready is not None:
            ready(
                f"agentgen worker: polling task queue {task_queue!r} on "
                f"{client.service_client.config.target_host} (namespace {client.namespace})"
            )
        await stop.wait()
