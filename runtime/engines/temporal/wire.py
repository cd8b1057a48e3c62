"""What crosses between a durable run's client, workflow and activities.

The loop's own step values (:mod:`agentgen.runtime.runs.steps`) cross as they are; these add
what only a workflow needs: its input (a new run, or a run continuing as new), the task of a
per-call activity, the status a client polls for pending confirmations, and a decision. An
accepted call crosses as its checkpoint (``AcceptedCall.to_json()``): workflow state never
holds anything that depends on the current catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentgen.runtime.agents.planning import RunContext
from agentgen.runtime.engines.temporal.settings import TemporalSettings
from agentgen.runtime.registry.client import CallRef
from agentgen.runtime.runs.loop import RunResult, RunState
from agentgen.runtime.runs.requests import RunRequest
from agentgen.runtime.runs.steps import ChildOutcome, ConfirmationRequest

__all__ = [
    "ACTIVITY_NAMES",
    "ACTIVITY_WHAT",
    "AwaitTask",
    "CallTask",
    "Checkpoint",
    "Decide",
    "DenyTask",
    "ResultTask",
    "RunInput",
    "RunStatus",
    "WorkflowResult",
    "WorkflowState",
]

#: The activity names workflows schedule (stable: they are written in run histories).
ACTIVITY_NAMES = {
    "plan": "agentgen.plan",
    "prepare": "agentgen.prepare",
    "deny": "agentgen.deny",
    "execute": "agentgen.execute",
    "admit": "agentgen.admit",
    "await_outcome": "agentgen.await_outcome",
    "agent_result": "agentgen.agent_result",
}

#: What each activity is, in words (for messages), by the names of :data:`ACTIVITY_NAMES`.
ACTIVITY_WHAT = {
    "plan": "planning activity",
    "prepare": "step preparing a call",
    "deny": "step denying a call",
    "execute": "tool execution",
    "admit": "registry admission",
    "await_outcome": "wait for a registry call's outcome",
    "agent_result": "step checking an agent tool's answer",
}

#: An accepted call's checkpoint (``AcceptedCall.to_json()``).
Checkpoint = dict[str, Any]
WorkflowState = RunState[Checkpoint]
WorkflowResult = RunResult[Checkpoint]


@dataclass(frozen=True)
class RunInput:
    """A workflow's input: a new run (``request``, its ``run_id`` set) or a run continuing as
    a new execution (``state``). ``confirmable`` says whether the process that started the run
    decides confirmations (its runtime has a confirmer)."""

    request: RunRequest | None = None
    state: WorkflowState | None = None
    settings: TemporalSettings = field(default_factory=TemporalSettings)
    confirmable: bool = False


@dataclass(frozen=True)
class CallTask:
    """One accepted call, for the activities that prepare and execute it."""

    run: RunContext
    accepted: Checkpoint
    confirmable: bool = False


@dataclass(frozen=True)
class DenyTask:
    task: CallTask
    arguments: Any = None


@dataclass(frozen=True)
class AwaitTask:
    task: CallTask
    ref: CallRef


@dataclass(frozen=True)
class ResultTask:
    task: CallTask
    child: ChildOutcome


@dataclass(frozen=True)
class RunStatus:
    """What a client needs to drive a run: the confirmations it waits for, and its running
    child runs (which may wait for their own)."""

    pending: tuple[ConfirmationRequest, ...] = ()
    children: tuple[str, ...] = ()


@dataclass(frozen=True)
class Decide:
    """A decision on one pending confirmation; ``error`` when no decision could be made (the
    confirmer failed): the call does not run."""

    tool_call_id: str
    approved: bool = False
    error: str = ""
