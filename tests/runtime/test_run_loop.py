"""SPEC G2, G3, G9, J2: the planner loop, run policy, execution errors, agent tools."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from agentgen.runtime.agents.definition import AgentDefinition, RunPolicy, TagClause
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.app import Runtime
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.runs.requests import MissingLabelsError, RunError
from agentgen.runtime.runs.results import outcome_of
from agentgen.runtime.runs.steps import Verdict
from agentgen.runtime.search.document import search_document
from tests.runtime.agents import ScriptedPlanner, answer, calls, records_definition, register


def error_of(part: Any) -> dict[str, Any]:
    assert isinstance(part, ToolResultPart) and part.is_error
    error: dict[str, Any] = json.loads(part.content)["error"]
    return error


async def test_advertised_definitions_carry_deferred_flags_and_search_documents() -> None:
    rt = Runtime()
    planner = ScriptedPlanner([answer()])
    register(rt, planner)
    await rt.client("test.agent").run("hi")
    (definitions,) = planner.seen
    assert [(d.id, d.deferred) for d in definitions] == [
        ("records.lookup", False),
        ("records.search", True),
        ("records.analyze", True),
    ]
    search = definitions[1]
    assert search.search == search_document(
        search.id, search.title, search.description, search.parameters()
    )
    assert search.parameters()["required"] == ["query"]
    definitions[1].parameters()["required"].append("x")
    assert planner.seen[0][1].parameters()["required"] == ["query"]


async def test_planner_gets_ordinary_calls_results_and_the_transcript() -> None:
    rt = Runtime()
    planner = ScriptedPlanner([calls(("records.search", {"query": "x"})), answer("found")])
    executor = register(rt, planner)
    outcome = await rt.client("test.agent").run("find x", run_id="run-1", labels={"tenant": "a"})
    assert outcome.final_text == "found" and outcome.run_id == "run-1"
    name, args, context = executor.calls[0]
    assert (name, args.query, args.limit) == ("search", "x", 10)
    assert (context.run_id, context.tool_id, context.labels) == (
        "run-1",
        "records.search",
        {"tenant": "a"},
    )
    resume = planner.inputs[1]
    assert isinstance(resume, PlanResumeInput)
    assert [json.loads(r.content) for r in resume.tool_results] == [{"ids": ["r1"]}]
    assert [m.role for m in resume.messages] == ["user", "assistant", "tool"]


async def test_bad_model_arguments_become_a_tool_error_naming_the_field() -> None:
    rt = Runtime()
    planner = ScriptedPlanner(
        [
            calls(("records.search", {"query": "x", "limit": 500})),
            calls(("records.lookup", {})),
            answer(),
        ]
    )
    executor = register(rt, planner)
    outcome = await rt.client("test.agent").run("go")
    first = error_of(outcome.transcript[2].parts[0])
    assert first["kind"] == "invalid_arguments"
    assert first["issues"][0]["path"] == "limit"
    assert "less than or equal to 100" in first["issues"][0]["message"]
    assert error_of(outcome.transcript[4].parts[0])["issues"][0]["path"] == "id"
    assert executor.calls == []


async def test_executor_exceptions_and_invalid_results_are_tool_errors() -> None:
    class Broken:
        async def execute(self, tool_id: str, payload: Any, context: Any) -> Any:
            if tool_id == "records.search":
                raise TimeoutError("backend slow")
            return {"not": "a record"}

    rt = Runtime()
    planner = ScriptedPlanner(
        [calls(("records.search", {"query": "x"}), ("records.lookup", {"id": "1"})), answer()]
    )
    rt.register_agent(
        records_definition(), planner=planner, executors={"assistant.records": Broken()}
    )
    outcome = await rt.client("test.agent").run("go")
    failed, invalid = outcome.transcript[2].parts
    assert error_of(failed) == {
        "kind": "tool_failed",
        "message": "records.search failed: TimeoutError: backend slow",
    }
    assert error_of(invalid)["kind"] == "invalid_result"


async def test_restrict_to_tool_filters_advertising_and_execution() -> None:
    rt = Runtime()
    planner = ScriptedPlanner([calls(("records.search", {"query": "x"})), answer()])
    executor = register(rt, planner)
    outcome = await rt.client("test.agent").run(
        "go", policy=RunPolicy(restrict_to_tool="records.lookup")
    )
    assert [d.id for d in planner.seen[0]] == ["records.lookup"]
    assert error_of(outcome.transcript[2].parts[0])["message"] == (
        "tool 'records.search' is not permitted by the run policy"
    )
    assert executor.calls == []


async def test_restrict_to_a_tool_the_agent_does_not_have_fails_the_run_at_start() -> None:
    rt = Runtime()
    planner = ScriptedPlanner([answer()])
    register(rt, planner)
    with pytest.raises(RunError) as info:
        await rt.client("test.agent").run("go", policy=RunPolicy(restrict_to_tool="records.nope"))
    assert str(info.value) == (
        "agent 'test.agent': the run policy restricts the run to tool 'records.nope', which is "
        "not a tool of the agent (nor of the registries it consumes); pass "
        "RunPolicy(restrict_to_tool=...) one of the agent's tool IDs"
    )
    assert planner.inputs == []  # the model was never asked, with no tool at all


async def test_tag_clauses_allow_and_deny() -> None:
    specs = records_definition().specs
    tagged = tuple(
        spec.__class__(**{**spec.__dict__, "tags": tags})
        for spec, tags in zip(specs, [("read",), ("read", "slow"), ("write",)], strict=True)
    )
    rt = Runtime(policy=RunPolicy(tag_clauses=(TagClause(denied_any=("slow",)),)))
    planner = ScriptedPlanner([calls(("records.analyze", {"ids": []})), answer()])
    register(
        rt,
        planner,
        records_definition(
            specs=tagged, policy=RunPolicy(tag_clauses=(TagClause(allowed_any=("read", "write")),))
        ),
    )
    outcome = await rt.client("test.agent").run(
        "go", policy=RunPolicy(tag_clauses=(TagClause(allowed_any=("read",)),))
    )
    assert [d.id for d in planner.seen[0]] == ["records.lookup"]
    assert error_of(outcome.transcript[2].parts[0])["kind"] == "not_permitted"


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("admin", TypeError),
        (["admin", ""], ValueError),  # strings all: an empty tag is a wrong value
        (("admin", 1), TypeError),
        (None, TypeError),
        ({"admin": "x"}, TypeError),
    ],
)
@pytest.mark.parametrize("name", ["allowed_any", "denied_any"])
def test_a_tag_clause_refuses_anything_but_a_collection_of_tags(
    name: str, value: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match=rf"^TagClause\(\.\.\.\): {name} must be a tuple, list"):
        TagClause(**{name: value})  # type: ignore[arg-type]


def test_a_tag_clause_keeps_its_tags_as_a_tuple() -> None:
    clause = TagClause(["write", "read"], {"slow", "admin"})  # type: ignore[arg-type]
    assert clause == TagClause(("write", "read"), ("admin", "slow"))
    assert isinstance(clause.allowed_any, tuple) and isinstance(clause.denied_any, tuple)


async def test_unknown_tools_are_refused() -> None:
    rt = Runtime()
    planner = ScriptedPlanner([calls(("records.delete", {})), answer()])
    register(rt, planner)
    outcome = await rt.client("test.agent").run("go")
    assert error_of(outcome.transcript[2].parts[0])["message"] == (
        "tool 'records.delete' is not available to this agent"
    )


async def test_max_tool_calls_ends_with_a_final_answer_only_activity() -> None:
    rt = Runtime()
    planner = ScriptedPlanner(
        [
            calls(
                ("records.lookup", {"id": "1"}),
                ("records.lookup", {"id": "2"}),
                ("records.lookup", {"id": "3"}),
            ),
            answer("summary"),
        ]
    )
    executor = register(rt, planner, records_definition(policy=RunPolicy(max_tool_calls=5)))
    outcome = await rt.client("test.agent").run("go", policy=RunPolicy(max_tool_calls=2))
    results = outcome.transcript[2].parts
    assert [r.is_error for r in results] == [False, False, True]  # type: ignore[union-attr]
    assert error_of(results[2])["kind"] == "budget_exhausted"
    assert len(executor.calls) == 2 and outcome.tool_calls == 2
    # The final-answer-only activity still describes the compiled tools but accepts no call.
    assert [d.id for d in planner.seen[1]] == [d.id for d in planner.seen[0]]
    assert planner.inputs[1].finalize  # type: ignore[attr-defined]
    assert outcome.final_text == "summary"


async def test_consecutive_failures_limit_finalizes() -> None:
    rt = Runtime()
    planner = ScriptedPlanner(
        [
            calls(("records.lookup", {})),
            calls(("records.lookup", {}), prefix="d"),
            answer("gave up"),
        ]
    )
    register(rt, planner, records_definition(policy=RunPolicy(max_consecutive_failed_tool_calls=2)))
    outcome = await rt.client("test.agent").run("go")
    assert [i.finalize for i in planner.inputs[1:]] == [False, True]  # type: ignore[attr-defined]
    assert outcome.final_text == "gave up"


async def test_every_call_not_answered_ok_counts_as_failed_a_denied_one_too() -> None:
    # The limit counts results, not causes: a call denied at confirmation or refused counts as
    # one that raised, and only a call answered without error resets the count (docs/runtime.md).
    from dataclasses import replace

    from agentgen.runtime.contracts.specs import ConfirmationSpec

    async def confirm(request: object) -> bool:
        return False

    specs = tuple(
        replace(s, confirmation=ConfirmationSpec("Search?", "No."))
        if s.id == "records.search"
        else s
        for s in records_definition().specs
    )
    rt = Runtime(confirm=confirm)
    planner = ScriptedPlanner(
        [
            calls(("records.search", {"query": "x"})),  # denied: 1
            calls(("records.lookup", {"id": "1"}), prefix="d"),  # ok: 0
            calls(("records.search", {"query": "y"}), prefix="e"),  # denied: 1
            calls(("records.unknown", {}), prefix="f"),  # refused: 2
            answer("gave up"),
        ]
    )
    policy = RunPolicy(max_consecutive_failed_tool_calls=2)
    register(rt, planner, records_definition(specs=specs, policy=policy))
    outcome = await rt.client("test.agent").run("go")
    assert [i.finalize for i in planner.inputs[1:]] == [False, False, False, True]
    kinds = [outcome_of(m.parts[0]) for m in outcome.transcript if m.role == "tool"]  # type: ignore[arg-type]
    assert kinds == ["denied", "ok", "denied", "not_permitted"]
    assert outcome.final_text == "gave up"


async def test_tool_calls_in_a_final_answer_only_activity_fail_the_run() -> None:
    rt = Runtime()
    planner = ScriptedPlanner(
        [calls(("records.lookup", {"id": "1"})), calls(("records.lookup", {"id": "2"}))]
    )
    register(rt, planner, records_definition(policy=RunPolicy(max_tool_calls=1)))
    with pytest.raises(RunError, match="final-answer-only activity"):
        await rt.client("test.agent").run("go")


class ReplyingPlanner:
    """A planner of an application's own that answers every activity with ``reply``."""

    def __init__(self, reply: object) -> None:
        self.reply = reply

    async def plan_start(self, input: PlanInput) -> Any:
        return self.reply

    async def plan_resume(self, input: PlanResumeInput) -> Any:
        return self.reply


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (answer("hi"), "returned a Message, not a PlanResult"),
        (None, "returned None (NoneType), not a PlanResult"),
        (PlanResult("hi"), "whose message is 'hi' (str), not a Message"),  # type: ignore[arg-type]
        (PlanResult(Message.user("hi")), "returned a 'user' message"),
        (PlanResult(Message.system("hi")), "returned a 'system' message"),
        (
            PlanResult(Message("tool", (ToolResultPart("x", "records.lookup", "{}"),))),
            "returned a 'tool' message",
        ),
        (
            PlanResult(Message("assistant", (ToolResultPart("x", "records.lookup", "{}"),))),
            "an assistant message holding a tool result",
        ),
    ],
)
async def test_a_planner_reply_that_is_not_an_assistant_turn_fails_the_run_naming_it(
    reply: object, expected: str
) -> None:
    """Stored as the model's turn, a user or system message would replay as something the
    user or the application said; anything but a PlanResult failed with an AttributeError."""
    rt = Runtime()
    register(rt, ReplyingPlanner(reply))  # type: ignore[arg-type]
    with pytest.raises(RunError) as info:
        await rt.client("test.agent").run("go")
    message = str(info.value)
    assert message.startswith("agent 'test.agent' (run '"), message
    assert "planner ReplyingPlanner " in message and expected in message, message


