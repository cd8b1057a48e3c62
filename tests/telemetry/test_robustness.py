"""Telemetry never fails a run: what it cannot read, it does not count, and says so."""

from __future__ import annotations

import logging

import pytest

from agentgen.runtime import (
    Message,
    ModelPlanner,
    ModelRequest,
    ModelResponse,
    Runtime,
    Telemetry,
    TextPart,
    ToolCallPart,
    Usage,
)
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.runs.requests import ToolCallIdError
from agentgen.runtime.telemetry import names
from agentgen.runtime.telemetry.spans import MAX_MODEL_TEXT_CHARS, SearchRound, searched
from agentgen.runtime.trace import TESTING_SEARCH_KEY
from tests.otel import delta, recorder
from tests.runtime.agents import register


class Garbled:
    """A planner whose answer carries search records nobody can read."""

    async def plan_start(self, input: PlanInput) -> PlanResult:
        return PlanResult(Message("assistant", (TextPart("done"),), {TESTING_SEARCH_KEY: "?"}))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        raise AssertionError("one activity")


@pytest.mark.parametrize(
    ("capture", "said"),
    [
        (False, "TraceError"),  # its words may quote a transcript's content
        (
            True,
            "TraceError: message 1 (assistant): 'agentgen.testing.search' must be a list of "
            "searches",
        ),
    ],
)
async def test_unreadable_search_records_are_not_counted_and_the_run_answers(
    caplog: pytest.LogCaptureFixture, capture: bool, said: str
) -> None:
    otel = recorder()
    before = otel.points()
    rt = Runtime(telemetry=Telemetry(capture_payloads=capture))
    register(rt, Garbled())  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING, logger="agentgen")
    outcome = await rt.client("test.agent").run("go")
    assert outcome.final_text == "done"
    assert delta(before, otel.points(), "agentgen.run.tools_loaded") == {}
    assert delta(before, otel.points(), "agentgen.plan.search_rounds") != {}
    (warning,) = caplog.records
    assert (warning.name, warning.getMessage()) == (
        "agentgen.plan",
        f"tools loaded not counted: {said}",
    )


@pytest.mark.parametrize("value", ["false", "0", "", 1, None])
def test_a_payload_opt_in_that_is_not_a_boolean_is_refused(value: object) -> None:
    """A string read from configuration is truthy: taken as given, ``"false"`` would record
    tool arguments and results."""
    with pytest.raises(TypeError, match=r"Telemetry.capture_payloads must be True or False, not"):
        Telemetry(capture_payloads=value)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Telemetry.enabled must be True or False"):
        Telemetry(enabled=value)  # type: ignore[arg-type]
    assert Telemetry(capture_payloads=False, enabled=True) == Telemetry()


def test_a_search_query_is_recorded_within_a_bound(caplog: pytest.LogCaptureFixture) -> None:
    """A query is a model's writing and may be its whole output: every trace backend (and the
    DEBUG log) would store hundreds of KB per search round. It is cut, saying how long it
    was; a query within the bound is recorded as it is."""
    otel = recorder()
    otel.exporter.clear()
    caplog.set_level(logging.DEBUG, logger="agentgen.search")
    long = "weather forecast " * 20_000  # 340,000 characters
    with SearchRound(long, executed_by="client") as search:
        search.found(["weather.forecast"])
    searched(long, [], executed_by="provider")
    with SearchRound("weather forecast", executed_by="client") as search:
        search.found([])
    queries = [
        (span.attributes or {})[names.SEARCH_QUERY]
        for span in otel.agentgen_spans()
        if span.name == "agentgen.tool_search"
    ]
    note = " [cut: 340000 characters]"
    cut = long[: MAX_MODEL_TEXT_CHARS - len(note)] + note
    assert len(cut) == MAX_MODEL_TEXT_CHARS
    assert queries == [cut, cut, "weather forecast"]
    logged = [record.getMessage() for record in caplog.records]
    assert logged == [
        f"search {cut!r} loaded weather.forecast",
        f"search {cut!r} loaded nothing",
        "search 'weather forecast' loaded nothing",
    ]


class InventsATool:
    """A model that calls a tool whose name is 200,000 characters, then answers."""

    def __init__(self) -> None:
        self.responses = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.responses += 1
        if self.responses == 1:
            call = ToolCallPart("c1", "x" * 200_000, "{}")
            return ModelResponse(Message("assistant", (call,)), Usage(1, 1))
        return ModelResponse(Message("assistant", (TextPart("done"),)), Usage(1, 1))


async def test_the_name_of_a_tool_a_model_made_up_never_reaches_a_trace_unbounded() -> None:
    """The previous round's results are events of the planning span, named by the tool the
    model called, which it may make up, as long as it likes: a name no tool can have (over 256
    characters) ends the run before anything of its turn is recorded or run."""
    otel = recorder()
    otel.exporter.clear()
    rt = Runtime()
    rt.register_model("m", InventsATool())
    register(rt, ModelPlanner("m"))  # type: ignore[arg-type]
    with pytest.raises(ToolCallIdError, match="at most 256 characters"):
        await rt.client("test.agent").run("go")
    recorded = [
        value
        for span in otel.agentgen_spans()
        for item in (span, *span.events)
        for value in dict(item.attributes or {}).values()
    ]
    assert recorded and not any("x" * 300 in str(value) for value in recorded)
