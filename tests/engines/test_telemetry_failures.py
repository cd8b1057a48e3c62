"""SPEC L3: what agentgen's telemetry says about runs that fail or are cancelled, on both
engines.

A cancelled run (its task cancelled in memory, ``engine.cancel`` on Temporal) is not an
error: its spans keep an unset status, say ``agentgen.outcome=cancelled`` and have no
``error.type``, and so do the duration metrics of the operations it cut short. An activity
Temporal cancels because it timed out is no withdrawal: it failed (``activity_timeout``). Without
``capture_payloads`` no failure's words reach agentgen's spans, events, metrics or logs (a
tool's exception, a registry's refusal, a model's error can quote any value): only types,
codes and names; with it, they do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import replace
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from agentgen.runtime.agents.definition import AgentDefinition
from agentgen.runtime.agents.executors import ToolContext
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.app import Runtime
from agentgen.runtime.engines.temporal import RunCancelledError
from agentgen.runtime.messages import Message, ToolResultPart
from agentgen.runtime.model_client import ModelError, ModelRequest, ModelResponse
from agentgen.runtime.registry.client import CallRef, RegistryError
from agentgen.runtime.runs.requests import RunRequest
from agentgen.runtime.telemetry import Telemetry
from examples.records.gen.assistant.toolsets.records import executor as records_executor
from examples.records.gen.assistant.toolsets.records import specs as records_specs
from examples.records.gen.assistant.toolsets.records import types
from tests.engines.conftest import Harness
from tests.engines.test_scenarios import payer
from tests.otel import Recorder, delta, named, recorder
from tests.runtime.agents import (
    Records,
    ScriptedPlanner,
    answer,
    calls,
    echo_handler,
    records_definition,
    register,
)
from tests.runtime.fake_registry import FakeRegistry
from tests.runtime.test_saved_contracts import payments

pytestmark = pytest.mark.asyncio(loop_scope="session")

#: Each failure's words carry one of these; none may reach telemetry unless captured.
TOOL_SECRET = "tok-3f9a1c"
REGISTRY_SECRET = "iban-DE44-5001"
MODEL_SECRET = "patient-0042"


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def durable_fast(harness: Harness) -> Harness:
    """On Temporal, heartbeats often enough that a cancelled activity hears of it at once."""
    if not harness.durable:
        return harness
    return replace(harness, settings=replace(harness.settings, heartbeat_timeout=0.5))


# --- privacy -----------------------------------------------------------------------------


class LeakyRecords(Records):
    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        raise RuntimeError(f"lookup of {args.id} failed with {TOOL_SECRET}")


class RefusingRegistry(FakeRegistry):
    """Refuses every call with a validation error that quotes the value it refused, as a
    registry validating a payload may."""

    async def call_resolved_tool(self, **kwargs: Any) -> CallRef:
        raise RegistryError("invalid_payload", f"amount: {REGISTRY_SECRET!r} is not a number")


class FailingPlanner:
    """A planner whose model failed with an error that quotes the request."""

    async def plan_start(self, input: PlanInput) -> PlanResult:
        raise ModelError(f"the provider refused the request about {MODEL_SECRET}")

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        raise AssertionError("one activity")


def everything(otel: Recorder, records: list[logging.LogRecord]) -> str:
    """agentgen's spans (names, attributes, events, statuses), its metric points' attributes
    and its log records, as one text."""
    spans = [
        [
            s.name,
            attributes(s),
            [[e.name, dict(e.attributes or {})] for e in s.events],
            s.status.description,
        ]
        for s in otel.agentgen_spans()
    ]
    points = [key for key in otel.points() if key[0].startswith(("agentgen.", "gen_ai."))]
    logs = [[r.getMessage(), r.exc_text or ""] for r in records if r.name.startswith("agentgen")]
    return json.dumps([spans, points, logs], default=str)


def with_records(rt: Runtime, definition: AgentDefinition, planner: Any) -> None:
    rt.register_agent(
        definition,
        planner=planner,
        executors={records_specs.TOOLSET: records_executor.bind(Records())},
    )


async def approve(request: Any) -> bool:
    return True


async def fail_three_ways(harness: Harness, telemetry: Telemetry) -> None:
    """A tool that raises, a registry call refused, a run whose planner fails."""
    registry = RefusingRegistry()
    registry.publish(payments(), echo_handler)
    rt = harness.runtime(confirm=approve, telemetry=telemetry)
    rt.register_registry("company", registry, registry)
    planner = ScriptedPlanner([calls(("records.lookup", {"id": "r1"})), answer()])
    register(rt, planner, executor=LeakyRecords())
    with_records(rt, records_definition(id="test.failing"), FailingPlanner())
    payer(rt, ScriptedPlanner([calls(("payments.pay", {"amount": 5})), answer()]))
    async with harness.serving(rt):
        await rt.client("test.agent").run("look it up")
        await rt.client("test.payer").run("pay", labels={"tenant": "t"})
        with pytest.raises(ModelError, match=MODEL_SECRET):  # the caller is told everything
            await rt.client("test.failing").run("go")


async def test_failures_words_reach_telemetry_only_when_payloads_are_captured(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    otel = recorder()
    caplog.set_level(logging.DEBUG, logger="agentgen")
    secrets = (TOOL_SECRET, REGISTRY_SECRET, MODEL_SECRET)

    otel.exporter.clear()
    caplog.clear()
    await fail_three_ways(harness, Telemetry())
    text = everything(otel, caplog.records)
    assert [secret for secret in secrets if secret in text] == []
    ours = otel.agentgen_spans()
    (refused,) = named(ours, "agentgen.registry.call company")
    assert attributes(refused)["error.type"] == "invalid_payload"
    assert refused.status.status_code is StatusCode.ERROR
    assert refused.status.description == "RegistryError (invalid_payload)"
    (event,) = refused.events
    assert event.name == "exception"
    assert set(event.attributes or {}) == {"exception.type", "exception.stacktrace"}
    assert (event.attributes or {})["exception.type"].endswith(".RegistryError")
    stacktrace = str((event.attributes or {})["exception.stacktrace"])
    assert "call_resolved_tool" in stacktrace  # the frames stay
    assert stacktrace.rstrip().endswith("RegistryError")  # the message does not
    (failed_run,) = named(ours, "invoke_agent test.failing")
    assert failed_run.status.description == "ModelError"
    assert attributes(failed_run)["error.type"] == "ModelError"
    (tool,) = named(ours, "execute_tool records.lookup")
    assert (attributes(tool)["agentgen.tool.outcome"], tool.status.description) == (
        "tool_failed",
        "tool_failed",
    )
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(w.endswith("failed: ModelError") for w in warnings), warnings

    otel.exporter.clear()
    caplog.clear()
    await fail_three_ways(harness, Telemetry(capture_payloads=True))
    ours = otel.agentgen_spans()
    (refused,) = named(ours, "agentgen.registry.call company")
    assert REGISTRY_SECRET in (refused.status.description or "")
    (event,) = refused.events
    assert REGISTRY_SECRET in str((event.attributes or {})["exception.message"])
    (failed_run,) = named(ours, "invoke_agent test.failing")
    assert MODEL_SECRET in (failed_run.status.description or "")
    (tool,) = named(ours, "execute_tool records.lookup")
    assert TOOL_SECRET in str(attributes(tool)["gen_ai.tool.call.result"])
    logs = "\n".join(r.getMessage() for r in caplog.records)
    assert MODEL_SECRET in logs and TOOL_SECRET in logs


# --- cancellation ------------------------------------------------------------------------


class Stalled:
    """A model client that never answers: its call is under way until it is cancelled.
    ``fail_on_cancel`` makes it fail for a reason of its own while being cancelled."""

    def __init__(self, fail_on_cancel: bool = False) -> None:
        self.started = asyncio.Event()
        self.fail_on_cancel = fail_on_cancel

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if self.fail_on_cancel:
                raise ModelError("the connection broke while closing") from None
            raise
        raise AssertionError("never answers")


async def eventually(otel: Recorder, name: str) -> ReadableSpan:
    """The span ``name`` once it ended (on Temporal a cancelled activity ends after the run
    reported its cancellation)."""
    for _ in range(400):
        found = named(otel.agentgen_spans(), name)
        if found:
            return found[0]
        await asyncio.sleep(0.025)
    raise AssertionError(f"no span {name!r}")


def cancelled_not_failed(span: ReadableSpan) -> None:
    assert span.status.status_code is StatusCode.UNSET, span.status.description
    assert attributes(span).get("agentgen.outcome") == "cancelled"
    assert "error.type" not in attributes(span)
    assert [e.name for e in span.events if e.name == "exception"] == []


async def test_a_cancelled_run_is_reported_cancelled_not_as_an_error(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    harness = durable_fast(harness)
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    caplog.set_level(logging.INFO, logger="agentgen")
    model = Stalled()
    rt = harness.runtime()
    rt.register_model("stalled", model)
    with_records(rt, records_definition(), ModelPlanner("stalled"))
    async with harness.serving(rt):
        request = RunRequest("test.agent", (Message.user("go"),), run_id=f"cancel-{id(rt)}")
        running = asyncio.create_task(rt.engine.run(rt, request))
        await asyncio.wait_for(model.started.wait(), 30)
        if harness.durable:
            await harness.engine(rt).cancel(request.run_id or "")
        else:
            running.cancel()
        with pytest.raises((asyncio.CancelledError, RunCancelledError)):
            await running
        for name in ("chat stalled", "plan test.agent", "invoke_agent test.agent"):
            cancelled_not_failed(await eventually(otel, name))

    durations = delta(before, otel.points(), "gen_ai.client.operation.duration")
    assert [dict(k[1]).get("agentgen.outcome") for k in durations] == ["cancelled"]
    assert ["error.type" in dict(k[1]) for k in durations] == [False]
    run_logs = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "agentgen.run"]
    assert [level for level, _ in run_logs] == ["INFO", "INFO"]
    assert "cancelled after" in run_logs[-1][1]


async def test_a_run_that_fails_while_being_cancelled_reports_its_failure() -> None:
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    model = Stalled(fail_on_cancel=True)
    rt = Runtime()
    rt.register_model("stalled", model)
    with_records(rt, records_definition(), ModelPlanner("stalled"))
    running = asyncio.create_task(rt.client("test.agent").run("go"))
    await asyncio.wait_for(model.started.wait(), 30)
    running.cancel()
    with pytest.raises(ModelError):
        await running
    for name in ("chat stalled", "plan test.agent", "invoke_agent test.agent"):
        (span,) = named(otel.agentgen_spans(), name)
        assert span.status.status_code is StatusCode.ERROR
        assert attributes(span)["error.type"] == "ModelError"
        assert "agentgen.outcome" not in attributes(span)
    durations = delta(before, otel.points(), "gen_ai.client.operation.duration")
    assert [dict(k[1]).get("error.type") for k in durations] == ["ModelError"]


# --- Temporal ending an activity -----------------------------------------------------------


class StalledRecords(Records):
    """An executor whose lookups never answer."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()

    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        self.started.set()
        await asyncio.Event().wait()
        raise AssertionError("never answers")