async def test_required_labels_are_checked_at_start_naming_every_missing_one() -> None:
    rt = Runtime()
    planner = ScriptedPlanner([answer()])
    register(rt, planner, records_definition(required_labels=("tenant", "region", "user")))
    with pytest.raises(MissingLabelsError, match="missing required labels: region, user"):
        await rt.client("test.agent").run("go", labels={"tenant": "acme", "region": ""})
    assert planner.inputs == []
    outcome = await rt.client("test.agent").run(
        "go", labels={"tenant": "a", "region": "b", "user": "c"}
    )
    assert outcome.final_text == "done"


async def test_labels_a_compiled_tool_requires_are_checked_even_if_the_definition_omits_them() -> (
    None
):
    """A hand-built definition (specs of a generated package, ``required_labels`` left out)
    ran a compiled tool requiring ``tenant`` for a run without it: the start checked only the
    definition's aggregate, and nothing checks a compiled tool's labels later."""
    specs = tuple(
        replace(spec, required_labels=("tenant",)) if spec.id == "records.search" else spec
        for spec in records_definition().specs
    )
    rt = Runtime()
    planner = ScriptedPlanner([calls(("records.search", {"query": "x"})), answer()])
    executor = register(rt, planner, records_definition(specs=specs))
    with pytest.raises(MissingLabelsError, match="missing required labels: tenant"):
        await rt.client("test.agent").run("go")
    assert planner.inputs == [] and executor.calls == []
    outcome = await rt.client("test.agent").run("go", labels={"tenant": "acme"})
    assert [name for name, _, _ in executor.calls] == ["search"]
    assert outcome.final_text == "done"


