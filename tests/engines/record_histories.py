"""Record the histories that later releases must replay (``test_histories.py``).

One run that takes every kind of step: planning with a registry read, a compiled tool that
asks for a confirmation (approved) and one that does not, a registry call (admission and its
result), an agent exposed as a tool (a child workflow), and the final answer. Recorded once per
release that changes the workflow, into a new file; files of earlier releases are never
rewritten (they are what the current workflow code must still replay).

    python -m tests.engines.record_histories RELEASE
    python -m tests.engines.record_histories --large-arguments NAME

The second records, into ``large-arguments/NAME-run.json``, a run whose reply holds calls with
large arguments (one accepted, one refused), which a planning answer writes once since
``shared_arguments``; ``NAME`` says which code recorded it.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from agentgen.runtime.app import Runtime
from agentgen.runtime.engines.temporal import (
    TemporalEngine,
    build_worker,
    dev_server_path,
)
from agentgen.runtime.runs.confirmation import ConfirmationRequest
from tests.engines.test_scenarios import confirmed_records, payments
from tests.runtime.agents import ScriptedPlanner, Sources, answer, calls, echo_handler, register
from tests.runtime.fake_registry import FakeRegistry
from tests.runtime.test_run_loop import ExpertPlanner

HERE = Path(__file__).parent / "histories"


def every_step(rt: Runtime) -> None:
    sink = importlib.import_module("tests.runtime.sink_agents")
    registry = FakeRegistry()
    registry.publish(payments(), echo_handler)
    rt.register_registry("company", registry, registry)
    rt.register_agent(sink.expert_definition(), planner=ExpertPlanner(), executors={})
    records = confirmed_records()
    triage = sink.triage_definition()
    definition = type(triage)(
        id="helpdesk.triage",
        description="Triages.",
        specs=(*triage.specs, *records.specs),
        agent_executors=triage.agent_executors,
    ).with_registry_tools(Sources(toolsets=[("company", "payments", "", False)]))
    planner = ScriptedPlanner(
        [
            calls(
                ("records.search", {"query": "q"}),
                ("records.lookup", {"id": "1"}),
                ("payments.list", {"amount": 1}),
            ),
            calls(("ask_expert.ask", {"question": "life"}), prefix="a"),
            answer("done"),
        ]
    )
    register(rt, planner, definition)


async def record(release: str) -> None:
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=dev_server_path())
    try:

        async def confirm(request: ConfirmationRequest) -> bool:
            return True

        rt = Runtime(engine=TemporalEngine(client=env.client, task_queue="record"), confirm=confirm)
        every_step(rt)
        async with build_worker(env.client, rt, "record"):
            outcome = await rt.client("helpdesk.triage").run(
                "go", run_id=f"history-{release}", labels={"tenant": "t"}
            )
        assert outcome.final_text == "done" and len(outcome.child_runs) == 1
        for name, run_id in (("run", outcome.run_id), ("child", outcome.child_runs[0])):
            history = await env.client.get_workflow_handle(run_id).fetch_history()
            (HERE / f"{release}-{name}.json").write_text(history.to_json() + "\n")
    finally:
        await env.shutdown()


#: The arguments of the large-arguments run's calls (above ``shared_arguments.SHARED_FROM``).
LARGE_QUERY = "q" * 20_000


async def record_large_arguments(name: str) -> None:
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=dev_server_path())
    try:
        rt = Runtime(engine=TemporalEngine(client=env.client, task_queue="record-large"))
        planner = ScriptedPlanner(
            [
                calls(("records.search", {"query": LARGE_QUERY}), ("nope.tool", {"x": "y"})),
                answer("done"),
            ]
        )
        register(rt, planner)
        async with build_worker(env.client, rt, "record-large"):
            outcome = await rt.client("test.agent").run("go", run_id=f"large-arguments-{name}")
        assert outcome.final_text == "done", outcome
        history = await env.client.get_workflow_handle(outcome.run_id).fetch_history()
        (HERE / "large-arguments" / f"{name}-run.json").write_text(history.to_json() + "\n")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--large-arguments":
        asyncio.run(record_large_arguments(sys.argv[2]))
    elif len(sys.argv) == 2:
        asyncio.run(record(sys.argv[1]))
    else:
        raise SystemExit(__doc__)
