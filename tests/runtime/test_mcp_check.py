"""Checking an external MCP server against the design before any run (``runtime.mcp_check``).

Real ``MCPServer``\\s run in-process; a real ``ClientSession`` reaches them through
``mcp.Client(server)`` (the in-memory transport in ``legacy`` mode, direct dispatch at the
newest protocol version in ``modern``). Pagination and a failing ``tools/list`` are the
server's own middleware, the SDK's public seam over every request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any

import pytest
from mcp import Client, ClientSession, MCPError
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from agentgen.runtime import (
    MCPCheckError,
    MCPDeclaration,
    MCPServerMismatch,
    SessionCaller,
    check_mcp_server,
)
from agentgen.runtime.contracts.specs import ToolSpec, schema_type
from agentgen.runtime.search.document import search_document
from tests.codegen.helpers import ROOT, generated_module

KITCHEN_SINK = ROOT / "tests" / "designs" / "kitchen_sink.py"
PACKAGE = "mcp_check_sink_gen"

MODES = {"legacy": "legacy", "modern": "auto"}


@pytest.fixture(params=sorted(MODES))
def mode(request: pytest.FixtureRequest) -> str:
    return MODES[request.param]


@pytest.fixture(scope="module")
def weather(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The generated specs of the kitchen sink's ``weather`` MCP toolset."""
    base = tmp_path_factory.mktemp("mcp-check-sink")
    with generated_module(KITCHEN_SINK, base, PACKAGE, "helpdesk.toolsets.weather.specs") as specs:
        yield specs


@asynccontextmanager
async def session_to(server: MCPServer, mode: str) -> AsyncIterator[ClientSession]:
    async with Client(server, mode=mode) as client:
        yield client.session


# ---------------------------------------------------------------- the design

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
ALERTS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "radius_km": {"type": "number"}},
    "required": ["city", "radius_km"],
}


def spec(tool_id: str, payload: dict[str, Any]) -> ToolSpec:
    return ToolSpec(
        id=tool_id,
        toolset="helpdesk.almanac",
        title=tool_id,
        description=f"{tool_id} of a city.",
        payload=schema_type(json.dumps(payload), f"{tool_id} payload"),
        result=schema_type('{"type": "object"}', f"{tool_id} result"),
        search=search_document(tool_id, tool_id, f"{tool_id} of a city.", payload),
    )


def almanac(**payloads: dict[str, Any]) -> MCPDeclaration:
    """A declaration whose tool ``almanac.<name>`` is served as ``<name>``."""
    return MCPDeclaration(
        toolset="helpdesk.almanac",
        service="almanac_server",
        server_toolset="almanac",
        names={f"almanac.{name}": name for name in payloads},
        specs=tuple(spec(f"almanac.{name}", payload) for name, payload in payloads.items()),
    )


# ---------------------------------------------------------------- servers


def almanac_server(*middleware: Any) -> MCPServer:
    """The server the almanac declaration describes, and one more tool."""
    server = MCPServer("almanac_server", middleware=list(middleware))

    @server.tool()
    def alerts(city: str, radius_km: float) -> dict[str, list[str]]:
        return {"alerts": [city, str(radius_km)]}

    @server.tool()
    def sunrise(city: str) -> dict[str, int]:
        return {"minutes": len(city)}

    @server.tool()
    def tides(port: str) -> dict[str, str]:
        return {"port": port}

    return server


class Paginate:
    """Middleware serving ``tools/list`` one tool per page, cursors ``"1"``, ``"2"``..."""

    def __init__(self) -> None:
        self.cursors: list[str | None] = []

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method != "tools/list":
            return result
        params = ctx.params or {}
        cursor = params.get("cursor")
        self.cursors.append(cursor)
        start = int(cursor or 0)
        tools = sorted(result["tools"], key=lambda tool: str(tool["name"]))
        page = {**result, "tools": tools[start : start + 1]}
        page.pop("nextCursor", None)
        if start + 1 < len(tools):
            page["nextCursor"] = str(start + 1)
        return page


async def refuse_listing(ctx: Any, call_next: Any) -> Any:
    if ctx.method == "tools/list":
        raise MCPError(-32603, "tool registry unavailable")
    return await call_next(ctx)


async def loop_cursor(ctx: Any, call_next: Any) -> Any:
    result = await call_next(ctx)
    if ctx.method == "tools/list":
        return {**result, "tools": [], "nextCursor": "again"}
    return result


# ---------------------------------------------------------------- passing servers


