"""The activities of a durable run: the run's steps, executed on a worker against its host.

A worker's host is the application's own ``Runtime`` (built by the same factory as the
client's), so an activity finds the agent, its planner and executors, the models and the
registries exactly as the in-memory engine does, and calls the same step functions. An
accepted call arrives as its checkpoint and is restored with ``AcceptedCall.from_json``: a
compiled tool by its ID in the agent's generated specs, a registry tool from its saved
declaration, never from the current catalog.

Failures leave as ``ApplicationError`` with their type name and message, marked non-retryable
for the SPEC's typed errors (:mod:`.errors`). Every activity heartbeats while it runs, so that a
lost worker is noticed within the heartbeat timeout rather than the activity's; a planning
activity's heartbeats also carry what its model calls cost, for its next attempt
(:mod:`.attempts`). An answer too large for Temporal fails the activity for good
(:mod:`.payload_limits`): the SDK would not upload it, and repeating a planning activity asks
the model again. A tool execution or registry admission runs in its first attempt only: a later
one (Temporal grants it to an activity paused while it ran, once unpaused) answers
``outcome_unknown`` without running it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import activity

from agentgen.runtime.agents.planning import RunContext
from agentgen.runtime.engines.temporal.attempts import Attempt
from agentgen.runtime.engines.temporal.cancellations import cancellation_failure
from agentgen.runtime.engines.temporal.errors import application_error
from agentgen.runtime.engines.temporal.payload_limits import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    check_payload,
)
from agentgen.runtime.engines.temporal.wire import (
    ACTIVITY_NAMES,
    ACTIVITY_WHAT,
    AwaitTask,
    CallTask,
    DenyTask,
    ResultTask,
)
from agentgen.runtime.messages import ToolResultPart
from agentgen.runtime.runs import execution
from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.runs.execution import ExecutionContext
from agentgen.runtime.runs.host import RunHost
from agentgen.runtime.runs.plan_step import plan
from agentgen.runtime.runs.registry_calls import check_admission_timeout
from agentgen.runtime.runs.results import outcome_unknown
from agentgen.runtime.runs.steps import Admission, Decision, Planned, PlanTask, Prepared
from agentgen.runtime.telemetry.config import activated
from agentgen.runtime.telemetry.exceptions import explaining_cancellations

__all__ = [
    "HEARTBEAT_THROTTLE",
    "MAX_DERIVED_HEARTBEAT_INTERVAL",
    "MAX_HEARTBEAT_INTERVAL",
    "RunActivities",
    "heartbeat_every",
]

T = TypeVar("T")

#: The longest interval between a running activity's heartbeats that the worker derives from
#: the run's ``heartbeat_timeout`` (a third of it) when it is given none. A cancellation
#: reaches a running activity only in the server's answer to a heartbeat, so the interval is
#: how long a tool of a cancelled run may go on; each heartbeat is a request to the server
#: (on Temporal Cloud, an action): every second, a long tool sent 60 a minute
#: (``bench/heartbeats.py``), 10 at once loaded the server with 10 requests a second.
MAX_DERIVED_HEARTBEAT_INTERVAL = 10.0
#: The longest the SDK holds a heartbeat back (``build_worker`` sets its throttle to it, or to
#: a shorter interval given): no longer than any interval derived from a heartbeat timeout of
#: 3 s or more, so each goes out at once (the SDK's own throttle, 80% of the heartbeat
#: timeout, held them back to one per 24 s).
HEARTBEAT_THROTTLE = 1.0
#: The longest heartbeat interval (ten thousand years: ``agentgen worker``'s bound too).
MAX_HEARTBEAT_INTERVAL = 315_576_000_000
#: The heartbeat timeout of an activity Temporal gives none (the workflow always sets one).
_UNSET_HEARTBEAT_TIMEOUT = timedelta(seconds=30)


def heartbeat_every(heartbeat_timeout: timedelta | None, interval: float | None) -> float:
    """Seconds between a running activity's heartbeats: a third of its ``heartbeat_timeout``
    (so that a lost worker is noticed within it, however late one heartbeat goes out), at
    most ``interval`` when the worker was given one, else at most
    :data:`MAX_DERIVED_HEARTBEAT_INTERVAL` (10 s: a cancelled run's tool goes on no longer);
    at least 50 ms."""
    third = (heartbeat_timeout or _UNSET_HEARTBEAT_TIMEOUT).total_seconds() / 3
    bound = MAX_DERIVED_HEARTBEAT_INTERVAL if interval is None else interval
    return max(min(third, bound), 0.05)


async def _heartbeating(work: Awaitable[T], attempt: Attempt, every: float | None) -> T:
    """Await ``work`` while heartbeating every so often (:func:`heartbeat_every`: ``every`` is
    the worker's interval, if it was given one)."""
    interval = heartbeat_every(activity.info().heartbeat_timeout, every)

    async def beat() -> None:
        while True:
            attempt.heartbeat()
            await asyncio.sleep(interval)

    beating = asyncio.create_task(beat())
    try:
        return await work
    finally:
        beating.cancel()


async def _step(
    host: RunHost,
    work: Callable[[], Awaitable[T]],
    limit: int,
    run: RunContext,
    every: float | None,
    attempt: Attempt | None = None,
) -> T:
    """Run a step under the host's telemetry (its spans hang under the SDK's ``RunActivity``
    span, which links them to the workflow); a retried attempt does not count again what the
    first one counted; a cancellation that is not its run's (a timeout) is reported as the
    failure it is. Its answer must fit in ``limit`` bytes. ``attempt`` sends its heartbeats,
    every ``every`` seconds at most (a metered one's failure carries its final account of the
    usage)."""
    attempt = attempt or Attempt()
    try:
        with (
            activated(host.telemetry, attempt=activity.info().attempt),
            explaining_cancellations(lambda: cancellation_failure(attempt)),
        ):
            result = await _heartbeating(work(), attempt, every)
        what = f"the answer of the {_WHAT.get(activity.info().activity_type, 'activity')}"
        check_payload(activity.payload_converter(), result, limit, what, run)
        return result
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        details = attempt.failed() if attempt.metered else ()
        raise application_error(exc, *details) from exc


def _run_before(accepted: AcceptedCall, stopped: str, again: str) -> ToolResultPart:
    """The answer of a step that is never repeated, in an attempt after its first: Temporal
    allows one attempt, but an operator who paused the step while it ran and then unpaused it
    gets another, and the first may have had its effect."""
    return outcome_unknown(
        accepted.call,
        f"{accepted.spec.id}: {stopped} (an operator paused it, or reset it) and is not "
        f"{again} again",
    )


#: What each activity is, in words, by its registered name.
_WHAT = {ACTIVITY_NAMES[step]: what for step, what in ACTIVITY_WHAT.items()}


class RunActivities:
    """The activities, bound to the worker's host. ``max_payload_bytes`` bounds what each
    answers (the server's blob size limit); each heartbeats while it runs, every third of its
    heartbeat timeout, at most every ``heartbeat_interval`` seconds (when None, at most every
    :data:`MAX_DERIVED_HEARTBEAT_INTERVAL`: :func:`heartbeat_every`)."""

    def __init__(
        self,
        host: RunHost,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        heartbeat_interval: float | None = None,
    ) -> None:
        if max_payload_bytes < 1:
            raise ValueError("max_payload_bytes must be at least 1")
        number = isinstance(heartbeat_interval, int | float) and not isinstance(
            heartbeat_interval, bool
        )
        if heartbeat_interval is not None and not (
            number and 0 < heartbeat_interval <= MAX_HEARTBEAT_INTERVAL
        ):
            # Above the bound, build_worker's throttle (a timedelta) overflowed with a bare
            # "OverflowError: Python int too large to convert to C int".
            raise ValueError(
                "the worker's heartbeat_interval must be positive seconds, not "
                f"{heartbeat_interval!r} (at most {MAX_HEARTBEAT_INTERVAL}, as agentgen worker "
                "--heartbeat-interval)"
            )
        self.host = host
        self.limit = max_payload_bytes
        self.every = None if heartbeat_interval is None else float(heartbeat_interval)

    def all(self) -> list[Callable[..., Any]]:
        return [
            self.plan,
            self.prepare,
            self.deny,
            self.execute,
            self.admit,
            self.await_outcome,
            self.agent_result,
        ]

    def _restore(self, task: CallTask) -> tuple[ExecutionContext, AcceptedCall]:
        registration = self.host.agent(task.run.agent_id)
        accepted = AcceptedCall.from_json(task.accepted, registration.definition.spec)
        return ExecutionContext(self.host, registration, task.run), accepted

    @activity.defn(name=ACTIVITY_NAMES["plan"])
    async def plan(self, task: PlanTask) -> Planned[dict[str, Any]]:
        """The planning step; accepted calls leave as their checkpoints."""

        timeout = activity.info().start_to_close_timeout
        # The run policy's model timeout must fire before Temporal's own end of the activity.
        limit = ("TemporalSettings.planning_timeout", timeout.total_seconds()) if timeout else None
        # Earlier attempts' model calls were billed too (their usage is in the heartbeats).
        attempt = Attempt(metered=True)

        async def work() -> Planned[dict[str, Any]]:
            planned = await plan(self.host, task, limit=limit, meter=attempt)
            decisions = tuple(
                Decision(d.call, d.accepted.to_json() if d.accepted else None, d.refused)
                for d in planned.decisions
            )
            return Planned(
                planned.message,
                planned.final_value,
                decisions,
                planned.limits,
                planned.usage,
                finalized=planned.finalized,
            )

        return await _step(self.host, work, self.limit, task.run, self.every, attempt)

    @activity.defn(name=ACTIVITY_NAMES["prepare"])
    async def prepare(self, task: CallTask) -> Prepared:
        async def work() -> Prepared:
            context, accepted = self._restore(task)
            return execution.prepare(context, accepted, confirmable=task.confirmable)

        return await _step(self.host, work, self.limit, task.run, self.every)

    @activity.defn(name=ACTIVITY_NAMES["deny"])
    async def deny(self, task: DenyTask) -> ToolResultPart:
        async def work() -> ToolResultPart:
            _, accepted = self._restore(task.task)
            return execution.deny(accepted, task.arguments)

        return await _step(self.host, work, self.limit, task.task.run, self.every)

    @activity.defn(name=ACTIVITY_NAMES["execute"])
    async def execute(self, task: CallTask) -> ToolResultPart:
        async def work() -> ToolResultPart:
            context, accepted = self._restore(task)
            if activity.info().attempt > 1:
                return _run_before(accepted, "it was stopped while it ran", "run")
            return await execution.call_executor(context, accepted)

        return await _step(self.host, work, self.limit, task.run, self.every)

    @activity.defn(name=ACTIVITY_NAMES["admit"])
    async def admit(self, task: CallTask) -> Admission:
        timeout = activity.info().start_to_close_timeout

        async def work() -> Admission:
            context, accepted = self._restore(task)
            if activity.info().attempt > 1:
                what = "asking the registry to admit it was stopped"
                return Admission(result=_run_before(accepted, what, "asked"))
            if timeout and accepted.binding is not None:  # before the request leaves
                registration = self.host.registry(accepted.binding.registry)
                limit = ("TemporalSettings.tool_timeout", timeout.total_seconds())
                check_admission_timeout(registration, limit, task.run.agent_id, task.run.run_id)
            return await execution.admit(context, accepted)

        return await _step(self.host, work, self.limit, task.run, self.every)

    @activity.defn(name=ACTIVITY_NAMES["await_outcome"])
    async def await_outcome(self, task: AwaitTask) -> ToolResultPart:
        async def work() -> ToolResultPart:
            context, accepted = self._restore(task.task)
            return await execution.await_outcome(context, accepted, task.ref)

        return await _step(self.host, work, self.limit, task.task.run, self.every)

    @activity.defn(name=ACTIVITY_NAMES["agent_result"])
    async def agent_result(self, task: ResultTask) -> ToolResultPart:
        async def work() -> ToolResultPart:
            _, accepted = self._restore(task.task)
            return execution.agent_result(accepted, task.child)

        return await _step(self.host, work, self.limit, task.task.run, self.every)
