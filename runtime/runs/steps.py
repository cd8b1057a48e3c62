"""The steps of a run, as values: what each step is given and what it answers.

A run is a deterministic loop (:mod:`agentgen.runtime.runs.loop`) over four kinds of step:
planning (catalog, registry reads, the planner, accepting the calls), preparing one accepted
call (arguments, consumption, the confirmation prompt), deciding a confirmation, and executing
the call (a compiled executor, a registry admission and its result, or a child run of the agent
exposed as the tool). The in-memory engine runs the steps in process; the Temporal engine runs
them as activities, a signal-like update and child workflows. These types are what crosses
between the loop and the steps, so they hold only plain values, messages and JSON values (the
Temporal data converter writes them as JSON).

``A`` is how an engine carries an accepted call between steps: the
:class:`~agentgen.runtime.runs.accepted.AcceptedCall` itself in process, its checkpoint
(:meth:`~agentgen.runtime.runs.accepted.AcceptedCall.to_json`) in a durable workflow, whose
state must never depend on the current catalog.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.agents.planning import RunContext
from agentgen.runtime.messages import Message, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import Usage
from agentgen.runtime.registry.client import CallRef
from agentgen.runtime.runs.requests import RunRequest
from agentgen.runtime.wire_fields import ADDED

__all__ = [
    "A",
    "Admission",
    "ChildOutcome",
    "ConfirmationDecision",
    "ConfirmationRequest",
    "Confirmer",
    "Decision",
    "Limits",
    "PlanTask",
    "Planned",
    "Prepared",
    "Route",
    "Verdict",
]

A = TypeVar("A")

#: How a prepared call executes: a compiled executor, a registry provider, or a child run.
Route = Literal["executor", "registry", "agent"]


@dataclass(frozen=True)
class Limits:
    """A run's limits after merging the agent's, the runtime's and the run's policies."""

    max_tool_calls: int | None = None
    max_consecutive_failed_tool_calls: int | None = None


@dataclass(frozen=True)
class PlanTask:
    """One planning activity: ``plan_start`` when ``start``, else ``plan_resume`` with the
    previous round's results. ``calls_made`` counts the calls the run's model made so far,
    accepted or refused (the budget the activity accepts new calls against); an activity
    whose budget is spent is final-answer-only, whatever ``finalize`` says."""

    run: RunContext
    #: The run's own policy options (merged with the agent's and the runtime's by the step).
    policy: RunPolicy
    messages: tuple[Message, ...]
    start: bool = True
    finalize: bool = False
    tool_results: tuple[ToolResultPart, ...] = ()
    calls_made: int = 0
    #: Which planning activity of the run this is (1 for the first; telemetry reports it).
    activity: int = 0


@dataclass(frozen=True)
class Decision(Generic[A]):
    """What the planning activity decided about one call of the reply: accepted (with its
    saved contract), or refused with the tool error the model gets back."""

    call: ToolCallPart
    accepted: A | None = None
    refused: ToolResultPart | None = None


@dataclass(frozen=True)
class Planned(Generic[A]):
    """The planner's reply, and a decision per tool call (none in a final-answer-only
    activity, whose calls fail the run)."""

    message: Message
    final_value: Any = None
    decisions: tuple[Decision[A], ...] = ()
    limits: Limits = field(default_factory=Limits)
    #: What the activity's model calls cost (the responses the planner got from the clients
    #: it reached through ``input.agent.model``).
    usage: Usage = field(default_factory=Usage, metadata=ADDED)
    #: Whether the activity was final-answer-only (its reply may hold no tool call).
    finalized: bool = field(default=False, metadata=ADDED)


@dataclass(frozen=True)
class ConfirmationRequest:
    """A call waiting for a person's decision: the prompt rendered from the call's saved
    contract, and the arguments that will execute."""

    run_id: str
    agent_id: str
    tool_id: str
    tool_call_id: str
    title: str | None
    prompt: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Verdict:
    """A confirmer's decision that also says who made it (``by``: a person, a policy...),
    recorded on the confirmation's span and log line. A confirmer may return a plain bool."""

    approved: bool
    by: str | None = None


#: Decides a confirmation: True runs the tool, False answers with the denied-result template
#: (or a :class:`Verdict`, which also names who decided).
Confirmer = Callable[[ConfirmationRequest], Awaitable[bool | Verdict]]


@dataclass(frozen=True)
class Prepared:
    """An accepted call made ready to run, or ``result`` when it ended here (invalid
    arguments, a source outside the agent's consumption, no confirmer, a template error).

    ``arguments`` are the validated payload as JSON values (defaults filled in): what a person
    confirms, what a denial is rendered with, and what a child run receives.
    """

    result: ToolResultPart | None = None
    route: Route = "executor"
    arguments: Any = None
    #: Set when the call must be confirmed first.
    confirmation: ConfirmationRequest | None = None
    #: The child run of an agent exposed as the tool (``run_id`` is given by the engine).
    child: RunRequest | None = None


@dataclass(frozen=True)
class ConfirmationDecision:
    """A person's (or policy's) decision on one confirmation. ``error`` says why there is no
    decision (the confirmer failed): the call does not run."""

    approved: bool = False
    error: str = ""

    @classmethod
    def of(cls, answer: bool | Verdict) -> tuple[ConfirmationDecision, str | None]:
        """The decision a confirmer's answer makes, and who made it (if it says)."""
        if isinstance(answer, Verdict):
            return cls(approved=bool(answer.approved)), answer.by
        return cls(approved=bool(answer)), None


@dataclass(frozen=True)
class Admission:
    """A registry call's admission: the admitted call, or the tool error that ends it."""

    ref: CallRef | None = None
    result: ToolResultPart | None = None


@dataclass(frozen=True)
class ChildOutcome:
    """What a parent needs of a child run to answer its agent-as-tool call."""

    run_id: str
    final_text: str
    final_value: Any = None
    #: What the child run's model calls cost, its own child runs' included (the parent's
    #: usage counts it).
    usage: Usage = field(default_factory=Usage, metadata=ADDED)
