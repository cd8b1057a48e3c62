"""With only the OpenTelemetry API (no SDK), agentgen starts no span and records no metric;
an SDK installed later, at any point of the process's life, gets everything from then on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import asyncio
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from agentgen.runtime import ModelPlanner, Runtime
from agentgen.runtime.telemetry import spans
from agentgen.runtime.testing import Call, ScriptedModel, Search
from examples.records.gen.assistant.agents import assistant
from tests.e2e.test_records_e2e import Records


async def once():
    rt = Runtime()
    script = [Search("search"), Call("records.search", {"query": "q"}), "done"]
    rt.register_model("m", ScriptedModel(script))
    assistant.register_assistant_agent(
        rt, assistant.AssistantAgentConfig(planner=ModelPlanner("m"), records_executor=Records())
    )
    assert (await assistant.new_client(rt).run("q")).final_text == "done"


asyncio.run(once())
print("api only:", spans._tracing(), spans._metering())
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
print("recorded before:", len(exporter.get_finished_spans()))
asyncio.run(once())
print("sdk:", spans._tracing(), sorted({s.name.split()[0] for s in exporter.get_finished_spans()}))
"""


def test_spans_start_only_once_an_sdk_is_installed_even_late() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.splitlines() == [
        "api only: False False",
        "recorded before: 0",
        "sdk: True ['agentgen.tool_search', 'chat', 'execute_tool', 'invoke_agent', 'plan']",
    ]


QUIET = """
import asyncio, logging
from agentgen.runtime import ModelPlanner, Runtime
from agentgen.runtime.testing import ScriptedModel, ScriptError
from examples.records.gen.assistant.agents import assistant
from tests.e2e.test_records_e2e import Records

rt = Runtime()
rt.register_model("m", ScriptedModel([]))  # no turn: the run fails
assistant.register_assistant_agent(
    rt, assistant.AssistantAgentConfig(planner=ModelPlanner("m"), records_executor=Records())
)
try:
    asyncio.run(assistant.new_client(rt).run("q"))
except ScriptError:
    pass
logging.basicConfig(format="%(name)s %(levelname)s %(message)s")  # the application's choice
try:
    asyncio.run(assistant.new_client(rt).run("q", run_id="r2"))
except ScriptError:
    pass
"""


def test_the_library_prints_nothing_until_the_application_configures_logging() -> None:
    done = subprocess.run(
        [sys.executable, "-c", QUIET], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()  # only the run after logging was configured
    assert line.startswith("agentgen.run WARNING run r2: agent assistant.assistant failed: ")


def test_a_provider_the_environment_names_that_nobody_provides_is_named() -> None:
    """The API raised a bare ``StopIteration`` when agentgen's runtime was imported (and
    ``agentgen worker`` called that a bug in agentgen, with the traceback)."""
    for variable, kind in (
        ("OTEL_PYTHON_TRACER_PROVIDER", "tracer"),
        ("OTEL_PYTHON_METER_PROVIDER", "meter"),
    ):
        env = {**os.environ, variable: "no_such_provider"}
        done = subprocess.run(
            [sys.executable, "-c", "import agentgen.runtime.telemetry.spans"],
            check=False, capture_output=True, text=True, cwd=ROOT, env=env,
        )  # fmt: skip
        assert done.returncode == 1
        assert done.stderr.splitlines()[-1] == (
            "agentgen.runtime.telemetry.config.TelemetrySetupError: "
            f"{variable}='no_such_provider' names no OpenTelemetry {kind} provider that can be "
            f"loaded here (no installed package provides it; providers are "
            f"'opentelemetry_{kind}_provider' entry points): install the package that provides "
            f"it (opentelemetry-sdk provides 'sdk_{kind}_provider'), or unset {variable}"
        )
        worker = Path(sys.executable).with_name("agentgen")
        done = subprocess.run(
            [str(worker), "worker", "--task-queue", "q", "--app", "x:y"],
            check=False, capture_output=True, text=True, cwd=ROOT, env=env,
        )  # fmt: skip
        assert done.returncode == 2  # the environment cannot be used, as for every command
        assert "Traceback" not in done.stderr
        assert done.stderr.startswith(f"error: {variable}='no_such_provider' names no")
    env = {**os.environ, "OTEL_PYTHON_TRACER_PROVIDER": "sdk_tracer_provider"}
    code = "from agentgen.runtime.telemetry import instruments as i; print(type(i.TRACER))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=True
    )
    assert done.stdout.strip() == "<class 'opentelemetry.sdk.trace.Tracer'>"
