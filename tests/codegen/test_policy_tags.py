"""Run-policy tags: a toolset's tags apply to its tools, and a policy must be able to match.

A toolset's ``Tags`` reach each of its tools' specs (the union with the tool's own tags,
computed at generation time), so ``AllowTags`` on a toolset tag lets those tools through at run
time. An ``AllowTags`` naming a tag that none of the agent's tools carries, a ``DenyTags``
naming a misspelling of a tag the design's tools carry, and a policy that hides every tool the
agent uses, are design errors (unless the agent also reads registries, whose tools arrive with
their own tags at run time); a ``DenyTags`` of a tag the agent's tools lack is otherwise a
guard, accepted (with a warning when no tool of the design carries it yet).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentgen.codegen.agent_views import select
from agentgen.codegen.explain import explain
from agentgen.codegen.pipeline import check_file, generate, model_of
from agentgen.runtime import (
    Message,
    ModelPlanner,
    ModelRequest,
    ModelResponse,
    Runtime,
    TextPart,
)
from tests.codegen.helpers import importable as on_path
from tests.conftest import DesignRunner

TICKETS = """
with Toolset("tickets") as Tickets:
    Tags("support")
    Tool("get", "Get a ticket.", lambda: Tags("read"))
    Tool("close", "Close a ticket.")
"""


class Recorder:
    """A model client that answers at once and keeps every request."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return ModelResponse(Message("assistant", (TextPart("done"),)))


@pytest.fixture
def importable(tmp_path: Path) -> Iterator[Path]:
    with on_path(tmp_path):
        yield tmp_path


async def test_toolset_tags_reach_every_tool_and_the_run_policy(
    designs: DesignRunner, importable: Path
) -> None:
    design = designs.write(
        TICKETS
        + """
with Service("svc"):
    with Agent("a", "A."):
        Use(Tickets)
        RunPolicy(lambda: AllowTags("support"))
"""
    )
    model = model_of(design)
    (toolset,) = model.services[0].toolsets
    assert {t.id: t.tags for t in toolset.tools} == {
        "tickets.get": ("support", "read"),
        "tickets.close": ("support",),
    }
    (explained,) = explain(select(model, None), sizes=False)
    assert explained.advertised == {"tickets.get", "tickets.close"}

    # The generated package carries the union, and the runtime's catalog lets both through.
    result = generate(design, importable / "policy_gen")
    assert not result.errors
    agent = importlib.import_module("policy_gen.svc.agents.a")
    executor = importlib.import_module("policy_gen.svc.toolsets.tickets.executor")
    assert [s.tags for s in agent.definition().specs] == [("support", "read"), ("support",)]
    recorder = Recorder()
    rt = Runtime()
    rt.register_model("m", recorder)
    rt.register_agent(
        agent.definition(),
        planner=ModelPlanner("m"),
        executors={"svc.tickets": executor.bind(object())},  # type: ignore[arg-type]
    )
    await agent.new_client(rt).run("hi")
    assert [t.id for t in recorder.requests[0].tools] == ["tickets.get", "tickets.close"]


def test_a_policy_tag_no_tool_carries_is_an_error_with_a_suggestion(
    designs: DesignRunner,
) -> None:
    designs.check(
        TICKETS
        + """
with Service("svc"):
    with Agent("a", "A."):
        Use(Tickets)
        with RunPolicy():
            AllowTags("suport", "read")  # <-
            DenyTags("raed")  # <-
""",
        'AllowTags names tag "suport", which no tool of agent "svc.a" carries (their tags: '
        'read, support); did you mean "support"?',
        'DenyTags names tag "raed", which no tool of the design carries, so it would deny '
        'nothing; did you mean "read"? Fix the spelling (the tags of agent "svc.a"'
        "'s tools: read, support)",
    )


def test_a_deny_guard_against_tags_the_agent_lacks_is_accepted(designs: DesignRunner) -> None:
    # DenyTags("admin") was refused for an agent none of whose tools carried "admin": a policy
    # shared by agents, or written before any tool got the tag, could not be declared, though
    # it is the guard that keeps such tools away once they come.
    design = designs.write(
        TICKETS
        + """
with Toolset("ops") as Ops:
    Tool("purge", "Purge everything.", lambda: Tags("admin"))
with Service("svc"):
    with Agent("a", "A."):
        Use(Tickets)
        with RunPolicy():
            DenyTags("admin")
            DenyTags("payments")
    Agent("b", "B.", lambda: (Use(Ops), Use(Tickets)))
"""
    )
    checked = check_file(design)
    assert checked.errors == ()
    # "admin" guards against another agent's tools; "payments" no tool carries yet: said, as
    # it denies nothing until one does, without refusing the design.
    (warning,) = checked.warnings
    assert warning.startswith(f"{design}:15: ")  # the line of DenyTags("payments")
    assert (
        'DenyTags names tag "payments", which no tool of the design carries yet: it denies '
        'nothing until one does (the tags of agent "svc.a"\'s tools: read, support)'
    ) in warning


def test_a_policy_that_hides_every_tool_is_an_error(designs: DesignRunner) -> None:
    designs.check(
        TICKETS
        + """
with Service("svc"):
    with Agent("a", "A."):
        Use(Tickets)
        with RunPolicy():  # <-
            AllowTags("read")
            DenyTags("support")
""",
        'the RunPolicy of agent "svc.a" hides every tool the agent uses, so its model would '
        "see none: tickets.get (tags: support, read), tickets.close (tags: support)",
    )


def test_an_agent_without_tools_cannot_filter_on_tags(designs: DesignRunner) -> None:
    designs.check(
        """
with Service("svc"):
    Agent("a", "A.", lambda: RunPolicy(lambda: AllowTags("read")))  # <-
""",
        'AllowTags names tag "read", which no tool of agent "svc.a" carries (their tags: none)',
    )


def test_registry_consumers_may_filter_on_tags_their_registries_supply(
    designs: DesignRunner,
) -> None:
    design = designs.write(
        TICKETS
        + """
Company = Registry("company", lambda: URL("https://registry.example"))
with Service("svc"):
    with Agent("a", "A."):
        Use(Tickets)
        Use(Company)
        RunPolicy(lambda: AllowTags("billing"))
"""
    )
    assert check_file(design).errors == ()