async def test_historical_calls_do_not_authorize_new_ones() -> None:
    """J2: a transcript may hold calls to tools the agent no longer has; new calls to them are
    refused by the current catalog."""
    history = [
        Message.user("earlier"),
        Message("assistant", (ToolCallPart("old", "billing.charge", "{}"),)),
        Message("tool", (ToolResultPart("old", "billing.charge", '{"ok": true}'),)),
        Message("assistant", (TextPart("charged"),)),
        Message.user("again"),
    ]
    rt = Runtime()
    planner = ScriptedPlanner([calls(("billing.charge", {})), answer()])
    register(rt, planner)
    outcome = await rt.client("test.agent").run(history)
    assert outcome.transcript[:5] == tuple(history)
    assert error_of(outcome.transcript[6].parts[0])["kind"] == "not_permitted"


# --------------------------------------------------------------------------- agents as tools


class ExpertPlanner:
    """The exported agent: answers with a structured result, or chat only."""

    def __init__(self, structured: bool = True) -> None:
        self.structured = structured
        self.inputs: list[PlanInput] = []

    async def plan_start(self, input: PlanInput) -> PlanResult:
        self.inputs.append(input)
        question = json.loads(input.messages[-1].text)["question"]
        value = {"answer": f"42 is the answer to {question}"} if self.structured else None
        return PlanResult(Message("assistant", (TextPart("done"),)), final_value=value)

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        raise AssertionError("not expected")


