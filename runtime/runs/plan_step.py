"""The planning step: one planning activity, from its catalog to the accepted calls.

The step builds the activity's catalog (the agent's compiled tools plus what its registry
consumption resolves now; a final-answer-only activity reads no registry), asks the planner
(``plan_start`` or ``plan_resume``), and accepts or refuses each call of the reply against that
same catalog and the run's budget: an accepted call saves the contract it was accepted under.
The first activity of a run also checks what must hold before anything runs: the required
labels, the policies, and the call IDs of the conversation the run starts from.

The step reads only its task and the host's registrations, so it runs the same in process and
as a durable engine's activity (a worker's host is the application's own ``Runtime``).
"""

from __future__ import annotations

import logging
import reprlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.contracts.codecs import encode_exact
from agentgen.runtime.messages import Message, ToolCallPart, ToolResultPart
from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.runs.call_ids import claim_call_ids
from agentgen.runtime.runs.catalog import PlanningCatalog, Refusal
from agentgen.runtime.runs.host import AgentRegistration, RunHost
from agentgen.runtime.runs.model_calls import ModelCalls, UsageMeter, check_model_timeout
from agentgen.runtime.runs.policy import EffectivePolicy, merge, missing_labels
from agentgen.runtime.runs.requests import MissingLabelsError, RunError
from agentgen.runtime.runs.results import outcome_of, tool_error
from agentgen.runtime.runs.steps import Decision, Limits, Planned, PlanTask
from agentgen.runtime.telemetry.config import active
from agentgen.runtime.telemetry.exceptions import described
from agentgen.runtime.telemetry.spans import Planning
from agentgen.runtime.trace.events import TraceError, loaded_tools

__all__ = ["plan"]

_LOG = logging.getLogger("agentgen.plan")


async def plan(
    host: RunHost,
    task: PlanTask,
    *,
    limit: tuple[str, float] | None = None,
    meter: UsageMeter | None = None,
) -> Planned[AcceptedCall]:
    """``limit`` is an engine's own time limit on the activity (its name and seconds), which
    the run policy's model timeout must stay under; ``meter`` counts the model calls' usage
    (an engine that retries the step starts it with the earlier attempts')."""
    kind = "start" if task.start else "final" if task.finalize else "resume"
    with Planning(task.run.agent_id, task.run.run_id, task.activity, kind) as span:
        if span.on:
            static = host.agent(task.run.agent_id).definition.specs
            span.results(
                [(r.tool_id, r.call_id, outcome_of(r)) for r in task.tool_results],
                _known(lambda tool_id: any(spec.id == tool_id for spec in static)),
            )
        planned = await _plan(host, task, span, limit, meter)
        calls = planned.message.tool_calls()
        span.decided(len(calls), sum(1 for d in planned.decisions if d.accepted is not None))
        if not calls:
            span.answered(lambda: _loaded((*task.messages, planned.message)))
        return planned


#: Tool errors of calls the planning step refused: the only results whose tool may be one the
#: agent does not have (any other result answers an accepted call, made to a catalog's tool).
_REFUSED = frozenset({"not_permitted", "budget_exhausted"})


def _known(has_tool: Callable[[str], bool]) -> Callable[[str, str], bool]:
    """Whether a result's tool (ID, outcome) is one of the agent's, for the tool-call metric:
    a result of an accepted call, or of a refused call to a tool ``has_tool`` knows. A final
    activity's catalog holds no registry tool, which the first rule covers for the calls that
    ran."""
    return lambda tool_id, outcome: outcome not in _REFUSED or has_tool(tool_id)


def _loaded(messages: Sequence[Message]) -> int | None:
    """How many tools the run's searches loaded, for the metric; a transcript whose search
    records cannot be read is not counted (its next replay names the message)."""
    try:
        return len(loaded_tools(messages))
    except TraceError as exc:
        _LOG.warning("tools loaded not counted: %s", described(exc, active().capture_payloads))
        return None


