"""The workflow of a durable run: the shared run loop as workflow code.

:class:`AgentRunWorkflow` runs :func:`~agentgen.runtime.runs.loop.drive`, the loop the
in-memory engine runs, with steps that are Temporal operations: planning, preparing, denying,
executing and admitting calls, waiting for a registry result and validating an agent's answer
are activities; a confirmation is a wait on a workflow update (``agentgen.decide``) that a
client sends after it read the pending request with the ``agentgen.status`` query; an agent
exposed as a tool is a child workflow. Accepted calls live in the workflow's state as their
checkpoints, so replaying a history never reads the current catalog.

Workflow code is deterministic: the loop does no I/O and reads no clock or randomness, child
run IDs come from ``workflow.uuid4()``, and everything else happens in activities. The module
passes the SDK's sandbox: agentgen's own modules are passed through (they hold no state that
workflows change).
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    FailureError,
    TimeoutError,
    TimeoutType,
)

with workflow.unsafe.imports_passed_through():
    from agentgen.runtime.agents.planning import RunContext
    from agentgen.runtime.engines.temporal.attempts import failed_step_usage
    from agentgen.runtime.engines.temporal.payload_limits import check_payload
    from agentgen.runtime.engines.temporal.settings import TemporalSettings
    from agentgen.runtime.engines.temporal.usage_details import failure_usage, usage_detail
    from agentgen.runtime.engines.temporal.wire import (
        ACTIVITY_NAMES,
        ACTIVITY_WHAT,
        AwaitTask,
        CallTask,
        Checkpoint,
        Decide,
        DenyTask,
        ResultTask,
        RunInput,
        RunStatus,
        WorkflowResult,
        WorkflowState,
    )
    from agentgen.runtime.messages import ToolCallPart, ToolResultPart
    from agentgen.runtime.model_client import Usage
    from agentgen.runtime.registry.client import CallRef
    from agentgen.runtime.runs.loop import ChildRunFailed, RunState, StepFailure, drive
    from agentgen.runtime.runs.requests import RunError, RunRequest
    from agentgen.runtime.runs.results import outcome_unknown, timed_out
    from agentgen.runtime.runs.steps import (
        Admission,
        ChildOutcome,
        ConfirmationDecision,
        ConfirmationRequest,
        Planned,
        PlanTask,
        Prepared,
    )

__all__ = ["WORKFLOW_NAME", "AgentRunWorkflow"]

WORKFLOW_NAME = "agentgen.run"
#: Marks the runs that record their usage when cancelled (histories from before replay as
#: they ran).
CANCELLED_USAGE_PATCH = "agentgen.cancelled-usage"
STATUS_QUERY = "agentgen.status"
DECIDE_UPDATE = "agentgen.decide"

T = TypeVar("T")


@workflow.defn(name=WORKFLOW_NAME)
class AgentRunWorkflow:
    """One run of one agent (a child run is a child workflow of its parent's)."""

    def __init__(self) -> None:
        #: Confirmations waiting for a decision, by tool call ID.
        self.pending: dict[str, ConfirmationRequest] = {}
        self.decisions: dict[str, ConfirmationDecision] = {}
        #: Child runs (workflow IDs) running now.
        self.children: list[str] = []

    @workflow.run
    async def run(self, input: RunInput) -> WorkflowResult:
        if input.state is not None:
            state = input.state
        else:
            assert input.request is not None and input.request.run_id
            state = RunState.start(input.request, input.request.run_id)
        steps = _WorkflowSteps(self, input, state.run)
        try:
            result = await drive(state, steps)
            # Unchecked, a result over the limit is refused by the server when the workflow
            # completes: the workflow task fails again and again and the run never ends.
            steps.check(result, "the final result")
            return result
        except asyncio.CancelledError:
            # A cancelled workflow's end carries no details: its memo says what it cost (the
            # steps cancelled in flight as one unreported response each), for its client.
            if workflow.patched(CANCELLED_USAGE_PATCH):
                workflow.upsert_memo(usage_detail(state.usage + steps.withdrawn))
            raise
        except RunError as exc:
            raise _run_failure(str(exc), type(exc).__name__, state.usage) from None
        except _PlanningFailed as failed:
            # The run fails with the step's own error (its type and message), not a wrapper.
            failure, usage = failed.failure, state.usage + failed.usage
            raise _run_failure(str(failure), failure.type_name, usage) from None

    @workflow.query(name=STATUS_QUERY)
    def status(self) -> RunStatus:
        return RunStatus(tuple(self.pending.values()), tuple(self.children))

    @workflow.update(name=DECIDE_UPDATE)
    def decide(self, decision: Decide) -> None:
        self.decisions[decision.tool_call_id] = ConfirmationDecision(
            decision.approved, decision.error
        )

    @decide.validator
    def _pending(self, decision: Decide) -> None:
        call_id = decision.tool_call_id
        if type(decision.approved) is not bool:
            # The converter reads what JSON holds: "no" from a form would approve the call.
            raise TypeError(
                f"run {workflow.info().workflow_id!r}: the decision on tool call {call_id!r} "
                f"must approve with true or deny with false, not {decision.approved!r}"
            )
        if call_id not in self.pending or call_id in self.decisions:
            raise ValueError(
                f"run {workflow.info().workflow_id!r} has no confirmation pending for tool "
                f"call {call_id!r}"
            )


class _Interrupted(Exception):
    """A step that is never repeated ended without an answer, for a reason that is not its
    own failure nor its run's cancellation: ``why`` says what happened to it, in words."""

    def __init__(self, why: str, *, timed_out: float | None = None, lost: bool = False) -> None:
        super().__init__(why)
        self.why = why
        #: The start-to-close timeout that ended it, when that is what happened.
        self.timed_out = timed_out
        #: Whether its worker stopped heartbeating (crashed, or cut off from the server).
        self.lost = lost


#: The failures the SDK and its core give an activity they stopped, by type: the worker shut
#: down before it finished (SIGTERM, a deployment), or an operator paused or reset it.
_STOPPED = {
    "WorkerShutdown": "the worker running it shut down before it finished",
    "ActivityPause": "it was paused (temporal activity pause) while it ran",
    "ActivityReset": "it was reset (temporal activity reset) while it ran",
}


def _interruption(cause: BaseException | None, timeout: float) -> _Interrupted | None:
    """Why a step that ran once with ``timeout`` (its start-to-close) ended without an
    answer, when it is not the step's own failure: a lost or stopped worker, a pause or reset,
    a cancellation that is not its run's, or its timeout."""
    if isinstance(cause, TimeoutError):
        if cause.type == TimeoutType.START_TO_CLOSE:
            return _Interrupted(f"did not finish within {timeout:g} s", timed_out=timeout)
        return _Interrupted("the worker running it was lost", lost=True)  # no heartbeats
    if isinstance(cause, ApplicationError) and cause.type in _STOPPED:
        return _Interrupted(_STOPPED[cause.type])
    if isinstance(cause, CancelledError):
        return _Interrupted("it was cancelled while it ran")
    return None


def _timed_out(exc: BaseException | None) -> bool:
    """Whether an activity failed for good because its start-to-close or schedule-to-close
    timeout passed (a lost worker's heartbeat timeout is not one)."""
    cause = exc.cause if isinstance(exc, ActivityError) else None
    ended = (TimeoutType.START_TO_CLOSE, TimeoutType.SCHEDULE_TO_CLOSE)
    return isinstance(cause, TimeoutError) and cause.type in ended


def _run_cancelled() -> bool:
    """Whether this run itself was cancelled (``engine.cancel``, or its parent's): only then
    does a cancelled step or child run cancel it."""
    return workflow.cancellation_reason() is not None


class _PlanningFailed(Exception):
    """A planning activity failed for good: ``failure`` is its error, ``usage`` what its
    attempts cost."""

    def __init__(self, failure: StepFailure, usage: Usage) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.usage = usage


def _run_failure(message: str, type_name: str, usage: Usage) -> ApplicationError:
    """The failure a run ends with: its error, and what its model calls cost until then (its
    parent, if it is a child run, counts it)."""
    return ApplicationError(message, usage_detail(usage), type=type_name, non_retryable=True)


def _planning_usage(exc: BaseException | None) -> Usage:
    """What a planning activity that failed for good cost: the final account its error carries,
    or the last one its heartbeats carried when it timed out (then a lower bound)."""
    cause = exc.cause if isinstance(exc, ActivityError) else None
    if isinstance(cause, ApplicationError):
        return failed_step_usage(cause.details)
    if isinstance(cause, TimeoutError):
        return failed_step_usage(cause.last_heartbeat_details)
    return Usage.not_reported()


def _child_usage(exc: ChildWorkflowError) -> Usage:
    """What a failed child run cost, as its failure says; one unreported response when it says
    nothing (terminated, timed out, or a worker of an older release ran it)."""
    cause = exc.cause
    usage = failure_usage(cause.details) if isinstance(cause, ApplicationError) else None
    return usage if usage is not None else Usage.not_reported()


def _failure(exc: FailureError) -> StepFailure:
    """A step's failure as the loop reports it: the original type name and message."""
    cause = exc.cause
    while isinstance(cause, ActivityError | ChildWorkflowError) and cause.cause is not None:
        cause = cause.cause
    if isinstance(cause, ApplicationError):
        return StepFailure(cause.type or "ApplicationError", cause.message)
    if cause is not None:
        return StepFailure(type(cause).__name__, str(cause))
    return StepFailure(type(exc).__name__, str(exc))


class _WorkflowSteps:
    """The loop's steps as Temporal operations, for one run."""

    def __init__(self, owner: AgentRunWorkflow, input: RunInput, run: RunContext) -> None:
        self.owner = owner
        self.input = input
        self.run = run
        self.settings: TemporalSettings = input.settings
        s = self.settings
        self.retry = RetryPolicy(
            initial_interval=timedelta(seconds=s.retry_initial_interval),
            backoff_coefficient=s.retry_backoff,
            maximum_interval=timedelta(seconds=s.retry_maximum_interval),
            maximum_attempts=s.retry_maximum_attempts,
        )
        self.once = RetryPolicy(maximum_attempts=1)
        #: Steps that may have called a model and were cancelled in flight (the run was): one
        #: unreported response each, since what they got is not known here.
        self.withdrawn = Usage()

    async def _activity(
        self,
        name: str,
        arg: Any,
        result_type: type[T],
        *,
        timeout: float,
        once: bool = False,
        total: float | None = None,
    ) -> T:
        """Run one activity. Its failure is raised as the loop's :class:`StepFailure` (the
        original type and message), or :class:`_Interrupted` when a step that is never
        repeated (``once``) was stopped before it answered (its worker lost or shut down, its
        timeout). A cancelled activity cancels the run only when the run itself was
        cancelled. An input too large for Temporal fails the run."""
        self.check(arg, f"the input of the {ACTIVITY_WHAT[name]}")
        try:
            result: T = await workflow.execute_activity(
                ACTIVITY_NAMES[name],
                arg,
                result_type=result_type,
                start_to_close_timeout=timedelta(seconds=timeout),
                schedule_to_close_timeout=timedelta(seconds=total) if total else None,
                heartbeat_timeout=timedelta(seconds=self.settings.heartbeat_timeout),
                retry_policy=self.once if once else self.retry,
            )
        except ActivityError as exc:
            if isinstance(exc.cause, CancelledError) and _run_cancelled():
                raise asyncio.CancelledError() from exc
            interrupted = _interruption(exc.cause, timeout) if once else None
            if interrupted is not None:
                raise interrupted from None
            raise _failure(exc) from exc  # the cause holds what the failure carries
        return result

    def check(self, value: Any, what: str) -> None:
        check_payload(
            workflow.payload_converter(), value, self.settings.max_payload_bytes, what, self.run
        )

    def _task(self, accepted: Checkpoint) -> CallTask:
        return CallTask(self.run, accepted, self.input.confirmable)

    # ------------------------------------------------------------------ the run's steps

    async def plan(self, task: PlanTask) -> Planned[Checkpoint]:
        timeout = self.settings.planning_timeout
        try:
            return await self._activity("plan", task, Planned, timeout=timeout)
        except StepFailure as failure:
            raise _PlanningFailed(failure, _planning_usage(failure.__cause__)) from None
        except asyncio.CancelledError:
            self.withdrawn += Usage.not_reported()
            raise

    async def boundary(self, state: WorkflowState) -> None:
        info = workflow.info()
        limit = self.settings.continue_as_new_after_events
        if info.is_continue_as_new_suggested() or info.get_current_history_length() >= limit:
            await workflow.wait_condition(workflow.all_handlers_finished)
            carried = RunInput(
                state=state, settings=self.settings, confirmable=self.input.confirmable
            )
            self.check(carried, "the state a long run continues as new with")
            workflow.continue_as_new(carried)

    async def prepare(self, accepted: Checkpoint) -> Prepared:
        task = self._task(accepted)
        return await self._activity("prepare", task, Prepared, timeout=self.settings.step_timeout)

    async def confirm(self, request: ConfirmationRequest) -> ConfirmationDecision:
        call_id = request.tool_call_id
        self.owner.pending[call_id] = request
        try:
            await workflow.wait_condition(lambda: call_id in self.owner.decisions)
        finally:
            del self.owner.pending[call_id]
        return self.owner.decisions.pop(call_id)

    async def deny(self, accepted: Checkpoint, arguments: Any) -> ToolResultPart:
        task = DenyTask(self._task(accepted), arguments)
        return await self._activity(
            "deny", task, ToolResultPart, timeout=self.settings.step_timeout
        )

    async def execute(self, accepted: Checkpoint) -> ToolResultPart:
        task, timeout = self._task(accepted), self.settings.tool_timeout
        try:
            return await self._activity("execute", task, ToolResultPart, timeout=timeout, once=True)
        except _Interrupted as stopped:
            call = ToolCallPart(**accepted["call"])
            if stopped.timed_out is not None:  # the words the in-memory engine uses
                return timed_out(call, call.tool_id, stopped.timed_out)
            return outcome_unknown(call, f"{call.tool_id}: {stopped.why}")

    async def admit(self, accepted: Checkpoint) -> Admission:
        # The registry's own Timeout bounds the request inside the activity (the worker knows
        # it, the workflow does not); tool_timeout, which every registry's Timeout is shorter
        # than (checked when a run starts, and by the activity), only backstops it.
        task, timeout = self._task(accepted), self.settings.tool_timeout
        try:
            return await self._activity("admit", task, Admission, timeout=timeout, once=True)
        except _Interrupted as stopped:
            call = ToolCallPart(**accepted["call"])
            asking = f"{call.tool_id}: asking the registry to admit it"
            if stopped.timed_out is not None:
                what = f"{asking} {stopped.why} (the engine's tool_timeout) and was cancelled"
            elif stopped.lost:
                what = f"{call.tool_id}: the worker asking the registry to admit it was lost"
            else:
                what = f"{asking} was stopped: {stopped.why}"
            return Admission(result=outcome_unknown(call, what))

    async def await_outcome(self, accepted: Checkpoint, ref: CallRef) -> ToolResultPart:
        # Repeated on another worker after a lost one, but tool_timeout bounds the whole wait
        # (its attempts together), as in memory: the call then answers outcome_unknown.
        task = AwaitTask(self._task(accepted), ref)
        timeout = self.settings.tool_timeout
        try:
            return await self._activity(
                "await_outcome", task, ToolResultPart, timeout=timeout, total=timeout
            )
        except StepFailure as failure:
            if not _timed_out(failure.__cause__):
                raise
            call = ToolCallPart(**accepted["call"])
            return timed_out(call, call.tool_id, timeout)

    async def child(self, request: RunRequest) -> ChildOutcome:
        run_id = workflow.uuid4().hex
        child_input = RunInput(
            request=dataclasses.replace(request, run_id=run_id),
            settings=self.settings,
            confirmable=self.input.confirmable,
        )
        self.check(child_input, f"the input of the child run of agent {request.agent_id!r}")
        self.owner.children.append(run_id)
        try:
            result = await workflow.execute_child_workflow(
                WORKFLOW_NAME,
                child_input,
                id=run_id,
                task_queue=workflow.info().task_queue,
                result_type=WorkflowResult,
            )
        except ChildWorkflowError as exc:
            if isinstance(exc.cause, CancelledError):
                if _run_cancelled():
                    self.withdrawn += Usage.not_reported()
                    raise asyncio.CancelledError() from exc
                # Only the child run was cancelled (engine.cancel of its ID): its parent's
                # call fails, as for any failed child run, and the parent goes on.
                failure = StepFailure("RunCancelledError", f"run {run_id!r} was cancelled")
                raise ChildRunFailed(failure, _child_usage(exc), run_id) from None
            raise ChildRunFailed(_failure(exc), _child_usage(exc), run_id) from None
        except asyncio.CancelledError:
            self.withdrawn += Usage.not_reported()
            raise
        finally:
            self.owner.children.remove(run_id)
        return ChildOutcome(result.run_id, result.final_text, result.final_value, result.usage)

    async def agent_result(self, accepted: Checkpoint, child: ChildOutcome) -> ToolResultPart:
        # The step needs the answer, not its cost (left out, the payload is what workers of
        # the previous release read).
        task = ResultTask(self._task(accepted), dataclasses.replace(child, usage=Usage()))
        timeout = self.settings.step_timeout
        return await self._activity("agent_result", task, ToolResultPart, timeout=timeout)


if __name__ == "__main__":  # the sandbox imports workflow modules again; nothing runs here
    raise SystemExit("agentgen's run workflow runs in a worker: agentgen worker --help")