def expert_setup(structured: bool = True) -> tuple[Runtime, ScriptedPlanner, ExpertPlanner]:
    import importlib

    sink = importlib.import_module("tests.runtime.sink_agents")
    rt = Runtime()
    expert = ExpertPlanner(structured)
    rt.register_agent(sink.expert_definition(), planner=expert, executors={})
    planner = ScriptedPlanner([calls(("ask_expert.ask", {"question": "life"})), answer("relayed")])
    rt.register_agent(sink.triage_definition(), planner=planner, executors={})
    return rt, planner, expert


async def test_agent_tools_run_as_child_runs_linked_to_the_parent() -> None:
    rt, _, expert = expert_setup()
    outcome = await rt.client("helpdesk.triage").run("ask", run_id="parent", labels={"tenant": "t"})
    (child,) = outcome.child_runs
    assert child != "parent"
    assert expert.inputs[0].run.parent_run_id == "parent"
    assert expert.inputs[0].run.run_id == child
    assert expert.inputs[0].run.labels == {"tenant": "t"}
    result = outcome.transcript[2].parts[0]
    assert json.loads(result.content) == {"answer": "42 is the answer to life"}  # type: ignore[union-attr]


async def test_agent_tool_answering_in_chat_only_is_rejected() -> None:
    rt, _, _ = expert_setup(structured=False)
    outcome = await rt.client("helpdesk.triage").run("ask", labels={"tenant": "t"})
    error = error_of(outcome.transcript[2].parts[0])
    assert error["kind"] == "agent_failed" and "without a structured result" in error["message"]


