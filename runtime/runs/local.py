"""Runs in process: the run loop with every step run directly, against the host.

This is what the in-memory engine runs; a durable engine runs the same loop and the same step
functions, as workflow code and activities. A child run (an agent exposed as a tool) runs here
too, with its parent's tool timeout, so that what it cost reaches its parent even when it
fails: the loop and the planning step in flight both know it, and nothing else would. A run that
fails (or is cancelled) says what it cost on the exception it raises
(:func:`~agentgen.runtime.runs.requests.run_usage`), for its parent and for its client alike.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from agentgen.runtime.messages import ToolResultPart
from agentgen.runtime.model_client import Usage
from agentgen.runtime.registry.client import CallRef
from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.runs.execution import (
    ExecutionContext,
    admit,
    agent_result,
    await_outcome,
    call_executor,
    decide,
    deny,
    prepare,
)
from agentgen.runtime.runs.host import RunHost
from agentgen.runtime.runs.loop import ChildRunFailed, RunState, drive, outcome, run_call
from agentgen.runtime.runs.model_calls import UsageMeter
from agentgen.runtime.runs.plan_step import plan
from agentgen.runtime.runs.requests import RunOutcome, RunRequest, record_run_usage, run_usage
from agentgen.runtime.runs.steps import (
    Admission,
    ChildOutcome,
    ConfirmationDecision,
    ConfirmationRequest,
    Planned,
    PlanTask,
    Prepared,
)
from agentgen.runtime.telemetry.config import activated
from agentgen.runtime.telemetry.spans import Run

__all__ = ["LocalCallSteps", "LocalSteps", "execute", "run_agent"]


class LocalCallSteps:
    """The execution steps run in process, against the context's host: the confirmer is the
    runtime's, a child run runs in process with the context's tool timeout (as the in-memory
    engine runs every run)."""

    def __init__(self, context: ExecutionContext) -> None:
        self.context = context

    async def prepare(self, accepted: AcceptedCall) -> Prepared:
        return prepare(self.context, accepted, confirmable=self.context.host.confirmer is not None)

    async def confirm(self, request: ConfirmationRequest) -> ConfirmationDecision:
        confirmer = self.context.host.confirmer
        assert confirmer is not None  # prepare ends calls nobody can confirm
        return await decide(confirmer, request)

    async def deny(self, accepted: AcceptedCall, arguments: Any) -> ToolResultPart:
        return deny(accepted, arguments)

    async def execute(self, accepted: AcceptedCall) -> ToolResultPart:
        return await call_executor(self.context, accepted)

    async def admit(self, accepted: AcceptedCall) -> Admission:
        return await admit(self.context, accepted)

    async def await_outcome(self, accepted: AcceptedCall, ref: CallRef) -> ToolResultPart:
        return await await_outcome(self.context, accepted, ref)

    async def child(self, request: RunRequest) -> ChildOutcome:
        # Named here, so that a child run that fails can be named too.
        request = replace(request, run_id=request.run_id or uuid.uuid4().hex)
        try:
            child = await run_agent(
                self.context.host, request, tool_timeout=self.context.tool_timeout
            )
        except Exception as exc:
            # run_agent records it on whatever the run raises, once the run started.
            spent = run_usage(exc)
            usage = Usage() if spent is None else spent
            raise ChildRunFailed(exc, usage, request.run_id) from exc
        return ChildOutcome(child.run_id, child.final_text, child.final_value, child.usage)

    async def agent_result(self, accepted: AcceptedCall, child: ChildOutcome) -> ToolResultPart:
        return agent_result(accepted, child)


class LocalSteps(LocalCallSteps):
    """Every step of a run, in process; accepted calls stay objects between steps."""

    def __init__(self, context: ExecutionContext) -> None:
        super().__init__(context)
        #: What the planning step in flight has cost so far (it failed, if the run did).
        self.planning = UsageMeter()

    async def plan(self, task: PlanTask) -> Planned[AcceptedCall]:
        self.planning = UsageMeter()
        planned = await plan(self.context.host, task, meter=self.planning)
        self.planning = UsageMeter()  # the loop counts its answer's usage
        return planned

    async def boundary(self, state: RunState[AcceptedCall]) -> None:
        """Nothing to do between rounds in process."""


async def execute(context: ExecutionContext, accepted: AcceptedCall) -> ToolResultPart:
    """Execute one call in process, with the steps every run takes (prepare, confirm, run);
    whatever goes wrong becomes the call's tool error result, so that the other calls of the
    round keep their results."""
    steps = LocalCallSteps(context)
    return await run_call(steps, accepted.call, accepted, context.children, UsageMeter())


async def run_agent(
    host: RunHost, request: RunRequest, *, tool_timeout: float | None = None
) -> RunOutcome:
    """Run an agent to completion in process, as an ``invoke_agent`` span under the host's
    telemetry; ``tool_timeout`` bounds each of its tools (see
    :class:`~agentgen.runtime.engines.memory.InMemoryEngine`). A run that fails, or is
    cancelled, has no outcome to say what its model calls cost (its child runs' included): the
    exception it raises carries it (``run_usage``), for its client and for its parent."""
    registration = host.agent(request.agent_id)
    state: RunState[AcceptedCall] = RunState.start(request, request.run_id or uuid.uuid4().hex)
    steps = LocalSteps(ExecutionContext(host, registration, state.run, tool_timeout=tool_timeout))
    try:
        with (
            activated(host.telemetry),
            Run(
                request.agent_id,
                state.run.run_id,
                engine="memory",
                parent_run_id=request.parent_run_id,
                parent_tool_call_id=request.parent_tool_call_id,
                call_depth=request.call_depth,
            ) as span,
        ):
            result = await drive(state, steps)
            span.finished(tool_calls=result.tool_calls, child_runs=len(result.child_runs))
    except BaseException as exc:
        # The loop counted every step that answered; the step in flight failed (or was
        # cancelled), and its meter holds what it got until then.
        record_run_usage(exc, state.usage + steps.planning.usage)
        raise
    return outcome(result, result.accepted)
