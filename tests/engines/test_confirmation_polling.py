"""The confirmation watcher backs off while nothing waits for a decision.

It queried the whole run tree every ``poll_interval`` (0.1 s) for as long as a run with a
confirmer lasted: about 9 status queries a second per workflow for a run waiting 10 s on a tool,
to find nothing (1.2 a second now). It now doubles its wait while no confirmation waits, up to
``max_poll_interval``, and looks every ``poll_interval`` again once one does.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from agentgen.runtime.engines.temporal import TemporalEngine
from agentgen.runtime.engines.temporal import client as client_module
from agentgen.runtime.engines.temporal.poll_pacing import PollPacing
from agentgen.runtime.runs.confirmation import ConfirmationRequest
from examples.records.gen.assistant.toolsets.records import types
from tests.engines.conftest import Harness
from tests.engines.test_scenarios import confirmed_records
from tests.runtime.agents import Records, ScriptedPlanner, answer, calls, register


def test_the_wait_doubles_while_nothing_waits_and_is_short_again_once_something_does() -> None:
    pacing = PollPacing(0.1, 1.0)
    idle = [pacing.after(waiting=False) for _ in range(5)]
    assert idle == [0.2, 0.4, 0.8, 1.0, 1.0]
    assert pacing.after(waiting=True) == 0.1
    assert pacing.after(waiting=True) == 0.1
    assert pacing.after(waiting=False) == 0.2


@pytest.mark.parametrize(("fastest", "slowest"), [(0, 1), (-1, 1), (2, 1), (math.nan, 1)])
def test_pacing_refuses_intervals_that_cannot_work(fastest: float, slowest: float) -> None:
    with pytest.raises(ValueError, match="the poll intervals must be positive"):
        PollPacing(fastest, slowest)


def test_the_engine_s_slowest_poll_defaults_to_a_second_and_is_checked() -> None:
    assert TemporalEngine().max_poll_interval == 1.0
    assert TemporalEngine(poll_interval=5).max_poll_interval == 5
    assert TemporalEngine(poll_interval=0.1, max_poll_interval=0.5).max_poll_interval == 0.5
    for wrong in (0.05, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"TemporalEngine.max_poll_interval must be seconds"):
            TemporalEngine(poll_interval=0.1, max_poll_interval=wrong)


class _SlowLookup(Records):
    async def lookup(self, args: types.LookupArgs, context: Any) -> types.Record:
        await asyncio.sleep(3)
        return await super().lookup(args, context)


@pytest.mark.asyncio(loop_scope="session")
async def test_the_watcher_backs_off_during_a_long_tool_and_still_decides_quickly(
    durable: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 3 s lookup, then a confirmed search: while the lookup runs the watcher's waits grow to
    ``max_poll_interval``; once the search's confirmation waits, it looks every
    ``poll_interval`` again."""
    chosen: list[tuple[bool, float]] = []

    class Recorded(PollPacing):
        def after(self, *, waiting: bool) -> float:
            wait = super().after(waiting=waiting)
            chosen.append((waiting, wait))
            return wait

    monkeypatch.setattr(client_module, "PollPacing", Recorded)
    asked: list[ConfirmationRequest] = []

    async def confirm(request: ConfirmationRequest) -> bool:
        asked.append(request)
        return True

    rt = durable.runtime(confirm=confirm)
    engine = durable.engine(rt)
    planner = ScriptedPlanner(
        [
            calls(("records.lookup", {"id": "1"})),
            calls(("records.search", {"query": "tokyo"}), prefix="d"),
            answer(),
        ]
    )
    executor = register(rt, planner, confirmed_records(), executor=_SlowLookup())
    async with durable.serving(rt):
        outcome = await asyncio.wait_for(rt.client("test.agent").run("go"), 60)
    assert outcome.final_text == "done"
    assert [request.tool_id for request in asked] == ["records.search"]
    assert [name for name, _, _ in executor.calls] == ["lookup", "search"]
    first_found = next(i for i, (waiting, _) in enumerate(chosen) if waiting)
    idle = [wait for _, wait in chosen[:first_found]]
    assert engine.max_poll_interval == 1.0 and idle[-1] == 1.0  # backed off to the slowest
    assert idle == sorted(idle)  # and only grew while nothing waited
    assert chosen[first_found] == (True, engine.poll_interval)  # fast again once one waited
