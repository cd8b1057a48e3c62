"""The planner loop of one run: the order of its steps, the same on every engine.

A run alternates planning activities and execution rounds: plan (``plan_start``, then
``plan_resume`` with the results), accept the calls the assistant message holds against that
activity's catalog, execute them with their saved contracts, and plan again, until the planner
answers without tool calls. When the run's tool-call budget (which refused calls use too) or
failure limit is spent, or the model made :data:`REFUSED_CALLS_IN_A_ROW` refused calls in a
row, the last activity is final-answer-only: it reads no registry, describes only the compiled
tools, asks for an answer and accepts no call. A run whose budget is 0 starts with one.

The loop itself does no I/O and reads no clock or randomness: every effect is a step it awaits
(:class:`Steps`), so the in-memory engine runs it with the steps in process, and the Temporal
engine runs it as workflow code with the steps as activities, confirmations as workflow waits
and agent tools as child workflows. Its whole state is :class:`RunState`, plain values a
durable run can carry into a new execution (continue-as-new) between rounds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.agents.planning import RunContext
from agentgen.runtime.failures import message_of
from agentgen.runtime.messages import Message, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import STOP_REASON_METADATA_KEY, Usage
from agentgen.runtime.registry.client import CallRef
from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.runs.call_ids import claim_call_ids
from agentgen.runtime.runs.model_calls import UsageMeter
from agentgen.runtime.runs.requests import RunError, RunOutcome, RunRequest, run_usage
from agentgen.runtime.runs.results import tool_error
from agentgen.runtime.runs.steps import (
    A,
    Admission,
    ChildOutcome,
    ConfirmationDecision,
    ConfirmationRequest,
    Limits,
    Planned,
    PlanTask,
    Prepared,
)
from agentgen.runtime.wire_fields import ADDED

__all__ = [
    "REFUSED_CALLS_IN_A_ROW",
    "CallSteps",
    "ChildRunFailed",
    "RunResult",
    "RunState",
    "StepFailure",
    "Steps",
    "describe_failure",
    "drive",
    "outcome",
    "run_call",
]

A_contra = TypeVar("A_contra", contravariant=True)
T = TypeVar("T")

#: Refused calls (a tool the activity does not offer, or one the budget has no room for) in a
#: row after which a run only answers, whatever its policy: a model that keeps asking for what
#: it may not have makes no progress, and without this bound a run with no limits would never
#: end.
REFUSED_CALLS_IN_A_ROW = 10


class StepFailure(Exception):
    """A step failed elsewhere (a durable engine's activity or child workflow), as its type
    name and message: reported exactly as the same failure in process would be."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name


class ChildRunFailed(Exception):
    """A child run started for an agent tool and failed (``failure`` says how; its parent's
    call answers ``agent_failed``, naming ``run_id``, the failed run, which the parent's
    outcome lists with its other child runs). ``usage`` is what its model calls cost until
    then, its own child runs' included: a lower bound (``usage.unreported``) where the engine
    could not tell."""

    def __init__(self, failure: BaseException, usage: Usage, run_id: str) -> None:
        super().__init__(describe_failure(failure))
        self.failure = failure
        self.usage = usage
        self.run_id = run_id


def describe_failure(exc: BaseException) -> str:
    name = exc.type_name if isinstance(exc, StepFailure) else type(exc).__name__
    return f"{name}: {message_of(exc)}"


class CallSteps(Protocol[A_contra]):
    """The steps of one accepted call (see :mod:`agentgen.runtime.runs.execution`)."""

    async def prepare(self, accepted: A_contra) -> Prepared: ...

    async def confirm(self, request: ConfirmationRequest) -> ConfirmationDecision: ...

    async def deny(self, accepted: A_contra, arguments: Any) -> ToolResultPart: ...

    async def execute(self, accepted: A_contra) -> ToolResultPart: ...

    async def admit(self, accepted: A_contra) -> Admission: ...

    async def await_outcome(self, accepted: A_contra, ref: CallRef) -> ToolResultPart: ...

    async def child(self, request: RunRequest) -> ChildOutcome:
        """Run the child run of an agent tool to completion. A child run that failed raises
        :class:`ChildRunFailed`; any other exception says it did not start."""
        ...

    async def agent_result(self, accepted: A_contra, child: ChildOutcome) -> ToolResultPart: ...


class Steps(CallSteps[A], Protocol[A]):
    """Every step of a run, as an engine runs them."""

    async def plan(self, task: PlanTask) -> Planned[A]: ...

    async def boundary(self, state: RunState[A]) -> None:
        """Called between rounds, when the state holds everything the run needs: a durable
        engine may continue the run as a new execution here."""
        ...


@dataclass
class RunState(Generic[A]):
    """Everything a run knows between two steps."""

    run: RunContext
    #: The run's own policy options.
    policy: RunPolicy
    transcript: list[Message]
    #: Whether ``plan_start`` ran (the next activity is ``plan_resume``).
    started: bool = False
    #: Whether the next activity is final-answer-only.
    finalize: bool = False
    #: The last round's results (what ``plan_resume`` is given).
    tool_results: tuple[ToolResultPart, ...] = ()
    calls: int = 0
    consecutive_failures: int = 0
    #: Refused calls so far (the tool-call budget counts them with ``calls``), and how many
    #: of the last calls were refused in a row.
    refused: int = field(default=0, metadata=ADDED)
    refused_in_a_row: int = field(default=0, metadata=ADDED)
    limits: Limits = field(default_factory=Limits)
    #: Every tool-call ID of the run so far (the conversation's included), and where.
    call_ids: dict[str, str] = field(default_factory=dict)
    #: Every accepted call with its saved contract, in order, and its call ID.
    accepted: list[A] = field(default_factory=list)
    accepted_ids: list[str] = field(default_factory=list)
    #: Child runs started for agent tools (failed ones too), by tool call ID.
    children: dict[str, str] = field(default_factory=dict)
    #: Planning activities started so far.
    activities: int = 0
    #: What the run's model calls cost so far, its child runs' included.
    usage: Usage = field(default_factory=Usage, metadata=ADDED)

    @classmethod
    def start(cls, request: RunRequest, run_id: str) -> RunState[A]:
        return cls(
            run=RunContext(
                run_id=run_id,
                agent_id=request.agent_id,
                labels=dict(request.labels),
                parent_run_id=request.parent_run_id,
                result_schema_json=request.result_schema_json,
                call_depth=request.call_depth,
            ),
            policy=request.policy,
            transcript=list(request.messages),
        )


@dataclass(frozen=True)
class RunResult(Generic[A]):
    """A finished run, with its accepted calls as the engine carried them."""

    run_id: str
    agent_id: str
    transcript: tuple[Message, ...]
    final_text: str
    final_value: Any = None
    tool_calls: int = 0
    child_runs: tuple[str, ...] = ()
    parent_run_id: str | None = None
    accepted: tuple[A, ...] = ()
    usage: Usage = field(default_factory=Usage, metadata=ADDED)


def outcome(result: RunResult[Any], accepted: Sequence[AcceptedCall]) -> RunOutcome:
    """The outcome of a finished run, its accepted calls restored by the engine."""
    return RunOutcome(
        run_id=result.run_id,
        agent_id=result.agent_id,
        transcript=result.transcript,
        final_text=result.final_text,
        final_value=result.final_value,
        tool_calls=result.tool_calls,
        child_runs=result.child_runs,
        parent_run_id=result.parent_run_id,
        accepted_calls=tuple(accepted),
        usage=result.usage,
        stop_reason=_stop_reason(result.transcript),
    )


def _stop_reason(transcript: Sequence[Message]) -> str | None:
    """The final answer's stop reason, as its planner recorded it."""
    value = transcript[-1].metadata.get(STOP_REASON_METADATA_KEY) if transcript else None
    return value if isinstance(value, str) else None


async def drive(state: RunState[A], steps: Steps[A]) -> RunResult[A]:
    """Run (or go on running) a run from ``state`` to its final answer."""
    agent = state.run.agent_id
    if not state.started:
        # The step checks the labels, the policies and the conversation's call IDs first.
        state.activities += 1
        task = PlanTask(state.run, state.policy, tuple(state.transcript), activity=state.activities)
        planned = await steps.plan(task)
        for index, message in enumerate(state.transcript):
            where = f"message {index} of the conversation"
            claim_call_ids(state.call_ids, agent, message.tool_calls(), where)
        state.started = True
    else:
        planned = await steps.plan(_resume(state))
    while True:
        state.limits = planned.limits
        state.usage += planned.usage
        state.transcript.append(planned.message)
        calls = planned.message.tool_calls()
        if not calls:
            return RunResult(
                run_id=state.run.run_id,
                agent_id=agent,
                transcript=tuple(state.transcript),
                final_text=planned.message.text,
                final_value=planned.final_value,
                tool_calls=state.calls,
                child_runs=tuple(
                    state.children[i] for i in state.accepted_ids if i in state.children
                ),
                parent_run_id=state.run.parent_run_id,
                accepted=tuple(state.accepted),
                usage=state.usage,
            )
        if state.finalize or planned.finalized:
            raise RunError(
                f"agent {agent!r}: the planner returned tool calls in a final-answer-only activity"
            )
        where = f"the planner's reply (message {len(state.transcript) - 1})"
        claim_call_ids(state.call_ids, agent, calls, where)
        results = await _execute_round(state, steps, planned)
        state.transcript.append(Message("tool", tuple(results)))
        state.tool_results = tuple(results)
        state.finalize = _spent(state)
        await steps.boundary(state)
        planned = await steps.plan(_resume(state))


def _resume(state: RunState[Any]) -> PlanTask:
    state.activities += 1
    return PlanTask(
        state.run,
        state.policy,
        tuple(state.transcript),
        start=False,
        finalize=state.finalize,
        tool_results=state.tool_results,
        calls_made=state.calls + state.refused,
        activity=state.activities,
    )


def _spent(state: RunState[Any]) -> bool:
    limit = state.limits.max_tool_calls
    failures = state.limits.max_consecutive_failed_tool_calls
    return (
        (limit is not None and state.calls + state.refused >= limit)
        or (failures is not None and state.consecutive_failures >= failures)
        or state.refused_in_a_row >= REFUSED_CALLS_IN_A_ROW
    )


async def _execute_round(
    state: RunState[A], steps: Steps[A], planned: Planned[A]
) -> list[ToolResultPart]:
    """Run the accepted calls of a reply concurrently; refusals answer their calls as they
    are. Results keep the order of the calls."""
    results: list[ToolResultPart | None] = []
    pending: list[tuple[int, ToolCallPart, A]] = []
    for decision in planned.decisions:
        if decision.accepted is None:
            assert decision.refused is not None
            results.append(decision.refused)
            state.refused += 1
            state.refused_in_a_row += 1
            continue
        state.calls += 1
        state.refused_in_a_row = 0
        state.accepted.append(decision.accepted)
        state.accepted_ids.append(decision.call.call_id)
        pending.append((len(results), decision.call, decision.accepted))
        results.append(None)
    spent = UsageMeter()
    try:
        done = await _together(
            [
                run_call(steps, call, accepted, state.children, spent)
                for _, call, accepted in pending
            ]
        )
    finally:
        # Also when the round is cancelled: its child runs' responses were billed.
        state.usage += spent.usage
    for (index, _, _), part in zip(pending, done, strict=True):
        results[index] = part
    final = [r for r in results if r is not None]
    for part in final:
        state.consecutive_failures = state.consecutive_failures + 1 if part.is_error else 0
    return final


async def _together(calls: Sequence[Awaitable[T]]) -> list[T]:
    """Await the calls of a round concurrently; the results keep the calls' order.

    A call ends with its result whatever went wrong (:func:`run_call`), so only a
    ``BaseException`` gets here: the run is cancelled, or a tool raised ``KeyboardInterrupt``,
    ``SystemExit``, a ``CancelledError`` of its own or another ``BaseException``. Then the
    round ends: the other calls are cancelled and awaited before it propagates as it was
    raised, so that no tool of a run that ended keeps running unobserved (``asyncio.gather``
    alone leaves them running when one of its awaitables raises).
    """
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except GeneratorExit:
        # The coroutine itself is being closed (a durable engine evicting a workflow it
        # replayed): nothing may be awaited any more, and the engine ends its tasks itself.
        raise
    except BaseException:
        for task in tasks:
            task.cancel()
        # Their own endings are not this round's failure (a cancelled wait here is the run's).
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def run_call(
    steps: CallSteps[A],
    call: ToolCallPart,
    accepted: A,
    children: dict[str, str],
    spent: UsageMeter,
) -> ToolResultPart:
    """Run one accepted call through its steps; whatever goes wrong becomes the call's tool
    error result, so that the other calls of the round keep their results. A child run's ID
    is recorded in ``children``, and what it cost (failed or not) added to ``spent``."""
    try:
        return await _run_call(steps, call, accepted, children, spent)
    except Exception as exc:
        return tool_error(call, "internal_error", f"{call.tool_id}: {describe_failure(exc)}")


async def _run_call(
    steps: CallSteps[A],
    call: ToolCallPart,
    accepted: A,
    children: dict[str, str],
    spent: UsageMeter,
) -> ToolResultPart:
    prepared = await steps.prepare(accepted)
    if prepared.result is not None:
        return prepared.result
    if prepared.confirmation is not None:
        decision = await steps.confirm(prepared.confirmation)
        if decision.error:
            return tool_error(
                call,
                "confirmation_failed",
                f"confirming {call.tool_id} failed ({decision.error}); it did not run",
            )
        if not decision.approved:
            return await steps.deny(accepted, prepared.arguments)
    if prepared.route == "agent":
        request = prepared.child
        assert request is not None
        try:
            child = await steps.child(request)
        except Exception as exc:
            failure: BaseException = exc
            which = ""
            if isinstance(exc, ChildRunFailed):
                # Its model calls were billed all the same: the parent's usage counts them.
                spent.add(exc.usage)
                failure = exc.failure
                # It ran (spans, a durable history): the parent's outcome leads to it.
                children[call.call_id] = exc.run_id
                which = f" (child run {exc.run_id})"
            return tool_error(
                call,
                "agent_failed",
                f"agent {request.agent_id}{which} failed: {describe_failure(failure)}",
            )
        except BaseException as exc:
            # Cancelled: a child run that says what it cost until then is counted all the same.
            cost = run_usage(exc)
            if cost is not None:
                spent.add(cost)
            raise
        spent.add(child.usage)
        children[call.call_id] = child.run_id
        return await steps.agent_result(accepted, child)
    if prepared.route == "registry":
        admission = await steps.admit(accepted)
        if admission.result is not None:
            return admission.result
        assert admission.ref is not None
        return await steps.await_outcome(accepted, admission.ref)
    return await steps.execute(accepted)