async def test_a_matching_server_passes_and_the_checked_caller_calls_it(
    weather: ModuleType, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    declaration = weather.MCP_DECLARATION
    assert isinstance(declaration, MCPDeclaration)
    assert (declaration.toolset, declaration.service, declaration.server_toolset) == (
        "helpdesk.weather",
        "weather_server",
        "weather",
    )
    assert dict(declaration.names) == weather.MCP_TOOL_NAMES
    assert declaration.specs == weather.SPECS

    server = MCPServer("weather_server")

    @server.tool(name="get-forecast")
    def get_forecast(city: str) -> dict[str, str]:
        return {"summary": f"Sunny in {city}"}

    @server.tool()
    def radar(city: str) -> dict[str, str]:
        return {"city": city}

    caplog.set_level(logging.DEBUG, logger="agentgen.runtime.mcp_check")
    async with session_to(server, mode) as session:
        check = await check_mcp_server(session, declaration)
        caller = await SessionCaller.checked(session, declaration)
        assert await caller.call_tool("get-forecast", {"city": "Oslo"}) == {
            "summary": "Sunny in Oslo"
        }
    # Tools the design does not declare are allowed, and only reported.
    assert check.extra_tools == ("radar",)
    assert "also serves radar" in caplog.text


class Place(BaseModel):
    lat: float
    lon: float


async def test_optional_fields_nested_models_and_wider_number_types_pass(mode: str) -> None:
    server = MCPServer("almanac_server")

    @server.tool()
    def moon(city: str, days: float = 3, where: Place | None = None) -> dict[str, str]:
        return {"city": city}

    place = {
        "type": "object",
        "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
        "required": ["lat", "lon"],
    }
    declared = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1},  # integers are numbers
            "where": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]},
        },
        "required": ["city"],
        "$defs": {"Place": place},
    }
    async with session_to(server, mode) as session:
        check = await check_mcp_server(session, almanac(moon=declared))
    assert check.extra_tools == ()


# ---------------------------------------------------------------- problems


async def mismatch(declaration: MCPDeclaration, server: MCPServer, mode: str) -> MCPServerMismatch:
    async with session_to(server, mode) as session:
        with pytest.raises(MCPServerMismatch) as caught:
            await SessionCaller.checked(session, declaration)
    return caught.value


async def test_a_missing_tool_is_named_with_what_the_server_lists(mode: str) -> None:
    error = await mismatch(almanac(alerts=ALERTS, forecast=CITY), almanac_server(), mode)
    assert [str(p) for p in error.problems] == [
        "tool 'forecast' (almanac.forecast): not served: the server lists alerts, sunrise, tides"
    ]
    assert error.declaration.service == "almanac_server"


async def test_required_properties_must_be_the_same(mode: str) -> None:
    # The server requires radius_km, the design does not even list it.
    error = await mismatch(almanac(alerts=CITY), almanac_server(), mode)
    assert [str(p) for p in error.problems] == [
        "tool 'alerts' (almanac.alerts): input radius_km: the server requires it, the design "
        "does not (nor lists it)"
    ]
    # The design requires a property the server keeps optional.
    optional = MCPServer("almanac_server")

    @optional.tool()
    def sunrise(city: str = "Oslo") -> dict[str, int]:
        return {"minutes": len(city)}

    error = await mismatch(almanac(sunrise=CITY), optional, mode)
    assert [p.problem for p in error.problems] == [
        "input city: the design requires it, the server does not"
    ]


async def test_a_declared_property_missing_on_the_server(mode: str) -> None:
    declared = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "lang": {"type": "string"}},
        "required": ["city"],
    }
    error = await mismatch(almanac(sunrise=declared), almanac_server(), mode)
    assert [p.problem for p in error.problems] == ["input lang: the server has no such property"]


async def test_a_type_mismatch_names_the_property_and_both_types(mode: str) -> None:
    declared = {
        "type": "object",
        "properties": {"city": {"type": "integer"}, "radius_km": {"type": "string"}},
        "required": ["city", "radius_km"],
    }
    error = await mismatch(almanac(alerts=declared), almanac_server(), mode)
    assert [p.problem for p in error.problems] == [
        "input city: the design allows integer, the server accepts only string",
        "input radius_km: the design allows string, the server accepts only number",
    ]


async def test_every_page_of_a_paginated_listing_is_read(mode: str) -> None:
    pages = Paginate()
    declaration = almanac(alerts=ALERTS, sunrise=CITY)
    async with session_to(almanac_server(pages), mode) as session:
        check = await check_mcp_server(session, declaration)
    assert pages.cursors == [None, "1", "2"]
    assert check.extra_tools == ("tides",)
    # A problem on the last page is found too.
    drifted = almanac(alerts=ALERTS, tides=CITY)
    error = await mismatch(drifted, almanac_server(Paginate()), mode)
    assert [p.problem for p in error.problems] == [
        "input port: the server requires it, the design does not (nor lists it)",
        "input city: the server has no such property (the design requires it)",
    ]


