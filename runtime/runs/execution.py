"""Executing one accepted call with its saved contract, as steps every engine runs.

:func:`prepare` decodes and validates the arguments with the saved spec's codec, checks that
the agent still consumes the call's registry source and renders the confirmation prompt from
the saved contract; after the decision (:func:`deny` renders a refusal), the call runs through
a compiled executor (:func:`call_executor`), a registry provider under the saved registration
token (:func:`admit`, then :func:`await_outcome`), or as a child run of the agent exposed as
the tool (:func:`agent_result` validates its answer). Each result is validated against the
saved result contract. Every failure becomes a tool error result the model can read (what went
wrong, which fields); nothing here crashes a run.

The run loop (:func:`~agentgen.runtime.runs.loop.run_call`) composes the steps; in process
they run through :class:`~agentgen.runtime.runs.local.LocalCallSteps`, on Temporal as
activities.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import random
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from agentgen.runtime.agents.executors import OutcomeUnknownError, ToolContext, nested_runs_at
from agentgen.runtime.agents.planning import RunContext
from agentgen.runtime.contracts.codecs import (
    JSONCodec,
    PayloadError,
    decode_exact,
    encode_exact,
    parse_arguments,
)
from agentgen.runtime.contracts.model_numbers import decimals_as_numbers
from agentgen.runtime.failures import message_of
from agentgen.runtime.messages import Message, ToolCallPart, ToolResultPart
from agentgen.runtime.registry.client import (
    MAX_CALL_DEPTH,
    CallRef,
    RegistryClient,
    RegistryError,
    ResultStream,
    ToolCallMeta,
)
from agentgen.runtime.runs import confirmation
from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.runs.host import AgentRegistration, RunHost
from agentgen.runtime.runs.loop import describe_failure
from agentgen.runtime.runs.policy import lacking_labels, missing_labels
from agentgen.runtime.runs.registry_calls import bounded, describe, unavailable
from agentgen.runtime.runs.requests import RunRequest
from agentgen.runtime.runs.results import outcome_of, outcome_unknown, timed_out, tool_error
from agentgen.runtime.runs.steps import (
    Admission,
    ChildOutcome,
    ConfirmationDecision,
    ConfirmationRequest,
    Confirmer,
    Prepared,
    Route,
    Verdict,
)
from agentgen.runtime.tasks import DeadlinePassed, within_deadline
from agentgen.runtime.telemetry.spans import Confirmation, ToolExecution

__all__ = [
    "MAX_OVERLOAD_RETRIES",
    "OVERLOAD_BACKOFF",
    "ExecutionContext",
    "admit",
    "agent_result",
    "await_outcome",
    "call_executor",
    "decide",
    "deny",
    "prepare",
    "tool_error",
]

#: Pauses (seconds, before a random cut of up to half) before each retry of an overloaded
#: registry call: a provider that gave a call back is busy now, and asking again at once only
#: finds it busy again (three retries used to land within a few milliseconds).
OVERLOAD_BACKOFF = (0.25, 1.0, 4.0)

#: How often an overloaded registry call is retried (with the same admission) before failing.
MAX_OVERLOAD_RETRIES = len(OVERLOAD_BACKOFF)


def overload_pause(retry: int) -> float:
    """The pause before retry ``retry`` (0-based) of an overloaded call, jittered so that the
    consumers a busy provider gave calls back to do not all come back at the same moment."""
    return OVERLOAD_BACKOFF[retry] * (0.5 + random.random() / 2)


@dataclass
class ExecutionContext:
    host: RunHost
    registration: AgentRegistration
    run: RunContext
    #: Run IDs of child runs started for agent tools (linked to this run), by tool call ID.
    children: dict[str, str] = field(default_factory=dict)
    #: Longest a tool may run in process (an executor's call, the wait for a registry
    #: call's outcome); None bounds nothing (a durable engine bounds its activities itself).
    tool_timeout: float | None = None


async def decide(confirmer: Confirmer, request: ConfirmationRequest) -> ConfirmationDecision:
    """Ask ``confirmer`` about ``request``, as a confirmation span where the decision is made
    (a run's process in memory; the process that waits for a durable run on Temporal)."""
    with Confirmation(
        request.tool_id,
        request.tool_call_id,
        agent_id=request.agent_id,
        run_id=request.run_id,
        prompt=request.prompt,
    ) as span:
        try:
            pending = confirmer(request)
            if not inspect.isawaitable(pending):
                raise TypeError(
                    f"the confirmer is not async: it returned {pending!r} instead of an "
                    "awaitable; declare it with async def"
                )
            answer = await pending
        except Exception as exc:  # the application's confirmer failed: the call did not run
            error = f"{type(exc).__name__}: {message_of(exc)}"
            span.decided("failed", error=error)
            return ConfirmationDecision(error=error)
        if not _is_verdict(answer):  # "no" or None must never approve (or deny) by accident
            error = (
                f"the confirmer answered {answer!r} ({type(answer).__name__}), which is not a "
                "decision; it must answer True, False or Verdict(approved: bool, by=...)"
            )
            span.decided("failed", error=error)
            return ConfirmationDecision(error=error)
        decision, by = ConfirmationDecision.of(answer)
        span.decided("approved" if decision.approved else "denied", by)
        return decision


def _is_verdict(answer: object) -> bool:
    if isinstance(answer, Verdict):
        return isinstance(answer.approved, bool)
    return isinstance(answer, bool)


def prepare(context: ExecutionContext, accepted: AcceptedCall, *, confirmable: bool) -> Prepared:
    """Make an accepted call ready to run, or end it with its tool error.

    The arguments are validated before any confirmation (nobody is asked to approve a call
    that cannot run), strictly: nothing the model wrote is converted or dropped. ``confirmable``
    says whether anyone can decide a confirmation (the runtime has a confirmer).
    """
    call, spec = accepted.call, accepted.spec
    try:
        payload = _payload(accepted)
    except PayloadError as exc:
        return Prepared(
            tool_error(call, "invalid_arguments", f"arguments of {spec.id} are invalid", exc.issues)
        )
    # What executes, as JSON: what a person confirms and an agent tool's child run receives.
    arguments = _executed(spec.payload.codec, payload)
    refused = _outside_consumption(context, accepted)
    if refused is not None:
        return Prepared(refused)
    route: Route = "executor"
    if spec.kind == "agent":
        route = "agent"
    elif accepted.binding is not None:
        route = "registry"
    request = None
    if spec.confirmation is not None:
        if not confirmable:
            return Prepared(
                tool_error(
                    call,
                    "confirmation_unavailable",
                    f"tool {spec.id} requires confirmation, but the runtime has no confirmer; it "
                    "did not run",
                )
            )
        args = arguments if isinstance(arguments, dict) else {}
        try:
            text = confirmation.prompt(spec.confirmation, args, spec.id)
        except confirmation.ConfirmationError as exc:
            return Prepared(tool_error(call, "confirmation_failed", str(exc)))
        request = ConfirmationRequest(
            run_id=context.run.run_id,
            agent_id=context.run.agent_id,
            tool_id=spec.id,
            tool_call_id=call.call_id,
            title=spec.confirmation.title,
            prompt=text,
            arguments=args,
        )
    child = _child_request(context, accepted, arguments) if route == "agent" else None
    return Prepared(None, route, arguments, request, child)


def deny(accepted: AcceptedCall, arguments: Any) -> ToolResultPart:
    """The result of a denied call: its saved denied-result template, rendered."""
    call, spec = accepted.call, accepted.spec
    assert spec.confirmation is not None
    args = arguments if isinstance(arguments, dict) else {}
    try:
        denied = confirmation.denied_result(spec.confirmation, args, spec.id)
    except confirmation.ConfirmationError as exc:
        return tool_error(call, "confirmation_failed", str(exc))
    return ToolResultPart(
        call.call_id, call.tool_id, json.dumps({"denied": denied}, ensure_ascii=False), True
    )


def _payload(accepted: AcceptedCall) -> Any:
    """The call's arguments decoded and validated with the saved spec's codec."""
    spec = accepted.spec
    value = parse_arguments(accepted.call.arguments or "{}", f"arguments of {spec.id}")
    return spec.payload.codec.decode_arguments(value)


def _executed(codec: JSONCodec[Any], payload: Any) -> Any:
    """The payload that executes, as canonical JSON values (defaults filled in); an optional
    field the model left out and whose default is null stays out, so that templates read it
    with ``args.get("name", ...)``."""
    value = decode_exact(codec.encode(payload))
    if isinstance(payload, BaseModel):
        value = decimals_as_numbers(payload, value)  # pydantic writes a Decimal as a string
        if isinstance(value, dict):
            for name, info in type(payload).model_fields.items():
                if name not in payload.model_fields_set and getattr(payload, name) is None:
                    value.pop(info.serialization_alias or info.alias or name, None)
    return value


def _outside_consumption(
    context: ExecutionContext, accepted: AcceptedCall
) -> ToolResultPart | None:
    """A saved (restored) registry call keeps its contract, but only the agent's current
    consumption decides whether its source may still be used: checked before anyone is asked
    to confirm it."""
    binding = accepted.binding
    if binding is None:
        return None
    sources = context.registration.definition.registry_tools
    if sources is not None and sources.allows(binding.registry, binding.toolset, binding.version):
        return None
    return tool_error(
        accepted.call,
        "not_permitted",
        f"{accepted.spec.id}: registry {binding.registry!r} toolset {binding.toolset!r} "
        f"(version {binding.version or 'any'}) is outside the agent's declared consumption; "
        "the call did not run",
    )


def _encode_result(accepted: AcceptedCall, value: Any) -> ToolResultPart:
    call, spec = accepted.call, accepted.spec
    try:
        content = spec.result.codec.encode(value)
    except PayloadError as exc:
        return tool_error(
            call,
            "invalid_result",
            f"{spec.id} returned a result that does not match its contract",
            exc.issues,
        )
    return ToolResultPart(call.call_id, call.tool_id, content)


def _execution(context: ExecutionContext, accepted: AcceptedCall, route: Route) -> ToolExecution:
    call, spec = accepted.call, accepted.spec
    return ToolExecution(
        spec.id,
        call.call_id,
        agent_id=context.run.agent_id,
        run_id=context.run.run_id,
        route=route,
        toolset=spec.toolset,
        arguments=call.arguments,
    )


async def call_executor(context: ExecutionContext, accepted: AcceptedCall) -> ToolResultPart:
    """Run a compiled tool through its toolset's executor (an ``execute_tool`` span); the
    result is validated against the saved result contract."""
    with _execution(context, accepted, "executor") as span:
        part = await _within_tool_timeout(context, accepted, _call_executor(context, accepted))
        if span.on:  # the outcome is read back from the result only for telemetry
            span.finished(outcome_of(part), part.content)
        return part


async def _within_tool_timeout(
    context: ExecutionContext,
    accepted: AcceptedCall,
    running: Coroutine[Any, Any, ToolResultPart],
) -> ToolResultPart:
    """The tool's result, or ``outcome_unknown`` once it ran longer than the context's
    ``tool_timeout`` (it is cancelled then: an executor may have had part of its effect, and a
    registry provider goes on running the call)."""
    limit = context.tool_timeout
    if limit is None:
        return await running
    try:
        # A tool that turns its cancellation into a failure, or swallows it and answers late,
        # still answers outcome_unknown: the deadline passed, whatever the tool said after it.
        return await within_deadline(limit, running)
    except DeadlinePassed:
        return timed_out(accepted.call, accepted.spec.id, limit)


async def _call_executor(context: ExecutionContext, accepted: AcceptedCall) -> ToolResultPart:
    call, spec = accepted.call, accepted.spec
    payload = _payload(accepted)
    executor = context.registration.executors.get(spec.toolset)
    if executor is None:
        return tool_error(call, "no_executor", f"no executor is registered for {spec.toolset}")
    tool_context = ToolContext(
        run_id=context.run.run_id,
        agent_id=context.run.agent_id,
        tool_id=spec.id,
        tool_call_id=call.call_id,
        labels=context.run.labels,
        call_depth=context.run.call_depth,
    )
    try:
        with nested_runs_at(context.run.call_depth):
            value = await executor.execute(spec.id, payload, tool_context)
    except OutcomeUnknownError as exc:
        return outcome_unknown(call, f"{spec.id}: {message_of(exc)}")
    except Exception as exc:
        return tool_error(call, "tool_failed", f"{spec.id} failed: {describe_failure(exc)}")
    return _encode_result(accepted, value)


async def admit(context: ExecutionContext, accepted: AcceptedCall) -> Admission:
    """Have the registry admit a dynamic call under the saved registration token.

    Never repeated by anyone: once the request left, the call may have been admitted, and a
    second admission could run it twice.
    """
    call, spec, binding = accepted.call, accepted.spec, accepted.binding
    assert binding is not None
    payload = _payload(accepted)
    registration = context.host.registry(binding.registry)
    client: RegistryClient = registration.client
    missing = missing_labels(spec.required_labels, context.run.labels)
    if missing:
        # Accepting refuses such calls; a call saved before that (a restored checkpoint)
        # is refused here rather than admitted without what its provider requires.
        return Admission(result=tool_error(call, "not_permitted", lacking_labels(spec.id, missing)))
    depth = context.run.call_depth
    if depth > MAX_CALL_DEPTH:
        return Admission(result=_too_deep(context, accepted, binding.registry, binding.toolset))
    labels = {name: context.run.labels[name] for name in spec.required_labels}
    meta = ToolCallMeta(
        run_id=context.run.run_id, tool_call_id=call.call_id, labels=labels, call_depth=depth
    )
    token = binding.registration_token
    payload_json = spec.payload.codec.encode(payload)
    where = f"registry {binding.registry!r}"
    try:
        ref = await bounded(
            registration,
            client.call_resolved_tool(
                toolset=binding.toolset,
                tool=spec.id,
                payload_json=payload_json,
                meta=meta,
                expected_registration_token=token,
            ),
            "call",
            toolset=binding.toolset,
            tool=spec.id,
            token=token,
            call_depth=depth,
        )
    except RegistryError as exc:
        return Admission(result=_registry_failure(call, spec.id, exc, admitted=False))
    except Exception as exc:  # the registry client's failure, not a bug of the run
        if unavailable(exc):
            return Admission(
                result=tool_error(
                    call,
                    "registry_unavailable",
                    f"{spec.id}: {where} did not answer ({describe(exc)}); the call may not "
                    "have been admitted: do not repeat it before checking",
                )
            )
        return Admission(
            result=tool_error(
                call, "registry_error", f"{spec.id}: the client of {where} failed: {describe(exc)}"
            )
        )
    return Admission(ref=ref)


def _too_deep(
    context: ExecutionContext, accepted: AcceptedCall, registry: str, toolset: str
) -> ToolResultPart:
    """The refusal of a registry call nested in more than ``MAX_CALL_DEPTH`` others: agents
    published through registries that call each other in a cycle would otherwise start runs
    across processes without end. The call is not sent."""
    run, spec = context.run, accepted.spec
    return tool_error(
        accepted.call,
        "call_depth_exceeded",
        f"agent {run.agent_id!r} (run {run.run_id}) did not call tool {spec.id!r} of toolset "
        f"{toolset!r} (registry {registry!r}): the call would be nested in {run.call_depth} "
        "registry calls (each served by a provider running an agent that called the next), "
        f"and a registry call may be nested in at most {MAX_CALL_DEPTH}. Agents published as "
        "registry tools call each other in a cycle, or hand work down too long a chain: answer "
        "without this tool, and break the cycle in the designs (an agent may hand work to "
        "another, not back)",
    )


async def await_outcome(
    context: ExecutionContext, accepted: AcceptedCall, ref: CallRef
) -> ToolResultPart:
    """Wait for an admitted call's outcome on the result stream (retrying, with the same
    admission, while the provider is overloaded), validated against the saved result contract:
    the ``execute_tool`` span of a registry tool, which its provider runs meanwhile.

    Waiting can be repeated: the stream answers for the admitted call, however often it is
    asked, so a durable engine may wait again on another worker after losing one.
    """
    with _execution(context, accepted, "registry") as span:
        part = await _within_tool_timeout(context, accepted, _await_outcome(context, accepted, ref))
        if span.on:  # the outcome is read back from the result only for telemetry
            span.finished(outcome_of(part), part.content)
        return part


async def _await_outcome(
    context: ExecutionContext, accepted: AcceptedCall, ref: CallRef
) -> ToolResultPart:
    call, spec, binding = accepted.call, accepted.spec, accepted.binding
    assert binding is not None
    registration = context.host.registry(binding.registry)
    client: RegistryClient = registration.client
    stream: ResultStream = registration.result_stream
    token = binding.registration_token
    where = f"registry {binding.registry!r}"
    try:
        outcome = await stream.await_result(ref)
        retries = 0
        while outcome.status == "overloaded":
            if retries >= MAX_OVERLOAD_RETRIES:
                # Nothing is in flight: the last retry's outcome was awaited above.
                return tool_error(
                    call,
                    "overloaded",
                    f"{spec.id}: the provider stayed overloaded after {retries} retries; the "
                    "call did not run",
                )
            await asyncio.sleep(overload_pause(retries))
            try:
                retried = await bounded(
                    registration,
                    client.retry_tool(ref, expected_registration_token=token),
                    "retry",
                    toolset=binding.toolset,
                    tool=spec.id,
                    token=token,
                )
            except RegistryError as exc:
                # The call was given back unrun: a retry the registry no longer knows of did
                # not run either; one it failed to answer may have been queued again.
                return _registry_failure(call, spec.id, exc, admitted=exc.code != "not_found")
            if retried != ref:
                return tool_error(
                    call,
                    "registry_error",
                    f"registry retry changed the admitted call of {spec.id} from {ref} to "
                    f"{retried}; it was not run again",
                )
            retries += 1
            outcome = await stream.await_result(ref)
    except RegistryError as exc:
        return _registry_failure(call, spec.id, exc, admitted=True)
    except Exception as exc:  # admitted, then the registry failed: the effect may exist
        return tool_error(
            call,
            "outcome_unknown",
            f"{spec.id}: {where} failed after admitting the call ({describe(exc)}); the "
            "outcome is unknown: do not retry or issue a replacement call, because the effect "
            "may have occurred",
        )
    if outcome.status == "completed":
        try:
            value = spec.result.codec.decode(outcome.payload_json)
        except PayloadError as exc:
            return tool_error(
                call, "invalid_result", f"{spec.id} returned an invalid result", exc.issues
            )
        return _encode_result(accepted, value)
    if outcome.status == "outcome_unknown":
        return tool_error(
            call,
            "outcome_unknown",
            f"{spec.id}: the outcome is unknown; do not retry or issue a replacement call, "
            "because the effect may have occurred",
        )
    why = _MAY_HAVE_RUN.get(_failure_code(outcome.payload_json) or "")
    if why is not None:
        # Read as tool_failed, the model would run the call again.
        return tool_error(
            call,
            "outcome_unknown",
            f"{spec.id}: {why} ({outcome.message}); the outcome is unknown: do not retry or "
            "issue a replacement call, because the effect may have occurred",
        )
    return tool_error(
        call, "tool_failed", f"{spec.id} failed: {outcome.message or outcome.payload_json}"
    )


#: The codes of a provider's failures whose call may have had its effect, with what they mean:
#: its executor raised OutcomeUnknownError (an MCP session that lost the answer), or the
#: provider cancelled it mid-run at its deadline (as a tool past the engine's tool_timeout,
#: and as the registry itself ends a claimed call past its deadline).
_MAY_HAVE_RUN = {
    "outcome_unknown": "its provider cannot tell whether the call ran",
    "timeout": "its provider stopped the call at its deadline, while it ran",
}


def _failure_code(payload_json: str) -> str | None:
    """The ``code`` of a failed call's error as its provider wrote it (``execution_failed``,
    ``outcome_unknown``...), or None when the error holds none."""
    try:
        error = json.loads(payload_json)
    except (ValueError, RecursionError):
        return None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


def _registry_failure(
    call: ToolCallPart, tool_id: str, exc: RegistryError, *, admitted: bool
) -> ToolResultPart:
    """What the model reads when the registry refused or failed a request about ``call``.

    Only the refusals that say the call did not run are read as such. Any other failure of a
    request about an ``admitted`` call (the registry unreachable past the client's retries, the
    call forgotten once its retention passed, a token refused while waiting) leaves its effect
    possible: reporting it as a plain registry
    error invited the model to issue the call again, and the first one ran.
    """
    if exc.code == "call_not_admitted":
        return tool_error(
            call,
            "call_not_admitted",
            f"{tool_id} did not run: its provider was replaced before the call was admitted",
        )
    if exc.code == "no_provider":
        # Admitted or not, no provider took it: the registry ends only calls nobody claimed.
        return tool_error(call, "no_provider", f"{tool_id}: {exc.message}")
    if exc.code == "admission_conflict":
        return tool_error(
            call,
            "admission_conflict",
            f"{tool_id} was not retried: the admission it was accepted under was replaced",
        )
    if exc.code == "not_found" and not admitted:
        return tool_error(call, "not_found", f"{tool_id} did not run: {exc.message}")
    if admitted and exc.code == "outcome_unknown":
        return tool_error(
            call,
            "outcome_unknown",
            f"{tool_id}: {exc.message}; do not retry or issue a replacement call, because the "
            "effect may have occurred",
        )
    if admitted:
        return tool_error(
            call,
            "outcome_unknown",
            f"{tool_id}: the registry failed after admitting the call ({exc}); the outcome is "
            "unknown: do not retry or issue a replacement call, because the effect may have "
            "occurred",
        )
    if exc.code == "service_unavailable":
        return tool_error(
            call,
            "registry_unavailable",
            f"{tool_id}: {exc}; the call may not have been admitted: do not repeat it before "
            "checking",
        )
    return tool_error(call, "registry_error", f"{tool_id}: {exc}")


def _child_request(context: ExecutionContext, accepted: AcceptedCall, arguments: Any) -> RunRequest:
    """The child run of an agent exposed as a tool: the agent, configuration and result
    contract saved at acceptance, the executed arguments as its user message."""
    call, spec = accepted.call, accepted.spec
    assert spec.agent_id is not None
    return RunRequest(
        agent_id=spec.agent_id,
        messages=(Message.user(encode_exact(arguments)),),
        labels=dict(context.run.labels),
        parent_run_id=context.run.run_id,
        parent_tool_call_id=call.call_id,
        result_schema_json=spec.result.schema_json,
        call_depth=context.run.call_depth,
    )


def agent_result(accepted: AcceptedCall, child: ChildOutcome) -> ToolResultPart:
    """A child run's answer as the agent tool's result, validated against the saved result
    contract (an agent tool without a structured result answers with its text)."""
    call, spec = accepted.call, accepted.spec
    value = child.final_value
    if isinstance(value, BaseModel):
        # pydantic writes a Decimal as a string, which a number contract refuses.
        value = decimals_as_numbers(value, value.model_dump(mode="json", by_alias=True))
    result_type = json.loads(spec.result.schema_json).get("type")
    if value is None and result_type == "string":
        value = child.final_text  # an agent tool without Return answers with its text
    elif value is None and result_type != "null":
        return tool_error(
            call,
            "agent_failed",
            # Said as it is known: no final_value may come of a valid JSON answer too (a
            # planner that left it out, or ModelPlanner reading ``null``, which is none).
            f"agent {spec.agent_id} answered without a structured result (its planner gave no "
            "final_value: its final answer held no JSON value, or null); tool "
            f"{spec.id} needs one matching its contract",
        )
    try:
        # Exact: a planner's structured answer keeps non-integers as Decimal.
        text = encode_exact(value)
    except (TypeError, ValueError) as exc:  # a value that is not JSON (a datetime, NaN...)
        return tool_error(
            call,
            "invalid_result",
            f"agent {spec.agent_id} returned a result that is not JSON: {exc}",
        )
    try:
        decoded = spec.result.codec.decode(text)
    except PayloadError as exc:
        return tool_error(
            call, "invalid_result", f"agent {spec.agent_id} returned an invalid result", exc.issues
        )
    return _encode_result(accepted, decoded)
