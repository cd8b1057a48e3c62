"""A checked caller follows a server that announces ``notifications/tools/list_changed``.

The SDK's ``ClientSession`` keeps the output schemas of its last ``tools/list`` and validates
structured results against them; nothing re-lists on the notification. With
``ToolListChanges`` as the session's ``message_handler``, the caller checks the server again
before its next call: a server that still serves the design is called with current schemas,
one that does not fails the call with the mismatch. A real ``MCPServer`` changes its tools
mid-session and announces it; the client is a real ``mcp.Client`` at the protocol version
whose sessions deliver that notification (2025-11-25; the in-process dispatch of 2026-07-28
delivers none to ``message_handler``).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer

from agentgen.runtime import ToolListChanges
from agentgen.runtime.mcp import SessionCaller
from agentgen.runtime.mcp_check import MCPServerMismatch
from tests.runtime.test_mcp import CITY, almanac, almanac_spec

SPECS = (
    almanac_spec("forecast", CITY, {"type": "object"}),
    almanac_spec("upgrade", {"type": "object"}, {"type": "string"}),
)
DECLARATION = almanac(SPECS, {"almanac.forecast": "forecast", "almanac.upgrade": "upgrade"})
OBJECT = SPECS[0].result.schema()


class Old(TypedDict):
    summary: str


class New(TypedDict):
    outlook: str


def build(*, rename_city: bool) -> MCPServer:
    """A server whose ``upgrade`` tool changes ``forecast``'s output (and, with
    ``rename_city``, its input) and announces the change."""
    server = MCPServer("weather_server")

    @server.tool(name="forecast")
    def old(city: str) -> Old:
        return {"summary": f"Sunny in {city}"}

    @server.tool(name="upgrade", structured_output=False)
    async def upgrade(ctx: Context) -> str:
        server.remove_tool("forecast")

        def new(city: str) -> New:
            return {"outlook": f"Rain in {city}"}

        def renamed(town: str) -> New:
            return {"outlook": f"Rain in {town}"}

        server.add_tool(renamed if rename_city else new, name="forecast")
        await ctx.session.send_tool_list_changed()
        return "upgraded"

    return server


async def upgrade(caller: SessionCaller, changes: ToolListChanges | None) -> None:
    seen = changes.count if changes else 0
    assert await caller.call_tool("upgrade", {}) == "upgraded"
    if changes is not None:
        for _ in range(100):  # the notification arrives beside the call's answer
            if changes.count > seen:
                break
            await asyncio.sleep(0.01)
        assert changes.count == seen + 1


async def test_a_changed_output_schema_is_listed_again_before_the_next_call() -> None:
    forwarded: list[Any] = []

    async def application_handler(message: Any) -> None:
        forwarded.append(message)

    changes = ToolListChanges(application_handler)
    async with Client(build(rename_city=False), mode="legacy", message_handler=changes) as client:
        caller = await SessionCaller.checked(client.session, DECLARATION, changes)
        assert await caller.call_tool("forecast", {"city": "Oslo"}, OBJECT) == {
            "summary": "Sunny in Oslo"
        }
        await upgrade(caller, changes)
        # The SDK validates against the server's new output schema, not the cached one.
        assert await caller.call_tool("forecast", {"city": "Oslo"}, OBJECT) == {
            "outlook": "Rain in Oslo"
        }
    assert any(type(message).__name__ == "ToolListChangedNotification" for message in forwarded)


async def test_without_it_the_sdk_validates_against_the_stale_schema() -> None:
    """What ``ToolListChanges`` prevents (the SDK's behaviour, pinned so that a change of it
    is noticed)."""
    async with Client(build(rename_city=False), mode="legacy") as client:
        caller = await SessionCaller.checked(client.session, DECLARATION)
        await upgrade(caller, None)
        with pytest.raises(RuntimeError, match="Invalid structured content returned by tool"):
            await caller.call_tool("forecast", {"city": "Oslo"}, OBJECT)


async def test_a_server_that_no_longer_serves_the_design_fails_the_next_call() -> None:
    changes = ToolListChanges()
    async with Client(build(rename_city=True), mode="legacy", message_handler=changes) as client:
        caller = await SessionCaller.checked(client.session, DECLARATION, changes)
        await upgrade(caller, changes)
        for _ in range(2):  # and every call after it, until the server serves the design
            with pytest.raises(MCPServerMismatch) as caught:
                await caller.call_tool("forecast", {"city": "Oslo"}, OBJECT)
            problems = [str(problem) for problem in caught.value.problems]
            assert "tool 'forecast' (almanac.forecast): input town: the server requires it" in (
                "\n".join(problems)
            )
