"""The confirmation watcher backs off while it finds nothing new.

It queried the whole run tree every ``poll_interval`` (0.1 s) for as long as a run with a
confirmer lasted: about 9 status queries a second per workflow for a run waiting 10 s on a tool,
to find nothing (1.2 a second now), and as often while a person took minutes to decide. It now
doubles its wait while it finds nothing new, up to ``max_poll_interval``, and looks every
``poll_interval`` again once it finds a confirmation or delivers a decision.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace
from typing import Any

import pytest

from agentgen.runtime.agents.definition import AgentDefinition
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.engines.temporal import RunCancelledError, TemporalEngine
from agentgen.runtime.engines.temporal import client as client_module
from agentgen.runtime.engines.temporal.poll_pacing import PollPacing
from agentgen.runtime.runs.confirmation import ConfirmationRequest
from examples.records.gen.assistant.toolsets.records import types
from tests.engines.conftest import Harness
from tests.engines.test_scenarios import confirmed_records
from tests.runtime import sink_agents as sink
from tests.runtime.agents import Records, ScriptedPlanner, answer, calls, register


def test_the_wait_doubles_while_nothing_is_new_and_is_short_again_once_something_is() -> None:
    pacing = PollPacing(0.1, 1.0)
    idle = [pacing.after(found=False) for _ in range(5)]
    assert idle == [0.2, 0.4, 0.8, 1.0, 1.0]
    assert pacing.after(found=True) == 0.1
    assert pacing.after(found=True) == 0.1
    assert pacing.after(found=False) == 0.2
    assert [pacing.after(found=False) for _ in range(4)] == [0.4, 0.8, 1.0, 1.0]
    assert pacing.decided() == 0.1
    assert pacing.after(found=False) == 0.2


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
async def test_the_watcher_backs_off_while_idle_or_deciding_and_is_fast_after_a_decision(
    durable: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 3 s lookup, then a confirmed search decided after 3 s (a person), then another: the
    watcher's waits grow to ``max_poll_interval`` while the lookup runs and while the person
    decides; it looks every ``poll_interval`` once it finds a confirmation, and once the first
    decision is delivered (the run goes on, and may ask again at once)."""
    chosen: list[tuple[str, float]] = []

    class Recorded(PollPacing):
        def after(self, *, found: bool) -> float:
            wait = super().after(found=found)
            chosen.append(("found" if found else "nothing new", wait))
            return wait

        def decided(self) -> float:
            wait = super().decided()
            chosen.append(("decided", wait))
            return wait

    monkeypatch.setattr(client_module, "PollPacing", Recorded)
    asked: list[ConfirmationRequest] = []

    async def confirm(request: ConfirmationRequest) -> bool:
        asked.append(request)
        if len(asked) == 1:
            await asyncio.sleep(3)
        return True

    rt = durable.runtime(confirm=confirm)
    engine = durable.engine(rt)
    engine.poll_interval = 0.25  # the slowest, 1 s, two looks away: reached in any idle spell
    planner = ScriptedPlanner(
        [
            calls(("records.lookup", {"id": "1"})),
            calls(("records.search", {"query": "tokyo"}), prefix="d"),
            calls(("records.search", {"query": "kyoto"}), prefix="e"),
            answer(),
        ]
    )
    executor = register(rt, planner, confirmed_records(), executor=_SlowLookup())
    async with durable.serving(rt):
        outcome = await asyncio.wait_for(rt.client("test.agent").run("go"), 60)
    assert outcome.final_text == "done"
    assert [request.arguments["query"] for request in asked] == ["tokyo", "kyoto"]
    assert [name for name, _, _ in executor.calls] == ["lookup", "search", "search"]
    fast, slow = engine.poll_interval, engine.max_poll_interval
    assert slow == 1.0
    found = [i for i, (what, _) in enumerate(chosen) if what == "found"]
    decided = [i for i, (what, _) in enumerate(chosen) if what == "decided"]
    assert len(found) == 2 and len(decided) == 2
    first, second = found
    # While the lookup ran: only growing waits, up to the slowest; then fast once found.
    assert [wait for _, wait in chosen[:first]][-1] == slow
    assert chosen[first] == ("found", fast)
    # While the person decided: backing off again, to the slowest.
    assert chosen[decided[0] - 1] == ("nothing new", slow)
    # Once the decision was delivered: fast again, until the second confirmation is found.
    assert chosen[decided[0]] == ("decided", fast)
    assert decided[0] < second and chosen[second] == ("found", fast)


class _GoesOnAfterItsChild:
    """Asks its records agent (a child run), then plans on for a second after the child ended."""

    async def plan_start(self, input: PlanInput) -> PlanResult:
        return PlanResult(calls(("ask_expert.ask", {"question": "q"})))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        await asyncio.sleep(1)
        return PlanResult(answer("parent done"))


@pytest.mark.asyncio(loop_scope="session")
async def test_a_decision_for_a_child_run_that_ended_meanwhile_is_sent_once(
    durable: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child run cancelled while a person decided its confirmation: the decision, refused by
    the server (the run ended), used to be sent again every ``poll_interval`` for as long as
    its parent ran (about 150 updates in 3 s)."""
    sent: list[str] = []
    decide = TemporalEngine._decide

    async def counted(self: TemporalEngine, workflow_id: str, decision: Any) -> None:
        sent.append(workflow_id)
        await decide(self, workflow_id, decision)

    monkeypatch.setattr(TemporalEngine, "_decide", counted)
    asked: asyncio.Queue[ConfirmationRequest] = asyncio.Queue()
    answered = asyncio.Event()

    async def confirm(request: ConfirmationRequest) -> bool:
        await asked.put(request)
        await answered.wait()
        return True

    rt = durable.runtime(confirm=confirm)
    engine = durable.engine(rt)
    child = ScriptedPlanner([calls(("records.search", {"query": "x"})), answer("{}")])
    executor = register(rt, child, confirmed_records())
    ask = replace(sink.ASK, agent_id="test.agent")
    parent = AgentDefinition(
        id="helpdesk.triage", description="T", specs=(ask,), agent_executors=("test.agent",)
    )
    rt.register_agent(parent, planner=_GoesOnAfterItsChild(), executors={})
    async with durable.serving(rt):
        running = asyncio.create_task(rt.client("helpdesk.triage").run("go"))
        request = await asyncio.wait_for(asked.get(), 30)
        await engine.cancel(request.run_id)  # the child run ends; its parent goes on
        with pytest.raises(RunCancelledError):
            await engine.result(rt, request.run_id, decide=False)
        answered.set()  # the person answers now
        outcome = await asyncio.wait_for(running, 30)
    assert outcome.final_text == "parent done"
    assert executor.calls == []
    assert sent.count(request.run_id) == 1
