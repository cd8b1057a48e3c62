"""Temporal refuses payloads over its blob size limit (2 MiB by default). A durable run never
meets that limit blind: a value over it fails the run at once with ``PayloadTooLargeError``,
naming what was too large and what to do, instead of asking the model again (a planning
activity's answer the SDK could not upload used to be retried) or hanging (a transcript too
large to schedule the next planning activity failed the workflow task again and again)."""

from __future__ import annotations

import asyncio
import importlib
import json

import pytest

from agentgen.runtime.agents.executors import ToolContext
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.engines.temporal import PayloadTooLargeError, TemporalSettings
from agentgen.runtime.messages import Message, TextPart, ToolResultPart
from agentgen.runtime.testing import Answer, Call, ScriptedModel
from examples.records.gen.assistant.agents import assistant as assistant_agent
from examples.records.gen.assistant.toolsets.records import types
from tests.e2e.test_records_e2e import Records
from tests.engines.conftest import FAST, Harness
from tests.runtime.agents import answer, calls

pytestmark = pytest.mark.asyncio(loop_scope="session")

sink = importlib.import_module("tests.runtime.sink_agents")

MIB = 1024 * 1024


class BigRecords(Records):
    """Records whose bodies are ``size`` characters long."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        self.calls.append(("lookup", args))
        return types.Record(id=args.id, title="Tokyo", body="s" * self.size)


async def run(
    harness: Harness, model: ScriptedModel, records: Records, question: str = "Tokyo?"
) -> object:
    rt = harness.runtime()
    rt.register_model("scripted", model)
    assistant_agent.register_assistant_agent(
        rt,
        assistant_agent.AssistantAgentConfig(
            planner=ModelPlanner("scripted"), records_executor=records
        ),
    )
    async with harness.serving(rt):
        return await asyncio.wait_for(assistant_agent.new_client(rt).run(question), 60)


async def test_an_answer_over_the_limit_fails_the_run_without_asking_the_model_again(
    durable: Harness,
) -> None:
    model = ScriptedModel([Answer("x" * (3 * MIB)), Answer("a second, smaller answer")])
    with pytest.raises(PayloadTooLargeError) as failed:
        await run(durable, model, Records())
    message = str(failed.value)
    assert "planning activity" in message and "assistant.assistant" in message
    assert f"{2 * MIB} bytes" in message and "max_payload_bytes" in message
    assert len(model.requests) == 1  # the model was not asked again


async def test_a_transcript_outgrowing_the_limit_fails_the_run_instead_of_hanging(
    durable: Harness,
) -> None:
    records = BigRecords(900 * 1024)  # a lookup's result is about 1.4 MB in the transcript
    model = ScriptedModel(
        [Call("records.lookup", {"id": str(n)}) for n in range(3)] + [Answer("done")]
    )
    with pytest.raises(PayloadTooLargeError) as failed:
        await run(durable, model, records)
    assert "the input of the planning activity" in str(failed.value)
    # Two lookups ran once each; the third planning activity was never started.
    assert len(records.calls) == 2 and len(model.requests) == 2


async def test_a_final_result_over_the_limit_fails_the_run_instead_of_hanging(
    durable: Harness,
) -> None:
    """Each planning input (the 1 MB question) and answer (1.2 MB) fits; the run's result holds
    both. The server used to refuse the workflow's completion again and again: the run never
    ended."""
    model = ScriptedModel([Answer("x" * 1_200_000)])
    with pytest.raises(PayloadTooLargeError) as failed:
        await run(durable, model, Records(), question="q" * 1_000_000)
    message = str(failed.value)
    assert message.startswith("the final result of agent 'assistant.assistant' (run '")
    assert f"over the limit of {2 * MIB} bytes" in message
    assert len(model.requests) == 1


class _Asker:
    """A parent asking the expert a 0.5 MB question, then answering with what it got."""

    def __init__(self) -> None:
        self.results: list[ToolResultPart] = []

    async def plan_start(self, input: PlanInput) -> PlanResult:
        return PlanResult(calls(("ask_expert.ask", {"question": "q" * 500_000})))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        self.results.extend(input.tool_results)
        return PlanResult(answer("relayed"))


class _Verbose:
    """An expert whose answer (1.7 MB) fits, but not its result with the question."""

    async def plan_start(self, input: PlanInput) -> PlanResult:
        message = Message("assistant", (TextPart("x" * 1_700_000),))
        return PlanResult(message, final_value={"answer": "long"})

    plan_resume = plan_start  # type: ignore[assignment]


async def test_a_child_run_s_result_over_the_limit_fails_the_child_and_the_parent_goes_on(
    durable: Harness,
) -> None:
    rt = durable.runtime()
    asker = _Asker()
    rt.register_agent(sink.expert_definition(), planner=_Verbose(), executors={})
    rt.register_agent(sink.triage_definition(), planner=asker, executors={})
    async with durable.serving(rt):
        outcome = await asyncio.wait_for(rt.client("helpdesk.triage").run("ask"), 60)
    assert outcome.final_text == "relayed"
    (result,) = asker.results
    error = json.loads(result.content)["error"]
    assert error["kind"] == "agent_failed"
    assert "PayloadTooLargeError: the final result of agent 'helpdesk.expert'" in error["message"]


async def test_a_tool_result_over_the_limit_answers_the_call_and_the_run_goes_on(
    durable: Harness,
) -> None:
    records = BigRecords(3 * MIB)
    model = ScriptedModel([Call("records.lookup", {"id": "1"}), Answer("It was too large.")])
    outcome = await run(durable, model, records)
    assert outcome.final_text == "It was too large."  # type: ignore[attr-defined]
    assert len(records.calls) == 1  # the tool ran once, and was not run again
    (result,) = model.requests[1].messages[-1].parts
    assert isinstance(result, ToolResultPart) and result.is_error
    error = json.loads(result.content)["error"]
    assert error["kind"] == "internal_error"
    assert "PayloadTooLargeError" in error["message"] and "tool execution" in error["message"]


async def test_the_limit_is_a_setting(temporal: object) -> None:
    """A run with a smaller limit (say, a server configured lower) fails at that limit; the
    same run fits under the default one."""
    small = Harness("temporal", temporal, TemporalSettings(  # type: ignore[arg-type]
        retry_initial_interval=FAST.retry_initial_interval,
        retry_maximum_interval=FAST.retry_maximum_interval,
        max_payload_bytes=64 * 1024,
    ))  # fmt: skip
    script = [Call("records.lookup", {"id": "1"}), Answer("done")]
    with pytest.raises(PayloadTooLargeError, match=f"{64 * 1024} bytes"):
        await run(small, ScriptedModel(script), BigRecords(100 * 1024))
    outcome = await run(
        Harness("temporal", temporal), ScriptedModel(script), BigRecords(100 * 1024)
    )  # type: ignore[arg-type]
    assert outcome.final_text == "done"  # type: ignore[attr-defined]


async def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_payload_bytes"):
        TemporalSettings(max_payload_bytes=0)


async def test_a_checked_value_is_written_once_not_again_to_be_sent(
    durable: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The size check used to write each value (a planning input holds the whole transcript)
    # and the SDK wrote the same object again to send it.
    from agentgen.runtime.engines.temporal import converter

    written: list[object] = []  # the objects themselves: their identities stay theirs
    write = converter._payload

    def counted(value: object) -> object:
        written.append(value)
        return write(value)

    monkeypatch.setattr(converter, "_payload", counted)
    model = ScriptedModel([Call("records.lookup", {"id": "1"}), Answer("done")])
    outcome = await run(durable, model, Records())
    assert outcome.final_text == "done"  # type: ignore[attr-defined]
    kinds = {type(value).__name__ for value in written}
    assert {"PlanTask", "Planned"} <= kinds  # inputs and answers both pass the check
    twice = [type(v).__name__ for i, v in enumerate(written) if any(v is w for w in written[:i])]
    assert twice == []


async def test_the_measured_payload_is_given_once_to_the_conversion_of_that_object() -> None:
    from agentgen.runtime.agents.planning import RunContext
    from agentgen.runtime.engines.temporal.converter import (
        AgentgenPayloadConverter,
        measured_payload,
    )

    convert = AgentgenPayloadConverter()
    value = RunContext("run-1", "a.b")
    measured = measured_payload(value)
    assert measured is not None
    [sent] = convert.to_payloads([value])
    assert sent is measured  # not written again
    [again] = convert.to_payloads([value])
    assert again is not measured and again == measured  # given once only
    equal = RunContext("run-1", "a.b")
    measured_payload(value)
    [other] = convert.to_payloads([equal])  # an equal object is not the one measured
    assert other is not measured and other == measured
    assert measured_payload("text") is None  # not one of the runtime's types


async def test_a_value_the_converter_cannot_write_is_refused_naming_it() -> None:
    """Not a ``TypeError`` from deep in the converter, which durable runs used to retry."""
    import datetime

    from agentgen.runtime.agents.planning import RunContext
    from agentgen.runtime.engines.temporal.converter import AgentgenPayloadConverter
    from agentgen.runtime.engines.temporal.payload_limits import check_payload
    from agentgen.runtime.engines.temporal.wire import CallTask, DenyTask
    from agentgen.runtime.runs.requests import RunError

    run = RunContext("run-1", "a.b")
    task = DenyTask(CallTask(run, {}), {"when": datetime.date(2026, 12, 1)})
    with pytest.raises(RunError) as refused:
        check_payload(AgentgenPayloadConverter(), task, MIB, "the input of a step", run)
    assert str(refused.value) == (
        "the input of a step of agent 'a.b' (run 'run-1') cannot be written as a Temporal "
        "payload (Object of type date is not JSON serializable): what crosses between workers "
        "must be JSON values"
    )