@pytest.mark.parametrize("text", ['{"answer": "42"}', "null"])
async def test_an_agent_tool_without_a_final_value_is_not_said_to_answer_invalid_json(
    text: str,
) -> None:
    """The parent's call read "its final answer is not valid JSON" whenever the child's
    planner gave no ``final_value``, also for an answer that is valid JSON (a planner of the
    application's own that left the value out, or ``ModelPlanner`` reading ``null``, which is
    no value): the model was told something false about the child's answer."""

    class JSONTextPlanner(ExpertPlanner):
        async def plan_start(self, input: PlanInput) -> PlanResult:
            return PlanResult(Message("assistant", (TextPart(text),)))

    import importlib

    sink = importlib.import_module("tests.runtime.sink_agents")
    rt = Runtime()
    rt.register_agent(sink.expert_definition(), planner=JSONTextPlanner(), executors={})
    planner = ScriptedPlanner([calls(("ask_expert.ask", {"question": "life"})), answer("relayed")])
    rt.register_agent(sink.triage_definition(), planner=planner, executors={})
    outcome = await rt.client("helpdesk.triage").run("ask", labels={"tenant": "t"})
    error = error_of(outcome.transcript[2].parts[0])
    assert error["kind"] == "agent_failed"
    assert "not valid JSON" not in error["message"], error
    assert error["message"] == (
        "agent helpdesk.expert answered without a structured result (its planner gave no "
        "final_value: its final answer held no JSON value, or null); tool ask_expert.ask "
        "needs one matching its contract"
    )


