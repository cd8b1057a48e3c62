"""The in-memory engine: runs execute directly in the caller's event loop."""

from __future__ import annotations

from agentgen.runtime.runs.host import RunHost
from agentgen.runtime.runs.local import run_agent
from agentgen.runtime.runs.requests import RunOutcome, RunRequest

__all__ = ["InMemoryEngine"]


class InMemoryEngine:
    """Runs planning and execution activities directly with asyncio; agent-as-tool calls run
    as child runs (their own run IDs, linked to the parent) on the same engine."""

    async def run(self, host: RunHost, request: RunRequest) -> RunOutcome:
        return await run_agent(host, request)
