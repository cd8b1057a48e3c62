"""Agents registered on a runtime that call each other through agent tools are refused when
the runtime is sealed: each run would start child runs without end. Generated packages never
have such a cycle (the design refuses it); hand-written definitions are checked here."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agentgen.runtime.agents.definition import AgentDefinition
from agentgen.runtime.app import RegistrationError, Runtime
from tests.runtime.agents import ScriptedPlanner, answer
from tests.runtime.sink_agents import ASK


def agent(name: str, *calls: str) -> AgentDefinition:
    """Agent ``t.<name>`` with one agent tool ``ask_<callee>.ask`` per agent it calls."""
    specs = tuple(
        replace(ASK, id=f"ask_{callee}.ask", toolset=f"t.ask_{callee}", agent_id=f"t.{callee}")
        for callee in calls
    )
    return AgentDefinition(
        id=f"t.{name}",
        description=name,
        specs=specs,
        agent_executors=tuple(sorted(f"t.{callee}" for callee in set(calls))),
    )


def runtime(*definitions: AgentDefinition, planner: ScriptedPlanner | None = None) -> Runtime:
    rt = Runtime()
    for definition in definitions:
        rt.register_agent(definition, planner=planner or ScriptedPlanner([]), executors={})
    return rt


def test_two_agents_calling_each_other_are_refused_naming_the_cycle() -> None:
    rt = runtime(agent("a", "b"), agent("b", "a"))
    with pytest.raises(RegistrationError) as raised:
        rt.seal()
    assert str(raised.value) == (
        "runtime: agents call each other through agent tools ('t.a' → tool 'ask_b.ask' → "
        "'t.b' → tool 'ask_a.ask' → 't.a'): a run of one would start child runs of the other "
        "without end; remove one of these tools from its agent's definition (specs): an agent "
        "may hand work to another, not back"
    )
    assert not rt.sealed


def test_an_agent_calling_itself_is_refused() -> None:
    rt = runtime(agent("a", "a"))
    with pytest.raises(RegistrationError) as raised:
        rt.seal()
    assert str(raised.value) == (
        "runtime: agent 't.a' calls itself through its agent tool ('t.a' → tool 'ask_a.ask' → "
        "'t.a'): each run would start child runs of itself without end; remove that tool from "
        "the agent's definition (specs)"
    )


def test_a_cycle_of_three_is_refused_once_whichever_agent_it_is_entered_by() -> None:
    # Registered in an order that does not start the cycle at its first agent, with an
    # agent outside it that leads into it.
    rt = runtime(agent("c", "a"), agent("entry", "b"), agent("b", "c"), agent("a", "b"))
    with pytest.raises(RegistrationError) as raised:
        rt.seal()
    message = str(raised.value)
    assert message.count("agents call each other") == 1
    assert (
        "('t.a' → tool 'ask_b.ask' → 't.b' → tool 'ask_c.ask' → 't.c' → tool 'ask_a.ask' → "
        "'t.a')" in message
    )
    assert "t.entry" not in message


async def test_the_first_run_refuses_a_cycle_before_planning() -> None:
    planner = ScriptedPlanner([answer()])
    rt = runtime(agent("a", "b"), agent("b", "a"), planner=planner)
    with pytest.raises(RegistrationError, match="agents call each other through agent tools"):
        await rt.client("t.a").run("hi")
    assert planner.inputs == []


async def test_an_acyclic_diamond_is_accepted() -> None:
    # top calls left and right, both call bottom: two paths to one agent, no cycle.
    planner = ScriptedPlanner([answer()])
    rt = runtime(
        agent("top", "left", "right"),
        agent("left", "bottom"),
        agent("right", "bottom"),
        agent("bottom"),
        planner=planner,
    )
    rt.seal()
    assert rt.sealed
    assert (await rt.client("t.top").run("hi")).final_text == "done"
