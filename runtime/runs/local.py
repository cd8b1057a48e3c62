"""Runs in process: the run loop with every step run directly, against the host.

This is what the in-memory engine runs; a durable engine runs the same loop and the same step
functions, as workflow code and activities.
"""

from __future__ import annotations

import uuid

from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.runs.execution import ExecutionContext, LocalCallSteps
from agentgen.runtime.runs.host import RunHost
from agentgen.runtime.runs.loop import RunState, drive, outcome
from agentgen.runtime.runs.plan_step import plan
from agentgen.runtime.runs.requests import RunOutcome, RunRequest
from agentgen.runtime.runs.steps import Planned, PlanTask
from agentgen.runtime.telemetry.config import activated
from agentgen.runtime.telemetry.spans import Run

__all__ = ["LocalSteps", "run_agent"]


class LocalSteps(LocalCallSteps):
    """Every step of a run, in process; accepted calls stay objects between steps."""

    async def plan(self, task: PlanTask) -> Planned[AcceptedCall]:
        return await plan(self.context.host, task)

    async def boundary(self, state: RunState[AcceptedCall]) -> None:
        """Nothing to do between rounds in process."""


async def run_agent(
    host: RunHost, request: RunRequest, *, tool_timeout: float | None = None
) -> RunOutcome:
    """Run an agent to completion in process, as an ``invoke_agent`` span under the host's
    telemetry; ``tool_timeout`` bounds each of its tools (see
    :class:`~agentgen.runtime.engines.memory.InMemoryEngine`)."""
    registration = host.agent(request.agent_id)
    state: RunState[AcceptedCall] = RunState.start(request, request.run_id or uuid.uuid4().hex)
    steps = LocalSteps(ExecutionContext(host, registration, state.run, tool_timeout=tool_timeout))
    with (
        activated(host.telemetry),
        Run(
            request.agent_id,
            state.run.run_id,
            engine="memory",
            parent_run_id=request.parent_run_id,
            parent_tool_call_id=request.parent_tool_call_id,
        ) as span,
    ):
        result = await drive(state, steps)
        span.finished(tool_calls=result.tool_calls, child_runs=len(result.child_runs))
    return outcome(result, result.accepted)
