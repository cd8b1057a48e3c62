"""External MCP toolsets run through the official MCP SDK (``agentgen.runtime.mcp``).

A real ``MCPServer`` runs in-process and a real ``ClientSession`` talks to it through the SDK's
in-memory transport (JSON-RPC over memory streams, the initialize handshake included) or, in
the ``modern`` variant, the SDK's direct in-process dispatch at the newest protocol version.
No network, no subprocess. The session is wired into a ``Runtime`` exactly as generated
``register_*`` functions do it: ``MCPToolsetExecutor(SessionCaller(session), MCP_DECLARATION)``.
The kitchen-sink design's ``weather`` toolset is generated for the test; a second toolset,
``almanac``, is built by hand from JSON Schemas as dynamic specs are.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from types import ModuleType
from typing import Any, TypedDict

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, TextContent

from agentgen.runtime.agents.definition import AgentDefinition
from agentgen.runtime.agents.planning import PlanResumeInput
from agentgen.runtime.app import Runtime
from agentgen.runtime.contracts.specs import ToolSpec, schema_type
from agentgen.runtime.mcp import (
    InexactNumberError,
    MCPResultError,
    MCPToolError,
    MCPToolsetExecutor,
    SessionCaller,
    ToolSession,
    tool_arguments,
    tool_value,
)
from agentgen.runtime.mcp_check import MCPDeclaration
from agentgen.runtime.messages import Message, ToolCallPart, ToolResultPart
from agentgen.runtime.runs.requests import RunOutcome
from agentgen.runtime.search.document import search_document
from tests.codegen.helpers import ROOT, generated_module
from tests.runtime.agents import ScriptedPlanner, answer, calls

KITCHEN_SINK = ROOT / "tests" / "designs" / "kitchen_sink.py"
PACKAGE = "mcp_sink_gen"
AGENT = "helpdesk.weatherbot"


@pytest.fixture(scope="module")
def weather(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The generated specs of the kitchen sink's ``weather`` MCP toolset."""
    base = tmp_path_factory.mktemp("mcp-sink")
    with generated_module(KITCHEN_SINK, base, PACKAGE, "helpdesk.toolsets.weather.specs") as specs:
        yield specs


# ---------------------------------------------------------------- the MCP server


class Forecast(TypedDict):
    summary: str


@dataclass
class Server:
    """The weather MCP server and the arguments each of its tools received."""

    received: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def build(self) -> MCPServer:
        server = MCPServer("weather_server")

        # Structured output: the SDK derives an output schema and sends structuredContent.
        @server.tool(name="get-forecast")
        def get_forecast(city: str) -> Forecast:
            self.received.append(("get-forecast", {"city": city}))
            return {"summary": f"Sunny in {city}"}

        # Unstructured: the result travels only as JSON text. ``Any`` keeps the argument
        # as it arrived (a float annotation would coerce a number sent as a string).
        @server.tool(structured_output=False)
        def alerts(city: str, radius_km: Any) -> str:
            self.received.append(("alerts", {"city": city, "radius_km": radius_km}))
            return json.dumps({"city": city, "alerts": ["wind", "hail"], "radius_km": radius_km})

        @server.tool(structured_output=False)
        def station_note(city: str) -> str:
            self.received.append(("station_note", {"city": city}))
            return f"The {city} station sits on the town hall roof."

        @server.tool(structured_output=False)
        def station_status(city: str) -> str:
            self.received.append(("station_status", {"city": city}))
            raise ToolError(f"the {city} station is offline")

        # Breaks the design's declared Return (minutes must be an integer).
        @server.tool(structured_output=False)
        def sunrise(city: str) -> str:
            self.received.append(("sunrise", {"city": city}))
            return json.dumps({"minutes": "soon"})

        @server.tool()
        def radar(city: str) -> ImageContent:
            self.received.append(("radar", {"city": city}))
            return ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")

        return server


MODES = {"legacy": "legacy", "modern": "auto"}


@pytest.fixture(params=sorted(MODES))
def mode(request: pytest.FixtureRequest) -> str:
    return MODES[request.param]


@asynccontextmanager
async def connected(server: Server, mode: str) -> AsyncIterator[SessionCaller]:
    """A SessionCaller over a live ClientSession to ``server`` (closed on exit).

    A context manager rather than a fixture: the SDK's task groups must be left in the task
    that entered them.
    """
    async with Client(server.build(), mode=mode) as client:
        yield SessionCaller(client.session)


# ---------------------------------------------------------------- the agent

CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def almanac_spec(tool: str, payload: dict[str, Any], result: dict[str, Any]) -> ToolSpec:
    tool_id = f"almanac.{tool}"
    return ToolSpec(
        id=tool_id,
        toolset="helpdesk.almanac",
        title=tool.title(),
        description=f"The {tool} of a city.",
        payload=schema_type(json.dumps(payload), f"{tool_id} payload"),
        result=schema_type(json.dumps(result), f"{tool_id} result"),
        search=search_document(tool_id, tool.title(), f"The {tool} of a city.", payload),
    )


ALMANAC = (
    almanac_spec(
        "alerts",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "radius_km": {"type": "number"}},
            "required": ["city", "radius_km"],
        },
        {
            "type": "object",
            "properties": {"alerts": {"type": "array", "items": {"type": "string"}}},
            "required": ["alerts"],
        },
    ),
    almanac_spec("note", CITY, {"type": "string"}),
    almanac_spec("status", CITY, {"type": "object"}),
    almanac_spec(
        "sunrise",
        CITY,
        {
            "type": "object",
            "properties": {"minutes": {"type": "integer"}},
            "required": ["minutes"],
        },
    ),
    almanac_spec("radar", CITY, {"type": "object"}),
)
#: Tool IDs to the server's tool names (what generated ``MCP_TOOL_NAMES`` holds).
ALMANAC_NAMES = {
    "almanac.alerts": "alerts",
    "almanac.note": "station_note",
    "almanac.status": "station_status",
    "almanac.sunrise": "sunrise",
    "almanac.radar": "radar",
}


def almanac(specs: tuple[ToolSpec, ...], names: dict[str, str]) -> MCPDeclaration:
    """A hand-made declaration, as generated ``MCP_DECLARATION``s are."""
    return MCPDeclaration(
        toolset="helpdesk.almanac",
        service="weather_server",
        server_toolset="almanac",
        names=names,
        specs=specs,
    )


ALMANAC_DECLARATION = almanac(ALMANAC, ALMANAC_NAMES)


async def run(
    weather: ModuleType, caller: SessionCaller, *turns: tuple[str, dict[str, Any]]
) -> tuple[RunOutcome, ScriptedPlanner]:
    """Run an agent over both toolsets that makes ``turns`` as one round of calls."""
    rt = Runtime()
    planner = ScriptedPlanner([calls(*turns), answer()])
    rt.register_agent(
        AgentDefinition(
            id=AGENT, description="Weather questions.", specs=(*weather.SPECS, *ALMANAC)
        ),
        planner=planner,
        executors={
            weather.TOOLSET: MCPToolsetExecutor(caller, weather.MCP_DECLARATION),
            "helpdesk.almanac": MCPToolsetExecutor(caller, ALMANAC_DECLARATION),
        },
    )
    return await rt.client(AGENT).run("What is the weather?"), planner


def results(outcome: RunOutcome) -> dict[str, ToolResultPart]:
    return {
        part.tool_id: part
        for message in outcome.transcript
        if message.role == "tool"
        for part in message.parts
        if isinstance(part, ToolResultPart)
    }


def error_of(part: ToolResultPart) -> dict[str, Any]:
    assert part.is_error, part.content
    error: dict[str, Any] = json.loads(part.content)["error"]
    return error


# ---------------------------------------------------------------- through the runtime


async def test_the_generated_weather_toolset_calls_the_server(
    weather: ModuleType, mode: str
) -> None:
    assert weather.MCP_TOOL_NAMES == {"weather.get-forecast": "get-forecast"}
    server = Server()
    async with connected(server, mode) as caller:
        outcome, planner = await run(weather, caller, ("weather.get-forecast", {"city": "Oslo"}))
    assert server.received == [("get-forecast", {"city": "Oslo"})]
    part = results(outcome)["weather.get-forecast"]
    assert not part.is_error and json.loads(part.content) == {"summary": "Sunny in Oslo"}
    # The planner's next activity got the same result.
    resume = planner.inputs[1]
    assert isinstance(resume, PlanResumeInput)
    assert [json.loads(r.content) for r in resume.tool_results] == [{"summary": "Sunny in Oslo"}]
    assert outcome.final_text == "done"


async def test_json_text_and_plain_text_results_and_plain_json_arguments(
    weather: ModuleType, mode: str
) -> None:
    server = Server()
    async with connected(server, mode) as caller:
        outcome, _ = await run(
            weather,
            caller,
            ("almanac.alerts", {"city": "Oslo", "radius_km": 2.5}),
            ("almanac.note", {"city": "Oslo"}),
        )
    # The runtime decodes 2.5 as an exact Decimal; the server still gets a JSON number. The
    # round's calls run concurrently, so the server may receive them in either order.
    received = dict(server.received)
    assert received == {
        "alerts": {"city": "Oslo", "radius_km": 2.5},
        "station_note": {"city": "Oslo"},
    }
    assert type(received["alerts"]["radius_km"]) is float
    by_tool = results(outcome)
    assert json.loads(by_tool["almanac.alerts"].content) == {
        "city": "Oslo",
        "alerts": ["wind", "hail"],
        "radius_km": 2.5,
    }
    assert json.loads(by_tool["almanac.note"].content) == (
        "The Oslo station sits on the town hall roof."
    )


