"""Engines run agents. The in-memory engine runs a run's activities in the caller's event loop
(tests, single-process apps); a durable engine runs the same activities as workflow steps,
with the same application code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agentgen.runtime.run import RunOutcome, RunRequest
    from agentgen.runtime.runtime import Runtime


class Engine(Protocol):
    async def run(self, runtime: Runtime, request: RunRequest) -> RunOutcome: ...


class InMemoryEngine:
    """Runs planning and execution activities directly with asyncio; agent-as-tool calls run
    as child runs (their own run IDs, linked to the parent) on the same engine."""

    async def run(self, runtime: Runtime, request: RunRequest) -> RunOutcome:
        from agentgen.runtime.run import run_agent

        return await run_agent(runtime, request)
