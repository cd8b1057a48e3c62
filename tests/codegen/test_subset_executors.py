"""An agent that uses some tools of a toolset requires an executor for exactly those tools.

``Use(Tickets, lambda: (Tool("get_ticket"), Tool("add_comment")))`` gives the agent's config a
protocol with those two methods; an application implementing only them type-checks with
``mypy --strict`` and runs, while one missing a used method does not type-check.
"""

from __future__ import annotations

import importlib
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentgen.codegen.pipeline import check_file, generate
from tests.codegen.helpers import importable, run_tool
from tests.conftest import DesignRunner

DESIGN = """
from pydantic import BaseModel

class TicketRef(BaseModel):
    id: str

class Ticket(BaseModel):
    id: str
    title: str

class Comment(BaseModel):
    id: str
    text: str

def tickets():
    Tool("get_ticket", "Get a ticket.", lambda: (Args(TicketRef), Return(Ticket)))
    Tool("add_comment", "Comment on a ticket.", lambda: Args(Comment))
    Tool("close_ticket", "Close a ticket.", lambda: Args(TicketRef))
    Tool("ping", "Check the ticket service.")
    for n in range(6):
        Tool(f"admin_{n}", "An administrative tool.")

Tickets = Toolset("tickets", tickets)

with Service("desk"):
    with Agent("helper", "Helps."):
        Use(Tickets, lambda: (Tool("get_ticket"), Tool("add_comment")))
    Agent("admin", "Administers.", lambda: Use(Tickets))
"""

APP = """
import asyncio

from agentgen.runtime import Message, ModelRequest, ModelResponse, ModelPlanner, Runtime
from agentgen.runtime import TextPart, ToolContext
from subset_gen.desk.agents import helper
from subset_gen.desk.toolsets.tickets import types


class TwoTools:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def get_ticket(self, args: types.TicketRef, context: ToolContext) -> types.Ticket:
        self.calls.append(args.id)
        return types.Ticket(id=args.id, title="Printer on fire")
{extra}

class Quiet:
    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(Message("assistant", (TextPart("ok"),)))


def wire(rt: Runtime) -> TwoTools:
    executor = TwoTools()
    helper.register_helper_agent(
        rt, helper.HelperAgentConfig(planner=ModelPlanner("m"), tickets_executor=executor)
    )
    return executor
"""

ADD_COMMENT = """
    async def add_comment(self, args: types.Comment, context: ToolContext) -> None:
        self.calls.append(args.text)
"""


@pytest.fixture
def generated(designs: DesignRunner, tmp_path: Path) -> Iterator[Path]:
    design = designs.write(DESIGN)
    result = generate(design, tmp_path / "subset_gen")
    assert not result.errors, result.errors
    with importable(tmp_path):
        yield tmp_path


def test_an_executor_of_exactly_the_used_tools_type_checks(generated: Path) -> None:
    # One mypy run for both applications (mypy over generated packages takes a while).
    (generated / "app.py").write_text(textwrap.dedent(APP).format(extra=ADD_COMMENT))
    (generated / "missing.py").write_text(textwrap.dedent(APP).format(extra=""))
    done = run_tool(
        "mypy", "--strict", "--no-incremental", "app.py", "missing.py", "subset_gen",
        cwd=generated,
    )  # fmt: skip
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[0] for line in errors] == ["missing.py"], done.stdout + done.stderr
    assert 'Argument "tickets_executor" to "HelperAgentConfig" has incompatible type' in errors[0]
    assert "missing.py:27: note:     add_comment" in done.stdout


async def test_the_partial_executor_runs_the_tools_the_agent_uses(generated: Path) -> None:
    (generated / "app.py").write_text(textwrap.dedent(APP).format(extra=ADD_COMMENT))
    app = importlib.import_module("app")
    executor = importlib.import_module("subset_gen.desk.toolsets.tickets.executor")
    from agentgen.runtime import Runtime, ToolContext

    rt = Runtime()
    rt.register_model("m", app.Quiet())
    impl = app.wire(rt)
    registration = rt.agent("desk.helper")
    bound = registration.executors["desk.tickets"]
    context = ToolContext(run_id="r", agent_id="desk.helper", tool_id="", tool_call_id="c")
    ticket = await bound.execute("tickets.get_ticket", app.types.TicketRef(id="t1"), context)
    assert ticket.title == "Printer on fire" and impl.calls == ["t1"]
    assert [s.id for s in registration.definition.specs] == [
        "tickets.get_ticket",
        "tickets.add_comment",
    ]
    assert hasattr(executor, "TicketsExecutor")


def test_subset_protocol_names_take_part_in_collision_checks(designs: DesignRunner) -> None:
    errors = check_file(
        designs.write(
            """
A = Toolset("a_b", lambda: Tool("x", "X."))
B = Toolset("b", lambda: (Tool("y", "Y."), Tool("z", "Z.")))
with Service("svc"):
    with Agent("a", "A."):
        Use(A)
        Use(B, lambda: Tool("y"))
"""
        )
    ).errors
    assert [e.message for e in errors] == [
        'toolsets "a_b" and "b" both generate the executor class ABExecutor, which the config '
        'of agent "svc.a" imports together; rename one of the toolsets'
    ]


def test_a_method_named_like_the_types_alias_does_not_shadow_it(
    designs: DesignRunner, tmp_path: Path
) -> None:
    design = designs.write(
        """
from pydantic import BaseModel
class Ref(BaseModel):
    id: str
with Toolset("tickets") as Tickets:
    Tool("tickets_types", "List ticket types.", lambda: Args(Ref))
    Tool("other", "Other.")
Service("svc", lambda: Agent("a", "A.", lambda: Use(Tickets, lambda: Tool("tickets_types"))))
"""
    )
    result = generate(design, tmp_path / "shadow_gen")
    config = dict(result.contents)["svc/agents/a/config.py"]
    assert "import types as _tickets_types" in config
    assert "args: _tickets_types.Ref" in config