async def _plan(
    host: RunHost,
    task: PlanTask,
    span: Planning,
    limit: tuple[str, float] | None,
    meter: UsageMeter | None,
) -> Planned[AcceptedCall]:
    registration = host.agent(task.run.agent_id)
    definition = registration.definition
    if task.start:
        # The compiled tools' own requirements too: a generated definition lists them all in
        # required_labels, a hand-built one may not, and nothing checks them later.
        required = (
            *definition.required_labels,
            *(label for spec in definition.specs for label in spec.required_labels),
        )
        missing = missing_labels(required, task.run.labels)
        if missing:
            raise MissingLabelsError(
                f"agent {definition.id!r}: run is missing required labels: {', '.join(missing)}"
            )
    try:
        policy = merge(definition.policy, host.policy, task.policy)
    except ValueError as exc:
        raise RunError(f"agent {definition.id!r}: {exc}") from None
    check_model_timeout(policy.model_timeout, limit, definition.id, task.run.run_id)
    budget = policy.max_tool_calls
    # A run whose budget is spent (0 from the start) only answers: its first activity too.
    finalize = task.finalize or (budget is not None and task.calls_made >= budget)
    if finalize:
        span.final_answer_only()
    models = ModelCalls(host, definition.id, task.run.run_id, policy.model_timeout, meter)
    if task.start:
        seen: dict[str, str] = {}
        for index, message in enumerate(task.messages):
            where = f"message {index} of the conversation"
            claim_call_ids(seen, definition.id, message.tool_calls(), where)
    started = time.perf_counter()
    catalog = await _catalog(host, registration, task, policy, models, finalize)
    span.catalog(time.perf_counter() - started, lambda: _counts(catalog))
    span.tools_known(_known(catalog.has_tool))
    restrict = policy.tools.restrict_to_tool
    # A final-answer-only first activity (budget 0) reads no registry, so its catalog cannot
    # tell a registry tool from a tool the agent does not have: it offers none anyway.
    unread = finalize and definition.registry_tools is not None
    if task.start and restrict is not None and not unread and not catalog.has_tool(restrict):
        # Restricted to a tool it does not have, the run would offer the model no tool at all.
        raise RunError(
            f"agent {definition.id!r}: the run policy restricts the run to tool {restrict!r}, "
            "which is not a tool of the agent (nor of the registries it consumes); pass "
            "RunPolicy(restrict_to_tool=...) one of the agent's tool IDs"
        )
    lacking = catalog.lacking_labels(restrict) if task.start and restrict is not None else ()
    if lacking:
        # Never offered to this run, the tool would leave the model no tool at all either.
        raise MissingLabelsError(
            f"agent {definition.id!r}: the run policy restricts the run to tool {restrict!r}, "
            f"which requires run labels this run does not have: {', '.join(lacking)}; start "
            "the run with them, or restrict it to another tool"
        )
    planner = registration.planner
    result: PlanResult
    if task.start:
        result = await planner.plan_start(
            PlanInput(task.messages, catalog, task.run, finalize=finalize)
        )
    else:
        result = await planner.plan_resume(
            PlanResumeInput(
                task.messages,
                catalog,
                task.run,
                tool_results=task.tool_results,
                finalize=finalize,
            )
        )
    _check_reply(result, planner, definition.id, task.run.run_id)
    _check_final_value(result.final_value, definition.id, task.run.run_id)
    calls = result.message.tool_calls()
    decisions = () if finalize else _accept(catalog, calls, policy, task.calls_made)
    return Planned(
        result.message,
        result.final_value,
        decisions,
        Limits(policy.max_tool_calls, policy.max_consecutive_failed_tool_calls),
        models.usage,
        finalized=finalize,
    )


