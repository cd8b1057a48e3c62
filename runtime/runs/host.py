"""What a run needs from the application object that started it, as a narrow protocol.

The run loop, its catalogs and its execution look up agents, models and registries through
:class:`RunHost`; :class:`agentgen.runtime.Runtime` implements it. Depending
on this protocol rather than on the ``Runtime`` class keeps the loop free of the application's
wiring (and the import graph free of cycles), and lets a durable engine host runs its own way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from agentgen.runtime.agents.definition import AgentDefinition, RunPolicy
from agentgen.runtime.agents.executors import ToolsetExecutor
from agentgen.runtime.agents.planning import Planner
from agentgen.runtime.contracts.limits import DEFAULT_REGISTRY_TIMEOUT
from agentgen.runtime.model_client import ModelClient
from agentgen.runtime.registry.client import RegistryClient, ResultStream
from agentgen.runtime.runs.confirmation import Confirmer
from agentgen.runtime.telemetry.config import Telemetry

__all__ = ["AgentRegistration", "RegistryRegistration", "RegistrySettings", "RunHost"]


@dataclass(frozen=True)
class AgentRegistration:
    definition: AgentDefinition
    planner: Planner
    executors: Mapping[str, ToolsetExecutor]


@dataclass(frozen=True)
class RegistryRegistration:
    name: str
    client: RegistryClient
    result_stream: ResultStream
    #: Seconds one request to the registry may take (the design's ``Timeout(...)``).
    timeout: float = DEFAULT_REGISTRY_TIMEOUT


class RegistrySettings(Protocol):
    """What the runtime reads of a registry's generated settings (``registries.REGISTRIES``)."""

    @property
    def name(self) -> str: ...

    @property
    def timeout(self) -> float | None: ...


class RunHost(Protocol):
    """The registrations a run reads (its child runs, agents exposed as tools, read the same
    host)."""

    @property
    def policy(self) -> RunPolicy:
        """The policy every run gets on top of its agent's own."""
        ...

    @property
    def confirmer(self) -> Confirmer | None: ...

    @property
    def telemetry(self) -> Telemetry:
        """What the application decided about spans, metrics and payloads."""
        ...

    def seal(self) -> None:
        """Close registration after checking that what the registered agents need is there
        (idempotent): a run started outside :meth:`Runtime.run` checks it too."""
        ...

    def agent(self, agent_id: str) -> AgentRegistration: ...

    def model(self, model_id: str) -> ModelClient: ...

    def registry(self, name: str) -> RegistryRegistration: ...