def stalled_lookup(harness: Harness) -> tuple[Runtime, StalledRecords, ScriptedPlanner]:
    """A runtime whose agent calls ``records.lookup``, which never answers, then answers."""
    records = StalledRecords()
    rt = harness.runtime()
    planner = ScriptedPlanner([calls(("records.lookup", {"id": "r1"})), answer()])
    register(rt, planner, executor=records)
    return rt, records, planner


class Blocking(Stalled):
    """A model client that blocks the event loop (a synchronous call) before it stalls: the
    activity misses its heartbeats meanwhile."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        time.sleep(1.5)
        return await super().complete(request)


def failed_by_timeout(span: ReadableSpan) -> None:
    assert span.status.status_code is StatusCode.ERROR, attributes(span)
    assert attributes(span)["error.type"] == "activity_timeout"
    assert span.status.description == "CancelledError (activity_timeout)"
    assert "agentgen.outcome" not in attributes(span)
    assert [e.name for e in span.events] == ["exception"]


@pytest.mark.parametrize(
    ("model", "timeouts", "failure"),
    [
        (Stalled, {"planning_timeout": 1.0, "heartbeat_timeout": 0.3}, "StartToClose"),
        (Blocking, {"heartbeat_timeout": 0.5}, "Heartbeat"),
    ],
)
async def test_a_planning_activity_that_timed_out_is_reported_as_failed(
    durable: Harness, model: type[Stalled], timeouts: dict[str, float], failure: str
) -> None:
    """Temporal ends a timed-out activity (start-to-close, or heartbeats missed) by
    cancelling its task: its spans and model call durations report the timeout as an error,
    not as a cancellation."""
    settings = replace(durable.settings, retry_maximum_attempts=1, **timeouts)
    harness = replace(durable, settings=settings)
    otel = recorder()
    otel.exporter.clear()
    before = otel.points()
    rt = harness.runtime()
    rt.register_model("stalled", model())
    with_records(rt, records_definition(), ModelPlanner("stalled"))
    async with harness.serving(rt):
        with pytest.raises(Exception, match=f"activity {failure} timeout"):
            await rt.client("test.agent").run("go", run_id=f"timeout-{id(rt)}")
        for name in ("chat stalled", "plan test.agent"):
            failed_by_timeout(await eventually(otel, name))

    durations = delta(before, otel.points(), "gen_ai.client.operation.duration")
    assert [dict(k[1]).get("error.type") for k in durations] == ["activity_timeout"]
    assert ["agentgen.outcome" in dict(k[1]) for k in durations] == [False]


async def test_a_tool_activity_that_timed_out_is_reported_as_failed(durable: Harness) -> None:
    settings = replace(durable.settings, tool_timeout=1.0, retry_maximum_attempts=1)
    harness = replace(durable, settings=replace(settings, heartbeat_timeout=0.3))
    otel = recorder()
    otel.exporter.clear()
    rt, records, planner = stalled_lookup(harness)
    async with harness.serving(rt):
        # A tool call is never repeated: the model reads the timed-out one as a tool error
        # (its effect may have occurred), and answers.
        await rt.client("test.agent").run("look it up", run_id=f"tool-timeout-{id(rt)}")
        assert records.started.is_set()
        failed_by_timeout(await eventually(otel, "execute_tool records.lookup"))
    (result,) = planner.inputs[1].messages[-1].parts
    assert isinstance(result, ToolResultPart) and result.is_error
    assert json.loads(result.content)["error"]["kind"] == "outcome_unknown"


async def test_a_tool_activity_cancelled_with_its_run_is_reported_cancelled(
    durable: Harness,
) -> None:
    harness = durable_fast(durable)
    otel = recorder()
    otel.exporter.clear()
    rt, records, _ = stalled_lookup(harness)
    async with harness.serving(rt):
        request = RunRequest("test.agent", (Message.user("go"),), run_id=f"cancel-tool-{id(rt)}")
        running = asyncio.create_task(rt.engine.run(rt, request))
        await asyncio.wait_for(records.started.wait(), 30)
        await harness.engine(rt).cancel(request.run_id or "")
        with pytest.raises(RunCancelledError):
            await running
        cancelled_not_failed(await eventually(otel, "execute_tool records.lookup"))