@pytest.mark.parametrize("as_model", [False, True])
async def test_exact_numbers_of_a_structured_child_answer_stay_numbers(as_model: bool) -> None:
    # A planner's structured answer keeps non-integers exact (Decimal); the parent's result
    # contract must see the number, not its text. Answered as a pydantic model, whose JSON
    # dump writes a Decimal as a string, it was refused as "'0.95' is not of type 'number'".
    import importlib
    from dataclasses import replace
    from decimal import Decimal

    from pydantic import BaseModel

    from agentgen.runtime.contracts.specs import schema_type

    class Answer(BaseModel):
        answer: str
        confidence: Decimal

    sink = importlib.import_module("tests.runtime.sink_agents")
    scored = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
        "required": ["answer", "confidence"],
        "additionalProperties": False,
    }
    ask = replace(sink.ASK, result=schema_type(json.dumps(scored), "ask_expert.ask result"))

    class Scored(ExpertPlanner):
        async def plan_start(self, input: PlanInput) -> PlanResult:
            value: object = {"answer": "42", "confidence": Decimal("0.95")}
            if as_model:
                value = Answer(answer="42", confidence=Decimal("0.95"))
            return PlanResult(Message("assistant", (TextPart("done"),)), final_value=value)

    rt = Runtime()
    rt.register_agent(sink.expert_definition(), planner=Scored(), executors={})
    planner = ScriptedPlanner([calls(("ask_expert.ask", {"question": "life"})), answer("ok")])
    rt.register_agent(
        replace(sink.triage_definition(), specs=(ask,)), planner=planner, executors={}
    )
    outcome = await rt.client("helpdesk.triage").run("ask", labels={"tenant": "t"})
    result = outcome.transcript[2].parts[0]
    assert not result.is_error, result  # type: ignore[union-attr]
    assert result.content == '{"answer":"42","confidence":0.95}'  # type: ignore[union-attr]


async def test_a_compiled_decimal_argument_is_confirmed_and_sent_as_the_number_written() -> None:
    # pydantic writes a Decimal as a string: the child run received {"budget":"19.99"} and a
    # confirmation template's {{ budget * 2 }} failed on the text.
    import importlib
    from dataclasses import replace
    from decimal import Decimal

    from pydantic import BaseModel, ConfigDict

    from agentgen.runtime.contracts.specs import ConfirmationSpec, model_type
    from agentgen.runtime.runs.confirmation import ConfirmationRequest

    class Question(BaseModel):
        model_config = ConfigDict(extra="forbid")
        question: str
        budget: Decimal
        budgets: list[Decimal] = [Decimal("1.50")]

    sink = importlib.import_module("tests.runtime.sink_agents")
    ask = replace(
        sink.ASK,
        payload=model_type(
            Question, json.dumps(Question.model_json_schema()), "ask_expert.ask payload"
        ),
        confirmation=ConfirmationSpec("Spend {{ budget * 2 }} of {{ budgets | tojson }}?", "No."),
    )
    asked: list[ConfirmationRequest] = []

    async def confirm(request: ConfirmationRequest) -> bool:
        asked.append(request)
        return True

    rt = Runtime(confirm=confirm)
    expert = ExpertPlanner()
    rt.register_agent(sink.expert_definition(), planner=expert, executors={})
    planner = ScriptedPlanner(
        [calls(("ask_expert.ask", {"question": "life", "budget": 19.99})), answer()]
    )
    rt.register_agent(
        replace(sink.triage_definition(), specs=(ask,)), planner=planner, executors={}
    )
    outcome = await rt.client("helpdesk.triage").run("ask", labels={"tenant": "t"})
    assert not outcome.transcript[2].parts[0].is_error  # type: ignore[union-attr]
    assert [request.prompt for request in asked] == ["Spend 39.98 of [1.50]?"]
    assert expert.inputs[0].messages[-1].text == (
        '{"question":"life","budget":19.99,"budgets":[1.50]}'
    )


def test_definitions_are_plain_values() -> None:
    assert isinstance(records_definition(), AgentDefinition)


