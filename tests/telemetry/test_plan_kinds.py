"""``agentgen.plan.kind`` says what a planning activity was: ``final`` for every
final-answer-only activity, the first one of a run whose budget is 0 included."""

from __future__ import annotations

from typing import Any

import pytest

from agentgen.runtime import RunPolicy, Runtime
from tests.otel import named, recorder
from tests.runtime.agents import ScriptedPlanner, answer, calls, records_definition, register


async def _kinds(run: RunPolicy, planner: ScriptedPlanner, **definition: Any) -> list[Any]:
    otel = recorder()
    otel.exporter.clear()
    rt = Runtime()
    register(rt, planner, records_definition(**definition))
    await rt.client("test.agent").run("go", policy=run)
    plans = sorted(named(otel.agentgen_spans(), "plan test.agent"), key=lambda s: s.start_time or 0)
    return [dict(p.attributes or {})["agentgen.plan.kind"] for p in plans]


@pytest.mark.parametrize(
    ("policy", "agent_policy"),
    [
        (RunPolicy(max_tool_calls=0), RunPolicy()),  # the run's own budget
        (RunPolicy(), RunPolicy(max_tool_calls=0)),  # the agent's default
    ],
)
async def test_a_first_activity_with_a_budget_of_0_is_final(
    policy: RunPolicy, agent_policy: RunPolicy
) -> None:
    # It was labelled "start" although its planner was asked for a final answer only.
    planner = ScriptedPlanner([answer("final")])
    assert await _kinds(policy, planner, policy=agent_policy) == ["final"]
    (only,) = planner.inputs
    assert only.finalize


async def test_kinds_of_a_run_that_spends_its_budget() -> None:
    planner = ScriptedPlanner([calls(("records.lookup", {"id": "1"})), answer("final")])
    assert await _kinds(RunPolicy(max_tool_calls=1), planner) == ["start", "final"]


async def test_kinds_of_a_run_without_limits() -> None:
    planner = ScriptedPlanner([calls(("records.lookup", {"id": "1"})), answer("final")])
    assert await _kinds(RunPolicy(), planner) == ["start", "resume"]
