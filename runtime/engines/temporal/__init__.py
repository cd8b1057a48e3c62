"""Durable runs on Temporal, with the same application code.

``Runtime(engine=TemporalEngine(task_queue=...))`` runs agents as Temporal workflows; workers
(``agentgen worker --task-queue Q --app module:factory``, or :func:`build_worker`) run the
workflow and its activities against the application's own runtime. The run loop is the one the
in-memory engine runs (:mod:`agentgen.runtime.runs.loop`), as workflow code. See
docs/engines.md. Needs the ``temporal`` extra (``pip install 'agentgen[temporal]'``).
"""

from agentgen.runtime.engines.temporal.client import (
    RunCancelledError,
    TemporalEngine,
    agentgen_client,
)
from agentgen.runtime.engines.temporal.converter import data_converter
from agentgen.runtime.engines.temporal.namespaces import NamespaceNotFoundError
from agentgen.runtime.engines.temporal.payload_limits import PayloadTooLargeError
from agentgen.runtime.engines.temporal.servers import (
    ServerNotInstalledError,
    dev_server_path,
    time_skipping_server_path,
)
from agentgen.runtime.engines.temporal.settings import TemporalSettings
from agentgen.runtime.engines.temporal.worker import AppLoadError, build_worker, replay, serve
from agentgen.runtime.engines.temporal.workflow import AgentRunWorkflow

__all__ = [
    "AgentRunWorkflow",
    "AppLoadError",
    "NamespaceNotFoundError",
    "PayloadTooLargeError",
    "RunCancelledError",
    "ServerNotInstalledError",
    "TemporalEngine",
    "TemporalSettings",
    "agentgen_client",
    "build_worker",
    "data_converter",
    "dev_server_path",
    "replay",
    "serve",
    "time_skipping_server_path",
]