async def test_arguments_are_validated_before_anyone_is_asked_to_confirm() -> None:
    from dataclasses import replace

    from agentgen.runtime.contracts.specs import ConfirmationSpec

    asked: list[object] = []

    async def confirm(request: object) -> bool:
        asked.append(request)
        return True

    specs = tuple(
        replace(s, confirmation=ConfirmationSpec("Search {{ query }}?", "No."))
        for s in records_definition().specs
    )
    rt = Runtime(confirm=confirm)
    planner = ScriptedPlanner([calls(("records.search", {"query": "x", "limit": 5000})), answer()])
    register(rt, planner, records_definition(specs=specs))
    outcome = await rt.client("test.agent").run("go")
    assert error_of(outcome.transcript[2].parts[0])["kind"] == "invalid_arguments"
    assert asked == []


async def test_a_failing_confirmer_fails_only_its_call() -> None:
    from dataclasses import replace

    from agentgen.runtime.contracts.specs import ConfirmationSpec

    async def confirm(request: object) -> bool:
        raise TimeoutError("approver unreachable")

    specs = tuple(
        replace(s, confirmation=ConfirmationSpec("Search?", "No."))
        if s.id == "records.search"
        else s
        for s in records_definition().specs
    )
    rt = Runtime(confirm=confirm)
    planner = ScriptedPlanner(
        [calls(("records.search", {"query": "x"}), ("records.lookup", {"id": "1"})), answer()]
    )
    executor = register(rt, planner, records_definition(specs=specs))
    outcome = await rt.client("test.agent").run("go")
    failed, looked_up = outcome.transcript[2].parts
    assert error_of(failed)["kind"] == "confirmation_failed"
    assert "approver unreachable" in error_of(failed)["message"]
    assert not looked_up.is_error  # type: ignore[union-attr]
    assert [name for name, _, _ in executor.calls] == ["lookup"]


async def confirmation_error(confirm: Any) -> str:
    """The error message ``confirm`` gives a confirmed ``records.search`` call, which must not
    have run."""
    from dataclasses import replace

    from agentgen.runtime.contracts.specs import ConfirmationSpec

    specs = tuple(
        replace(s, confirmation=ConfirmationSpec("Search?", "No."))
        for s in records_definition().specs
    )
    rt = Runtime(confirm=confirm)
    planner = ScriptedPlanner([calls(("records.search", {"query": "x"})), answer()])
    executor = register(rt, planner, records_definition(specs=specs))
    outcome = await rt.client("test.agent").run("go")
    error = error_of(outcome.transcript[2].parts[0])
    assert error["kind"] == "confirmation_failed"
    assert executor.calls == []
    message: str = error["message"]
    return message


@pytest.mark.parametrize("reply", ["no", None, 1, Verdict("yes", by="ops")])  # type: ignore[arg-type]
async def test_a_confirmer_answer_that_is_not_a_decision_runs_nothing(reply: object) -> None:
    async def confirm(request: object) -> object:
        return reply

    message = await confirmation_error(confirm)
    assert f"the confirmer answered {reply!r}" in message
    assert "True, False or Verdict" in message


async def test_a_confirmer_that_is_not_async_fails_its_call_saying_so() -> None:
    def confirm(request: object) -> bool:
        return True

    message = await confirmation_error(confirm)
    assert "the confirmer is not async: it returned True instead of an awaitable; declare it " in (
        message
    )


async def test_agents_exposed_as_tools_must_be_registered_before_the_first_run() -> None:
    import importlib

    from agentgen.runtime.app import RegistrationError

    sink = importlib.import_module("tests.runtime.sink_agents")
    rt = Runtime()
    rt.register_agent(sink.triage_definition(), planner=ScriptedPlanner([answer()]), executors={})
    with pytest.raises(RegistrationError, match="not registered: helpdesk.expert"):
        await rt.client("helpdesk.triage").run("go")