async def test_several_problems_are_reported_together(mode: str) -> None:
    wrong = {
        "type": "object",
        "properties": {"city": {"type": "boolean"}},
        "required": ["city"],
    }
    declaration = almanac(alerts=CITY, sunrise=wrong, forecast=CITY, radar=CITY)
    error = await mismatch(declaration, almanac_server(), mode)
    assert [(p.tool, p.tool_id) for p in error.problems] == [
        ("alerts", "almanac.alerts"),
        ("sunrise", "almanac.sunrise"),
        ("forecast", "almanac.forecast"),
        ("radar", "almanac.radar"),
    ]
    message = str(error)
    assert message.startswith(
        "the MCP server of toolset 'helpdesk.almanac' (MCP service 'almanac_server', toolset "
        "'almanac') does not serve what the design declares (4 problems):\n"
    )
    for problem in error.problems:
        assert f"  - {problem}\n" in message
    assert message.endswith(
        "Fix the server so that it serves the declared tools, or update the design to what the "
        "server now serves and regenerate (agentgen gen)."
    )


async def test_a_failing_listing_names_the_service(mode: str) -> None:
    async with session_to(almanac_server(refuse_listing), mode) as session:
        with pytest.raises(MCPCheckError) as caught:
            await SessionCaller.checked(session, almanac(alerts=ALERTS))
    error = caught.value
    assert not isinstance(error, MCPServerMismatch)
    assert str(error).startswith(
        "could not check the MCP server of toolset 'helpdesk.almanac' (MCP service "
        "'almanac_server', toolset 'almanac'): tools/list failed (MCPError: tool registry "
        "unavailable)."
    )
    assert isinstance(error.__cause__, MCPError)


async def test_a_listing_whose_cursor_loops_is_refused(mode: str) -> None:
    async with session_to(almanac_server(loop_cursor), mode) as session:
        with pytest.raises(MCPCheckError, match="handed out the cursor 'again' twice"):
            await check_mcp_server(session, almanac(alerts=ALERTS))


def test_a_declaration_names_every_tool_on_the_server() -> None:
    with pytest.raises(ValueError, match=r"no server name for almanac\.alerts; regenerate"):
        MCPDeclaration(
            toolset="helpdesk.almanac",
            service="almanac_server",
            server_toolset="almanac",
            names={},
            specs=(spec("almanac.alerts", ALERTS),),
        )


def publishing(schemas: dict[str, dict[str, Any]]) -> Any:
    """Middleware publishing ``schemas`` as the named tools' input schemas (what a server
    whose schemas come from another generator lists)."""

    async def rewrite(ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method != "tools/list":
            return result
        tools = [
            {**tool, "inputSchema": schemas.get(tool["name"], tool["inputSchema"])}
            for tool in result["tools"]
        ]
        return {**result, "tools": tools}

    return rewrite


async def test_server_keywords_of_the_wrong_form_are_problems_named_by_property(
    mode: str,
) -> None:
    """The tuple form of ``items`` (JSON Schema up to 2019-09) crashed the check with a bare
    AttributeError; ``"type": 7``, ``"enum": "abc"`` or an ``anyOf`` object read as no
    constraint at all. Each is a problem naming the tool, the property and the keyword."""
    point = {"type": "array", "items": {"type": "number"}}
    declared = {
        "type": "object",
        "properties": {"point": point, "city": {"type": "string"}},
        "required": ["point", "city"],
        "additionalProperties": False,
    }
    served = {
        "type": "object",
        "properties": {
            "point": {"type": "array", "items": [{"type": "number"}, {"type": "number"}]},
            "city": {"type": 7, "enum": "abc", "anyOf": {"type": "string"}},
        },
        "required": ["point", "city"],
    }
    server = almanac_server(publishing({"sunrise": served}))
    error = await mismatch(almanac(sunrise=declared), server, mode)
    assert [str(p) for p in error.problems] == [
        "tool 'sunrise' (almanac.sunrise): input point[]: the server's items is a list of "
        "schemas (the tuple form of JSON Schema up to 2019-09), which the check does not "
        "compare: have the server publish prefixItems (2020-12), or items as one schema",
        "tool 'sunrise' (almanac.sunrise): input city: the server's type 7 is not a JSON type "
        "name (array, boolean, integer, null, number, object, string) or a list of them",
        "tool 'sunrise' (almanac.sunrise): input city: the server's enum \"abc\" is not a list",
        "tool 'sunrise' (almanac.sunrise): input city: the server's anyOf {\"type\": "
        '"string"} is not a non-empty list',
    ]