def _check_reply(result: object, planner: object, agent_id: str, run_id: str) -> None:
    """Refuse a planner's reply that is not one assistant message in a ``PlanResult``: the
    run would fail later with a bare ``AttributeError`` naming nothing, or, worse, store a
    ``user``, ``system`` or ``tool`` message (or a tool result in an assistant message) as
    the model's turn, which the next run replays as something nobody said."""
    where = f"agent {agent_id!r} (run {run_id!r}): planner {type(planner).__name__}"
    if isinstance(result, Message):
        raise RunError(
            f"{where} returned a Message, not a PlanResult; return PlanResult(message) (with "
            "final_value=... for a structured answer)"
        )
    if not isinstance(result, PlanResult):
        raise RunError(
            f"{where} returned {reprlib.repr(result)} ({type(result).__name__}), not a "
            "PlanResult; return PlanResult(Message('assistant', parts))"
        )
    message: object = result.message
    if not isinstance(message, Message):
        raise RunError(
            f"{where} returned a PlanResult whose message is {reprlib.repr(message)} "
            f"({type(message).__name__}), not a Message; return "
            "PlanResult(Message('assistant', parts))"
        )
    if message.role != "assistant":
        raise RunError(
            f"{where} returned a {message.role!r} message; the planner's reply is the "
            "assistant's turn: return PlanResult(Message('assistant', parts))"
        )
    if any(isinstance(part, ToolResultPart) for part in message.parts):
        raise RunError(
            f"{where} returned an assistant message holding a tool result; the run adds the "
            "results of the calls itself: reply with text and tool calls only"
        )


def _check_final_value(value: Any, agent_id: str, run_id: str) -> None:
    """Refuse a structured answer that is not a JSON value, on every engine alike: a durable
    engine could not send it between workers (the in-memory one would pass it on unchecked),
    and a parent's agent tool could not read it."""
    if value is None:
        return
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    try:
        encode_exact(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise RunError(
            f"agent {agent_id!r} (run {run_id!r}): the planner's PlanResult.final_value is not "
            f"a JSON value ({exc}): return dicts, lists, strings, numbers (Decimal too), "
            "booleans and None, or a pydantic model; write a date, say, as its ISO text"
        ) from None


async def _catalog(
    host: RunHost,
    registration: AgentRegistration,
    task: PlanTask,
    policy: EffectivePolicy,
    models: ModelCalls,
    finalize: bool,
) -> PlanningCatalog:
    catalog = PlanningCatalog(
        host,
        registration,
        task.run.labels,
        policy.tools,
        tools_enabled=not finalize,
        models=models,
    )
    tools = registration.definition.registry_tools
    if tools is not None and not finalize:
        await tools.resolve(catalog)
    return catalog


def _counts(catalog: PlanningCatalog) -> tuple[int, int]:
    """The activity's advertised tools, and how many of them are deferred."""
    tools = catalog.advertised_tools()
    return len(tools), sum(1 for tool in tools if tool.deferred)


def _accept(
    catalog: PlanningCatalog,
    calls: Sequence[ToolCallPart],
    policy: EffectivePolicy,
    calls_made: int,
) -> tuple[Decision[AcceptedCall], ...]:
    """Accept each call against the activity's catalog and policy, while the run's budget of
    tool calls lasts: a refused call uses the budget as an accepted one does (the budget
    bounds what the model asks for, so that a model insisting on a tool it may not call
    still comes to an answer)."""
    decisions: list[Decision[AcceptedCall]] = []
    limit = policy.max_tool_calls
    for call in calls:
        if limit is not None and calls_made >= limit:
            refused = tool_error(
                call, "budget_exhausted", f"the run's budget of {limit} tool calls is spent"
            )
            decisions.append(Decision(call, refused=refused))
            continue
        calls_made += 1
        accepted = catalog.accept(call)
        if isinstance(accepted, Refusal):
            refused = tool_error(call, "not_permitted", accepted.reason)
            decisions.append(Decision(call, refused=refused))
            continue
        decisions.append(Decision(call, accepted=accepted))
    return tuple(decisions)
