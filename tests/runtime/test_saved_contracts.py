"""SPEC G7–G8: accepted calls keep the contract and admission they were accepted under."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.specs import BoundsSpec, ConfirmationSpec, PagingSpec
from agentgen.runtime.contracts.wire import tool_schema
from agentgen.runtime.registry.client import ToolCallMeta
from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.runs.confirmation import ConfirmationRequest
from agentgen.runtime.runs.requests import MissingLabelsError
from agentgen.runtime.search.document import search_document
from tests.runtime.agents import (
    ScriptedPlanner,
    Sources,
    answer,
    calls,
    echo_handler,
    records_definition,
    registry_runtime,
)
from tests.runtime.fake_registry import FakeRegistry

PAY = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}


def payments(
    prompt: str = "Pay {{ amount }}?", payload: dict[str, Any] | None = None
) -> ToolsetDeclaration:
    def declare(name: str, **extra: Any) -> Any:
        return tool_schema(
            tool_id=f"payments.{name}",
            title=name.title(),
            description=f"{name} a payment.",
            tags=(),
            payload_schema=payload or PAY,
            payload_name=None,
            result_schema={"type": "object"},
            result_name=None,
            search=search_document(f"payments.{name}", name, name, payload or PAY),
            **extra,
        )

    return ToolsetDeclaration(
        name="payments",
        version="1",
        tools=[
            declare(
                "pay",
                confirmation=ConfirmationSpec(prompt, "Payment of {{ amount }} denied."),
                required_labels=("tenant",),
            ),
            declare(
                "list",
                bounds=BoundsSpec(PagingSpec("cursor", "next", continue_tool="payments.more")),
            ),
            declare(
                "more", bounds=BoundsSpec(PagingSpec("cursor", "next", source_tool="payments.list"))
            ),
        ],
    )


def setup(
    registry: FakeRegistry,
    planner: ScriptedPlanner,
    decisions: list[ConfirmationRequest],
    approve: bool = True,
) -> Any:
    async def confirm(request: ConfirmationRequest) -> bool:
        decisions.append(request)
        return approve

    rt, _ = registry_runtime(registry, confirm=confirm)
    definition = records_definition(id="test.payer", specs=(), deferred_tool_ids=())
    sources = Sources(toolsets=[("company", "payments", "", False)])
    rt.register_agent(definition.with_registry_tools(sources), planner=planner, executors={})
    return rt


def error_kind(part: Any) -> str:
    assert part.is_error
    kind: str = json.loads(part.content)["error"]["kind"]
    return kind


async def test_accepted_calls_save_definition_partner_and_token() -> None:
    registry = FakeRegistry()
    token = registry.publish(payments(), echo_handler)
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    outcome = (
        await setup(registry, planner, []).client("test.payer").run("go", labels={"tenant": "t"})
    )
    (accepted,) = outcome.accepted_calls
    assert accepted.spec.id == "payments.list"
    assert accepted.partner is not None and accepted.partner.id == "payments.more"
    assert accepted.binding is not None
    assert (accepted.binding.registry, accepted.binding.toolset) == ("company", "payments")
    assert accepted.binding.registration_token == token
    assert accepted.binding.declaration["name"] == "payments.list"


async def test_provider_replaced_between_acceptance_and_execution() -> None:
    """The call keeps its saved contract: the old confirmation prompt, the old payload schema
    (the new one would reject the arguments), and the old admission token, which the registry
    refuses because it was replaced before publication (call_not_admitted)."""
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    stricter = {**PAY, "properties": {**PAY["properties"], "region": {"type": "string"}},
                "required": ["amount", "region"]}  # fmt: skip
    registry.replace_after_resolve["payments"] = payments("NEW PROMPT {{ region }}", stricter)
    decisions: list[ConfirmationRequest] = []
    planner = ScriptedPlanner([calls(("payments.pay", {"amount": 5})), answer()])
    rt = setup(registry, planner, decisions)
    outcome = await rt.client("test.payer").run("pay", labels={"tenant": "t"})
    assert [d.prompt for d in decisions] == ["Pay 5?"]
    assert error_kind(outcome.transcript[2].parts[0]) == "call_not_admitted"
    assert registry.calls == []  # never sent old arguments to the new contract


async def test_restore_uses_the_saved_declaration_not_the_current_catalog() -> None:
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    planner = ScriptedPlanner([calls(("payments.pay", {"amount": 5})), answer()])
    outcome = (
        await setup(registry, planner, []).client("test.payer").run("go", labels={"tenant": "t"})
    )
    checkpoint = json.loads(json.dumps(outcome.accepted_calls[0].to_json()))
    registry.publish(payments("changed {{ amount }}"), echo_handler, revision="r9")
    restored = AcceptedCall.from_json(checkpoint, lambda tool_id: None)
    original = outcome.accepted_calls[0]
    assert restored.spec.confirmation == original.spec.confirmation
    assert restored.spec.confirmation is not None
    assert restored.spec.confirmation.prompt_template == "Pay {{ amount }}?"
    assert restored.binding == original.binding
    assert restored.spec.payload.schema() == original.spec.payload.schema()
    checkpoint = {
        "call": {"call_id": "c", "tool_id": "records.lookup", "arguments": "{}"},
        "tool": "records.lookup",
        "toolset": "assistant.records",
    }
    specs = {s.id: s for s in records_definition().specs}
    compiled = AcceptedCall.from_json(checkpoint, specs.get)
    assert compiled.spec.id == "records.lookup" and compiled.binding is None


async def test_denied_confirmation_answers_with_the_denied_template() -> None:
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    planner = ScriptedPlanner([calls(("payments.pay", {"amount": 7})), answer()])
    outcome = (
        await setup(registry, planner, [], approve=False)
        .client("test.payer")
        .run("go", labels={"tenant": "t"})
    )
    result = outcome.transcript[2].parts[0]
    assert result.is_error  # type: ignore[union-attr]
    assert json.loads(result.content) == {"denied": "Payment of 7 denied."}  # type: ignore[union-attr]
    assert registry.calls == []


async def test_dynamic_service_calls_use_the_saved_token_and_carry_required_labels() -> None:
    registry = FakeRegistry()
    seen: list[ToolCallMeta] = []

    async def handler(tool: str, payload: Any, meta: ToolCallMeta) -> Any:
        seen.append(meta)
        return {"paid": payload["amount"]}

    token = registry.publish(payments(), handler)
    planner = ScriptedPlanner([calls(("payments.pay", {"amount": 9})), answer()])
    outcome = (
        await setup(registry, planner, [])
        .client("test.payer")
        .run("go", labels={"tenant": "acme", "secret": "x"}, run_id="r")
    )
    assert json.loads(outcome.transcript[2].parts[0].content) == {"paid": 9}  # type: ignore[union-attr]
    assert registry.calls == [("payments.pay", '{"amount":9}', token)]
    assert dict(seen[0].labels) == {"tenant": "acme"}  # only what the contract requires
    assert (seen[0].run_id, seen[0].tool_call_id) == ("r", "c0_payments.pay")


def use_id(run: str, call: str) -> str:
    return hashlib.sha256(f"{run}\0{call}".encode()).hexdigest()


async def test_overload_retry_keeps_the_token() -> None:
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    registry.overload.add(use_id("r", "c0_payments.list"))
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    outcome = (
        await setup(registry, planner, [])
        .client("test.payer")
        .run("go", labels={"tenant": "t"}, run_id="r")
    )
    assert not outcome.transcript[2].parts[0].is_error  # type: ignore[union-attr]
    assert len(registry.calls) == 1


async def test_overload_retry_after_replacement_is_an_admission_conflict() -> None:
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    registry.overload.add(use_id("r", "c0_payments.list"))

    async def replace_then_answer(tool: str, payload: Any, meta: ToolCallMeta) -> Any:
        registry.publish(payments("v2"), echo_handler, revision="r2")
        return {"items": []}

    registry.admissions["payments"].handler = replace_then_answer
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    outcome = (
        await setup(registry, planner, [])
        .client("test.payer")
        .run("go", labels={"tenant": "t"}, run_id="r")
    )
    assert error_kind(outcome.transcript[2].parts[0]) == "admission_conflict"


async def test_published_calls_keep_their_original_result() -> None:
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)

    async def answer_then_replace(tool: str, payload: Any, meta: ToolCallMeta) -> Any:
        registry.publish(payments("v2"), echo_handler, revision="r2")  # replaced after publication
        return {"kept": True}

    registry.admissions["payments"].handler = answer_then_replace
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    outcome = (
        await setup(registry, planner, []).client("test.payer").run("go", labels={"tenant": "t"})
    )
    assert json.loads(outcome.transcript[2].parts[0].content) == {"kept": True}  # type: ignore[union-attr]


async def test_overload_retries_are_bounded_and_every_retry_is_awaited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentgen.runtime.registry.client import CallOutcome, CallRef
    from agentgen.runtime.runs import execution

    monkeypatch.setattr(execution, "OVERLOAD_BACKOFF", (0.0, 0.0, 0.0))
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    log: list[str] = []

    async def always_overloaded(ref: CallRef) -> CallOutcome:
        log.append("await")
        return CallOutcome("overloaded")

    async def retry(ref: CallRef, *, expected_registration_token: str) -> CallRef:
        log.append("retry")
        return ref

    registry.await_result = always_overloaded  # type: ignore[method-assign]
    registry.retry_tool = retry  # type: ignore[method-assign]
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    outcome = (
        await setup(registry, planner, []).client("test.payer").run("go", labels={"tenant": "t"})
    )
    assert error_kind(outcome.transcript[2].parts[0]) == "overloaded"
    assert log == ["await", "retry", "await", "retry", "await", "retry", "await"]


async def test_a_registry_failure_after_admission_is_an_unknown_outcome() -> None:
    # Was "registry_error" with no warning: the model reissued a call that had run.
    from agentgen.runtime.registry.client import CallOutcome, CallRef, RegistryError

    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)

    async def unreachable(ref: CallRef) -> CallOutcome:
        raise RegistryError("service_unavailable", "registry 'company': /calls/result failed")

    registry.await_result = unreachable  # type: ignore[method-assign]
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    outcome = (
        await setup(registry, planner, []).client("test.payer").run("go", labels={"tenant": "t"})
    )
    part = outcome.transcript[2].parts[0]
    assert error_kind(part) == "outcome_unknown"
    assert "/calls/result failed" in part.content and "do not retry" in part.content  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("code", "message", "why"),
    [
        (
            "outcome_unknown",
            "outcome_unknown: payments.list: MCP tool 'list': the session lost the answer",
            "its provider cannot tell whether the call ran",
        ),
        (
            "timeout",
            "timeout: payments.list ran past its deadline",
            "its provider stopped the call at its deadline, while it ran",
        ),
    ],
)
async def test_a_provider_failure_that_may_have_run_is_an_unknown_outcome(
    code: str, message: str, why: str
) -> None:
    # Its provider's executor raised OutcomeUnknownError (an MCP session that lost the answer),
    # or the provider cancelled it mid-run at its deadline: read as tool_failed, the model ran
    # the call again.
    from agentgen.runtime.registry.client import CallOutcome, CallRef

    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)

    async def lost(ref: CallRef) -> CallOutcome:
        error = json.dumps({"code": code, "message": message})
        return CallOutcome("failed", error, message)

    registry.await_result = lost  # type: ignore[method-assign]
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    outcome = (
        await setup(registry, planner, []).client("test.payer").run("go", labels={"tenant": "t"})
    )
    part = outcome.transcript[2].parts[0]
    assert error_kind(part) == "outcome_unknown"
    assert f"payments.list: {why} ({message}); the outcome is unknown: do not retry" in (
        part.content  # type: ignore[union-attr]
    )


async def test_a_failed_call_without_that_code_still_failed() -> None:
    from agentgen.runtime.registry.client import CallOutcome, CallRef

    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)

    async def failed(ref: CallRef) -> CallOutcome:
        return CallOutcome("failed", '{"code": "execution_failed"}', "execution_failed: boom")

    registry.await_result = failed  # type: ignore[method-assign]
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    outcome = (
        await setup(registry, planner, []).client("test.payer").run("go", labels={"tenant": "t"})
    )
    part = outcome.transcript[2].parts[0]
    assert error_kind(part) == "tool_failed"
    assert "execution_failed: boom" in part.content  # type: ignore[union-attr]


async def test_a_retry_the_registry_no_longer_knows_did_not_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentgen.runtime.registry.client import CallOutcome, CallRef, RegistryError
    from agentgen.runtime.runs import execution

    monkeypatch.setattr(execution, "OVERLOAD_BACKOFF", (0.0, 0.0, 0.0))
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)

    async def overloaded(ref: CallRef) -> CallOutcome:
        return CallOutcome("overloaded")

    async def forgotten(ref: CallRef, *, expected_registration_token: str) -> CallRef:
        raise RegistryError("not_found", f"call {ref.tool_use_id} not found")

    registry.await_result = overloaded  # type: ignore[method-assign]
    registry.retry_tool = forgotten  # type: ignore[method-assign]
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    outcome = (
        await setup(registry, planner, []).client("test.payer").run("go", labels={"tenant": "t"})
    )
    part = outcome.transcript[2].parts[0]
    assert error_kind(part) == "not_found" and "did not run" in part.content  # type: ignore[union-attr]


async def test_saved_calls_of_sources_the_agent_no_longer_consumes_do_not_run() -> None:
    from agentgen.runtime.agents.planning import RunContext
    from agentgen.runtime.runs.accepted import AcceptedCall
    from agentgen.runtime.runs.execution import ExecutionContext
    from agentgen.runtime.runs.local import execute

    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    rt = setup(registry, planner, [])
    outcome = await rt.client("test.payer").run("go", labels={"tenant": "t"})
    checkpoint = outcome.accepted_calls[0].to_json()
    assert checkpoint["binding"]["version"] == "1"
    restored = AcceptedCall.from_json(checkpoint, lambda tool_id: None)
    narrower = records_definition(
        id="test.narrow", specs=(), deferred_tool_ids=()
    ).with_registry_tools(Sources(toolsets=[("company", "payments", "2", False)]))
    registration = rt.agent("test.payer").__class__(narrower, planner, {})
    context = ExecutionContext(rt, registration, RunContext("r2", "test.narrow"))
    result = await execute(context, restored)
    assert error_kind(result) == "not_permitted"
    assert (
        "outside the agent's declared consumption" in json.loads(result.content)["error"]["message"]
    )


async def paid_and_restored(
    decisions: list[ConfirmationRequest],
) -> tuple[Any, ScriptedPlanner, AcceptedCall, FakeRegistry]:
    """A run that paid (its confirmations in ``decisions``), and its call as a checkpoint
    restores it."""
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    planner = ScriptedPlanner([calls(("payments.pay", {"amount": 1})), answer()])
    rt = setup(registry, planner, decisions)
    outcome = await rt.client("test.payer").run("go", labels={"tenant": "t"})
    restored = AcceptedCall.from_json(outcome.accepted_calls[0].to_json(), lambda tool_id: None)
    return rt, planner, restored, registry


async def test_saved_calls_outside_consumption_are_refused_before_confirmation() -> None:
    from agentgen.runtime.agents.planning import RunContext
    from agentgen.runtime.runs.execution import ExecutionContext
    from agentgen.runtime.runs.local import execute

    decisions: list[ConfirmationRequest] = []
    rt, planner, restored, _ = await paid_and_restored(decisions)
    assert len(decisions) == 1
    narrower = records_definition(
        id="test.narrow", specs=(), deferred_tool_ids=()
    ).with_registry_tools(Sources(toolsets=[("company", "payments", "2", False)]))
    registration = rt.agent("test.payer").__class__(narrower, planner, {})
    result = await execute(
        ExecutionContext(rt, registration, RunContext("r2", "test.narrow")), restored
    )
    assert error_kind(result) == "not_permitted"
    assert len(decisions) == 1  # nobody was asked to approve a call that cannot run


async def test_a_saved_call_is_never_admitted_without_a_label_its_tool_requires() -> None:
    """Accepting refuses such calls; a saved one (a checkpoint restored into a run without the
    label) is refused at admission, naming the tool and the label, and never sent."""
    from agentgen.runtime.agents.planning import RunContext
    from agentgen.runtime.runs.execution import ExecutionContext, admit

    rt, _, restored, registry = await paid_and_restored([])
    assert len(registry.calls) == 1
    context = ExecutionContext(rt, rt.agent("test.payer"), RunContext("r2", "test.payer"))
    admission = await admit(context, restored)
    assert admission.ref is None and admission.result is not None
    assert error_kind(admission.result) == "not_permitted"
    assert json.loads(admission.result.content)["error"]["message"].startswith(
        "tool 'payments.pay' requires run labels this run does not have: tenant;"
    )
    assert len(registry.calls) == 1


async def test_a_run_restricted_to_a_tool_it_lacks_the_labels_for_fails_at_start() -> None:
    """Never offered to a run without its labels, the tool would leave the run no tool at all:
    the run started, and the model was offered nothing."""
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    planner = ScriptedPlanner([answer("nothing to call")])
    rt = setup(registry, planner, [])
    policy = RunPolicy(restrict_to_tool="payments.pay")
    with pytest.raises(MissingLabelsError) as info:
        await rt.client("test.payer").run("go", policy=policy)
    assert str(info.value) == (
        "agent 'test.payer': the run policy restricts the run to tool 'payments.pay', which "
        "requires run labels this run does not have: tenant; start the run with them, or "
        "restrict it to another tool"
    )
    assert planner.inputs == []
    outcome = await rt.client("test.payer").run("go", policy=policy, labels={"tenant": "t"})
    assert outcome.final_text == "nothing to call"
    assert [t.id for t in planner.seen[0]] == ["payments.pay"]