async def test_model_planner_child_runs_answer_structured_contracts_with_json() -> None:
    import importlib

    from agentgen.runtime.agents.model_planner import ModelPlanner
    from agentgen.runtime.model_client import ModelRequest, ModelResponse

    sink = importlib.import_module("tests.runtime.sink_agents")
    requests: list[ModelRequest] = []

    class Expert:
        async def complete(self, request: ModelRequest) -> ModelResponse:
            requests.append(request)
            question = json.loads(request.messages[-1].text)["question"]
            return ModelResponse(
                Message("assistant", (TextPart(json.dumps({"answer": question.upper()})),))
            )

    rt = Runtime()
    rt.register_model("expert", Expert())
    rt.register_agent(sink.expert_definition(), planner=ModelPlanner("expert"), executors={})
    planner = ScriptedPlanner(
        [calls(("ask_expert.ask", {"question": "why 0.5?"})), answer("relayed")]
    )
    rt.register_agent(sink.triage_definition(), planner=planner, executors={})
    outcome = await rt.client("helpdesk.triage").run("ask")
    assert json.loads(outcome.transcript[2].parts[0].content) == {"answer": "WHY 0.5?"}  # type: ignore[union-attr]
    assert requests[0].system is not None and '"answer"' in requests[0].system


async def test_child_runs_keep_exact_numbers_and_text_answers_for_text_contracts() -> None:
    import importlib
    from dataclasses import replace

    from agentgen.runtime.contracts.specs import schema_type

    sink = importlib.import_module("tests.runtime.sink_agents")
    seen: list[str] = []

    class Echo:
        async def plan_start(self, input: PlanInput) -> PlanResult:
            seen.append(input.messages[-1].text)
            return PlanResult(Message("assistant", (TextPart("plain answer"),)))

        async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
            raise AssertionError("not expected")

    text_tool = replace(
        sink.ASK,
        result=schema_type('{"type": "string"}', "ask result"),
        payload=schema_type('{"type": "object"}', "ask payload"),
    )
    triage = replace(sink.triage_definition(), specs=(text_tool,))
    rt = Runtime()
    rt.register_agent(sink.expert_definition(), planner=Echo(), executors={})
    planner = ScriptedPlanner(
        [calls(("ask_expert.ask", {"score": 0.1, "big": 9007199254740993})), answer()]
    )
    rt.register_agent(triage, planner=planner, executors={})
    outcome = await rt.client("helpdesk.triage").run("ask")
    assert seen == ['{"score":0.1,"big":9007199254740993}']
    assert json.loads(outcome.transcript[2].parts[0].content) == "plain answer"  # type: ignore[union-attr]


async def test_fenced_json_answers_count_as_structured_results() -> None:
    import importlib

    from agentgen.runtime.agents.model_planner import ModelPlanner
    from agentgen.runtime.model_client import ModelRequest, ModelResponse

    sink = importlib.import_module("tests.runtime.sink_agents")

    class Fenced:
        async def complete(self, request: ModelRequest) -> ModelResponse:
            text = '```json\n{"answer": "fenced", "score": 0.1}\n```'
            return ModelResponse(Message("assistant", (TextPart(text),)))

    rt = Runtime()
    rt.register_model("expert", Fenced())
    rt.register_agent(sink.expert_definition(), planner=ModelPlanner("expert"), executors={})
    planner = ScriptedPlanner([calls(("ask_expert.ask", {"question": "q"})), answer()])
    rt.register_agent(sink.triage_definition(), planner=planner, executors={})
    outcome = await rt.client("helpdesk.triage").run("ask")
    result = outcome.transcript[2].parts[0]
    # The contract forbids extra properties: "score" makes it invalid, which proves the JSON
    # inside the fence was parsed and checked (not refused as text).
    assert error_of(result)["kind"] == "invalid_result"


async def test_seal_checks_agents_exposed_as_tools() -> None:
    import importlib

    from agentgen.runtime.app import RegistrationError

    sink = importlib.import_module("tests.runtime.sink_agents")
    rt = Runtime()
    rt.register_agent(sink.triage_definition(), planner=ScriptedPlanner([answer()]), executors={})
    with pytest.raises(RegistrationError, match="not registered: helpdesk.expert"):
        rt.seal()
