"""Telemetry never fails a run: what it cannot read, it does not count, and says so."""

from __future__ import annotations

import logging

import pytest

from agentgen.runtime import Message, Runtime, TextPart
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.trace import TESTING_SEARCH_KEY
from tests.otel import delta, recorder
from tests.runtime.agents import register


class Garbled:
    """A planner whose answer carries search records nobody can read."""

    async def plan_start(self, input: PlanInput) -> PlanResult:
        return PlanResult(Message("assistant", (TextPart("done"),), {TESTING_SEARCH_KEY: "?"}))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        raise AssertionError("one activity")


async def test_unreadable_search_records_are_not_counted_and_the_run_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    otel = recorder()
    before = otel.points()
    rt = Runtime()
    register(rt, Garbled())  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING, logger="agentgen")
    outcome = await rt.client("test.agent").run("go")
    assert outcome.final_text == "done"
    assert delta(before, otel.points(), "agentgen.run.tools_loaded") == {}
    assert delta(before, otel.points(), "agentgen.plan.search_rounds") != {}
    (warning,) = caplog.records
    assert (warning.name, warning.getMessage()) == (
        "agentgen.plan",
        "tools loaded not counted: message 1 (assistant): 'agentgen.testing.search' must be a "
        "list of searches",
    )