async def test_a_number_a_double_cannot_hold_is_refused_not_sent_rounded(mode: str) -> None:
    # The SDK sends numbers as doubles: 0.123456789012345678 reached the server as
    # 0.12345678901234568 (a different amount from the one validated), with no word said.
    server = Server()
    arguments = '{"city": "Oslo", "radius_km": 0.123456789012345678}'  # as the model wrote it
    turn = Message("assistant", (ToolCallPart("c0", "almanac.alerts", arguments),))
    async with connected(server, mode) as caller:
        rt = Runtime()
        rt.register_agent(
            AgentDefinition(id=AGENT, description="Weather questions.", specs=ALMANAC),
            planner=ScriptedPlanner([turn, answer()]),
            executors={"helpdesk.almanac": MCPToolsetExecutor(caller, ALMANAC_DECLARATION)},
        )
        outcome = await rt.client(AGENT).run("What is the weather?")
    assert server.received == []
    error = error_of(results(outcome)["almanac.alerts"])
    assert error == {
        "kind": "tool_failed",
        "message": "almanac.alerts failed: InexactNumberError: MCP tool 'alerts': the argument "
        "0.123456789012345678 would reach the server as 0.12345678901234568: the MCP SDK sends "
        "numbers as doubles, which keep 15 significant digits; the call was not sent (write "
        "the number with fewer digits)",
    }


async def test_an_is_error_result_becomes_a_tool_error_naming_the_tool(
    weather: ModuleType, mode: str
) -> None:
    server = Server()
    async with connected(server, mode) as caller:
        outcome, _ = await run(
            weather,
            caller,
            ("almanac.status", {"city": "Oslo"}),
            ("weather.get-forecast", {"city": "Bergen"}),
        )
    error = error_of(results(outcome)["almanac.status"])
    assert error["kind"] == "tool_failed"
    assert error["message"] == (
        "almanac.status failed: MCPToolError: MCP tool 'station_status' reported an error: "
        "Error executing tool station_status: the Oslo station is offline"
    )
    # The other call of the round keeps its result.
    assert not results(outcome)["weather.get-forecast"].is_error


async def test_a_result_breaking_the_declared_schema_is_an_invalid_result(
    weather: ModuleType, mode: str
) -> None:
    server = Server()
    async with connected(server, mode) as caller:
        outcome, _ = await run(weather, caller, ("almanac.sunrise", {"city": "Oslo"}))
    assert server.received == [("sunrise", {"city": "Oslo"})]
    error = error_of(results(outcome)["almanac.sunrise"])
    assert error["kind"] == "invalid_result"
    assert "almanac.sunrise" in error["message"]
    assert [issue["path"] for issue in error["issues"]] == ["minutes"]


async def test_invalid_arguments_never_reach_the_server(weather: ModuleType, mode: str) -> None:
    server = Server()
    async with connected(server, mode) as caller:
        outcome, _ = await run(weather, caller, ("weather.get-forecast", {"town": "Oslo"}))
    assert server.received == []
    error = error_of(results(outcome)["weather.get-forecast"])
    assert error["kind"] == "invalid_arguments"
    assert "city" in json.dumps(error["issues"])


async def test_content_without_a_json_value_is_a_tool_error(weather: ModuleType, mode: str) -> None:
    server = Server()
    async with connected(server, mode) as caller:
        outcome, _ = await run(weather, caller, ("almanac.radar", {"city": "Oslo"}))
    error = error_of(results(outcome)["almanac.radar"])
    assert error["kind"] == "tool_failed"
    assert "MCPResultError" in error["message"] and "'radar' returned image" in error["message"]


async def test_the_caller_raises_typed_errors(mode: str) -> None:
    async with connected(Server(), mode) as caller:
        with pytest.raises(MCPToolError) as caught:
            await caller.call_tool("station_status", {"city": "Oslo"})
        with pytest.raises(MCPResultError):
            await caller.call_tool("radar", {"city": "Oslo"})
        assert await caller.call_tool("get-forecast", {"city": "Rome"}) == {
            "summary": "Sunny in Rome"
        }
    assert (caught.value.tool, caught.value.message) == (
        "station_status",
        "Error executing tool station_status: the Oslo station is offline",
    )
    assert caught.value.result is not None and caught.value.result.is_error


