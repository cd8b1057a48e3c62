"""The engine seam: what runs an agent's activities.

The in-memory engine runs a run's activities in the caller's event loop (tests, single-process
apps); a durable engine runs the same activities as workflow steps, with the same application
code. Either way the engine is handed the :class:`RunHost` whose registrations the run reads.
"""

from __future__ import annotations

from typing import Protocol

from agentgen.runtime.runs.host import RunHost
from agentgen.runtime.runs.requests import RunOutcome, RunRequest

__all__ = ["Engine"]


class Engine(Protocol):
    async def run(self, host: RunHost, request: RunRequest) -> RunOutcome: ...
