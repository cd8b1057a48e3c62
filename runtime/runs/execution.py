"""Executing one accepted call with its saved contract.

The arguments are confirmed (when the tool asks for it), decoded and validated with the saved
spec's codec, dispatched (a compiled executor, a registry provider through the saved
registration token, or a child run of the agent exposed as the tool), and the result validated
against the saved result contract. Every failure becomes a tool error result the model can read
(what went wrong, which fields); nothing here crashes a run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from agentgen.runtime.agents.executors import ToolContext
from agentgen.runtime.agents.planning import RunContext
from agentgen.runtime.contracts.codecs import (
    FieldIssue,
    JSONCodec,
    PayloadError,
    decode_exact,
    encode_exact,
    parse_arguments,
)
from agentgen.runtime.messages import Message, ToolCallPart, ToolResultPart
from agentgen.runtime.registry.client import (
    RegistryClient,
    RegistryError,
    ResultStream,
    ToolCallMeta,
)
from agentgen.runtime.runs import confirmation
from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.runs.host import AgentRegistration, RunHost
from agentgen.runtime.runs.registry_calls import bounded, describe, unavailable
from agentgen.runtime.runs.requests import RunRequest

__all__ = ["MAX_OVERLOAD_RETRIES", "ExecutionContext", "execute", "tool_error"]

#: How often an overloaded registry call is retried (with the same admission) before failing.
MAX_OVERLOAD_RETRIES = 3


def tool_error(
    call: ToolCallPart, kind: str, message: str, issues: Sequence[FieldIssue] = ()
) -> ToolResultPart:
    error: dict[str, Any] = {"kind": kind, "message": message}
    if issues:
        error["issues"] = [{"path": i.path, "message": i.message} for i in issues]
    return ToolResultPart(
        call.call_id, call.tool_id, json.dumps({"error": error}, ensure_ascii=False), True
    )


@dataclass
class ExecutionContext:
    host: RunHost
    registration: AgentRegistration
    run: RunContext
    #: Run IDs of child runs started for agent tools (linked to this run), by tool call ID.
    children: dict[str, str] = field(default_factory=dict)


async def execute(context: ExecutionContext, accepted: AcceptedCall) -> ToolResultPart:
    """Execute one call; whatever goes wrong becomes the call's tool error result, so that the
    other calls of the round keep their results."""
    try:
        return await _execute(context, accepted)
    except Exception as exc:
        spec = accepted.spec
        return tool_error(
            accepted.call, "internal_error", f"{spec.id}: {type(exc).__name__}: {exc}"
        )


async def _execute(context: ExecutionContext, accepted: AcceptedCall) -> ToolResultPart:
    call, spec = accepted.call, accepted.spec
    try:
        # Validated before any confirmation: nobody is asked to approve a call that cannot run.
        # Strictly: nothing the model wrote is converted or dropped.
        value = parse_arguments(call.arguments or "{}", f"arguments of {spec.id}")
        payload = spec.payload.codec.decode_arguments(value)
    except PayloadError as exc:
        return tool_error(
            call, "invalid_arguments", f"arguments of {spec.id} are invalid", exc.issues
        )
    # What executes, as JSON: what a person confirms and an agent tool's child run receives.
    arguments = _executed(spec.payload.codec, payload)
    refused = _outside_consumption(context, accepted)
    if refused is not None:
        return refused
    if spec.confirmation is not None:
        denied = await _confirm(context, accepted, arguments)
        if denied is not None:
            return denied
    if spec.kind == "agent":
        return await _run_agent_tool(context, accepted, arguments)
    if accepted.binding is not None:
        return await _call_registry(context, accepted, payload)
    return await _call_executor(context, accepted, payload)


def _executed(codec: JSONCodec[Any], payload: Any) -> Any:
    """The payload that executes, as canonical JSON values (defaults filled in); an optional
    field the model left out and whose default is null stays out, so that templates read it
    with ``args.get("name", ...)``."""
    value = decode_exact(codec.encode(payload))
    if isinstance(payload, BaseModel) and isinstance(value, dict):
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


async def _confirm(
    context: ExecutionContext, accepted: AcceptedCall, arguments: Any
) -> ToolResultPart | None:
    call, spec = accepted.call, accepted.spec
    assert spec.confirmation is not None
    confirmer = context.host.confirmer
    if confirmer is None:
        return tool_error(
            call,
            "confirmation_unavailable",
            f"tool {spec.id} requires confirmation, but the runtime has no confirmer; it did "
            "not run",
        )
    args = arguments if isinstance(arguments, dict) else {}
    try:
        text = confirmation.prompt(spec.confirmation, args, spec.id)
        approved = await confirmer(
            confirmation.ConfirmationRequest(
                run_id=context.run.run_id,
                agent_id=context.run.agent_id,
                tool_id=spec.id,
                tool_call_id=call.call_id,
                title=spec.confirmation.title,
                prompt=text,
                arguments=args,
            )
        )
        if approved:
            return None
        denied = confirmation.denied_result(spec.confirmation, args, spec.id)
    except confirmation.ConfirmationError as exc:
        return tool_error(call, "confirmation_failed", str(exc))
    except Exception as exc:  # the application's confirmer failed: the call did not run
        return tool_error(
            call,
            "confirmation_failed",
            f"confirming {spec.id} failed ({type(exc).__name__}: {exc}); it did not run",
        )
    return ToolResultPart(
        call.call_id, call.tool_id, json.dumps({"denied": denied}, ensure_ascii=False), True
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


async def _call_executor(
    context: ExecutionContext, accepted: AcceptedCall, payload: Any
) -> ToolResultPart:
    call, spec = accepted.call, accepted.spec
    executor = context.registration.executors.get(spec.toolset)
    if executor is None:
        return tool_error(call, "no_executor", f"no executor is registered for {spec.toolset}")
    tool_context = ToolContext(
        run_id=context.run.run_id,
        agent_id=context.run.agent_id,
        tool_id=spec.id,
        tool_call_id=call.call_id,
        labels=context.run.labels,
    )
    try:
        value = await executor.execute(spec.id, payload, tool_context)
    except Exception as exc:
        return tool_error(call, "tool_failed", f"{spec.id} failed: {type(exc).__name__}: {exc}")
    return _encode_result(accepted, value)


async def _call_registry(
    context: ExecutionContext, accepted: AcceptedCall, payload: Any
) -> ToolResultPart:
    call, spec, binding = accepted.call, accepted.spec, accepted.binding
    assert binding is not None
    registration = context.host.registry(binding.registry)
    client: RegistryClient = registration.client
    stream: ResultStream = registration.result_stream
    labels = {
        name: context.run.labels[name]
        for name in spec.required_labels
        if name in context.run.labels
    }
    meta = ToolCallMeta(run_id=context.run.run_id, tool_call_id=call.call_id, labels=labels)
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
        )
    except RegistryError as exc:
        return _registry_failure(call, spec.id, exc)
    except Exception as exc:  # the registry client's failure, not a bug of the run
        if unavailable(exc):
            return tool_error(
                call,
                "registry_unavailable",
                f"{spec.id}: {where} did not answer ({describe(exc)}); the call may not have "
                "been admitted: do not repeat it before checking",
            )
        return tool_error(
            call, "registry_error", f"{spec.id}: the client of {where} failed: {describe(exc)}"
        )
    try:
        outcome = await stream.await_result(ref)
        retries = 0
        while outcome.status == "overloaded":
            if retries == MAX_OVERLOAD_RETRIES:
                # Nothing is in flight: the last retry's outcome was awaited above.
                return tool_error(
                    call,
                    "overloaded",
                    f"{spec.id}: the provider stayed overloaded after {retries} retries; the "
                    "call did not run",
                )
            retried = await bounded(
                registration, client.retry_tool(ref, expected_registration_token=token)
            )
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
        return _registry_failure(call, spec.id, exc)
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
    return tool_error(
        call, "tool_failed", f"{spec.id} failed: {outcome.message or outcome.payload_json}"
    )


def _registry_failure(call: ToolCallPart, tool_id: str, exc: RegistryError) -> ToolResultPart:
    if exc.code == "call_not_admitted":
        return tool_error(
            call,
            "call_not_admitted",
            f"{tool_id} did not run: its provider was replaced before the call was admitted",
        )
    if exc.code == "admission_conflict":
        return tool_error(
            call,
            "admission_conflict",
            f"{tool_id} was not retried: the admission it was accepted under was replaced",
        )
    if exc.code == "not_found":
        return tool_error(call, "not_found", f"{tool_id} did not run: {exc.message}")
    return tool_error(call, "registry_error", f"{tool_id}: {exc}")


async def _run_agent_tool(
    context: ExecutionContext, accepted: AcceptedCall, arguments: Any
) -> ToolResultPart:
    call, spec = accepted.call, accepted.spec
    assert spec.agent_id is not None
    request = RunRequest(
        agent_id=spec.agent_id,
        messages=(Message.user(encode_exact(arguments)),),
        labels=dict(context.run.labels),
        parent_run_id=context.run.run_id,
        parent_tool_call_id=call.call_id,
        result_schema_json=spec.result.schema_json,
    )
    try:
        outcome = await context.host.run(request)
    except Exception as exc:
        return tool_error(
            call, "agent_failed", f"agent {spec.agent_id} failed: {type(exc).__name__}: {exc}"
        )
    context.children[call.call_id] = outcome.run_id
    value = outcome.final_value
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    result_type = json.loads(spec.result.schema_json).get("type")
    if value is None and result_type == "string":
        value = outcome.final_text  # an agent tool without Return answers with its text
    elif value is None and result_type != "null":
        return tool_error(
            call,
            "agent_failed",
            f"agent {spec.agent_id} answered without a structured result (its final answer is "
            f"not valid JSON); tool {spec.id} needs one matching its contract",
        )
    try:
        decoded = spec.result.codec.decode(json.dumps(value, default=str))
    except PayloadError as exc:
        return tool_error(
            call, "invalid_result", f"agent {spec.agent_id} returned an invalid result", exc.issues
        )
    return _encode_result(accepted, decoded)