# ---------------------------------------------------------------- result mapping


def text(value: str) -> TextContent:
    return TextContent(type="text", text=value)


def test_structured_content_is_preferred_over_its_text_rendering() -> None:
    result = CallToolResult(content=[text('{"a": 1}')], structured_content={"a": 2})
    assert tool_value("t", result) == {"a": 2}
    # A structured null is a value too (any JSON value is allowed from 2026-07-28 on).
    assert tool_value("t", CallToolResult(content=[text("x")], structured_content=None)) is None


def test_text_content_is_read_as_json_or_kept_as_text() -> None:
    assert tool_value("t", CallToolResult(content=[text('{"n": 1.10}')])) == {"n": Decimal("1.10")}
    assert tool_value("t", CallToolResult(content=[text("not json")])) == "not json"
    assert tool_value("t", CallToolResult(content=[text("NaN")])) == "NaN"
    assert tool_value("t", CallToolResult(content=[])) is None
    # The SDK's MCPServer renders an unstructured list one block per item.
    assert tool_value("t", CallToolResult(content=[text("1"), text("two")])) == [1, "two"]


def test_is_error_wins_over_everything_else() -> None:
    result = CallToolResult(
        content=[text("bad city"), text("try another")], structured_content={}, is_error=True
    )
    with pytest.raises(MCPToolError, match="'t' reported an error: bad city\ntry another"):
        tool_value("t", result)
    with pytest.raises(MCPToolError, match=r"\(no message\)"):
        tool_value("t", CallToolResult(content=[], is_error=True))


def test_arguments_are_sent_as_plain_json_objects() -> None:
    from agentgen.runtime.contracts.schemas import EmptyPayload

    assert tool_arguments({"x": Decimal("2.50"), "n": [Decimal("1")]}) == {"x": 2.5, "n": [1]}
    # Numbers a double holds are sent; integers exactly, however large.
    exact = {"a": Decimal("0.1"), "b": Decimal("1E-3"), "c": Decimal("-0.0"), "n": 2**70}
    assert tool_arguments(exact) == {"a": 0.1, "b": 0.001, "c": -0.0, "n": 2**70}
    for inexact in ("12345678901234567.89", "0.30000000000000001", "1" + "0" * 400 + ".5"):
        with pytest.raises(InexactNumberError, match="would reach the server as"):
            tool_arguments({"x": [{"y": Decimal(inexact)}]})
    assert tool_arguments(EmptyPayload()) == {}
    assert tool_arguments(None) == {}
    with pytest.raises(TypeError, match="JSON object"):
        tool_arguments([1])


def test_sdk_sessions_are_tool_sessions() -> None:
    # Checked statically by mypy on this file; at run time the protocol is not runtime
    # checkable, so this only pins the names applications pass.
    from mcp import ClientSession

    session: type[ToolSession] = ClientSession
    client: type[ToolSession] = Client
    assert session and client


def test_the_runtime_imports_without_the_sdk() -> None:
    code = (
        "import sys; sys.modules['mcp'] = None; "
        "import agentgen.runtime, agentgen.runtime.agents.executors, agentgen.runtime.mcp as m; "
        "print(m.SessionCaller.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "SessionCaller"


async def test_cancelling_a_run_in_an_mcp_call_propagates_and_keeps_the_session(
    mode: str,
) -> None:
    """The run ends with the CancelledError (not a tool error), the server's tool is left,
    and the session answers the next call."""
    started = asyncio.Event()
    server = MCPServer("slow_server")

    @server.tool(name="slow")
    async def slow(city: str) -> dict[str, str]:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("not reached")

    @server.tool(name="quick")
    def quick(city: str) -> dict[str, str]:
        return {"city": city}

    slow_spec = almanac_spec("slow", CITY, {"type": "object"})
    async with Client(server, mode=mode) as client:
        caller = SessionCaller(client.session)
        rt = Runtime()
        rt.register_agent(
            AgentDefinition(id=AGENT, description="Slow questions.", specs=(slow_spec,)),
            planner=ScriptedPlanner([calls(("almanac.slow", {"city": "Oslo"})), answer()]),
            executors={
                "helpdesk.almanac": MCPToolsetExecutor(
                    caller, almanac((slow_spec,), {"almanac.slow": "slow"})
                )
            },
        )
        running = asyncio.create_task(rt.client(AGENT).run("Slow?"))
        await started.wait()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert await caller.call_tool("quick", {"city": "Oslo"}) == {"city": "Oslo"}
