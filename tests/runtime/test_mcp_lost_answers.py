"""An MCP call whose answer the session lost reads ``outcome_unknown``, not ``tool_failed``.

The server ran the tool (its effect is recorded), then the answer did not come: the session's
read timeout passed, or the server process died with the call in flight. Like a local tool
past the engine's ``tool_timeout`` or a registry call whose answer was lost, the model must not
be invited to retry. A call on a session an earlier call found closed was never sent: it stays
``tool_failed``. Real servers: an in-process ``MCPServer`` through the SDK's transports, and a
server in a child process over stdio (killed by the call, as a crash would), and a server over
streamable HTTP on 127.0.0.1 whose answers' event streams end early.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.server.mcpserver import MCPServer

from agentgen.runtime import OutcomeUnknownError, ToolContext
from agentgen.runtime.agents.definition import AgentDefinition
from agentgen.runtime.app import Runtime
from agentgen.runtime.mcp import MCPAnswerLostError, MCPToolsetExecutor, SessionCaller
from agentgen.runtime.messages import ToolResultPart
from agentgen.runtime.runs.requests import RunOutcome
from tests.runtime.agents import ScriptedPlanner, answer, calls
from tests.runtime.test_mcp import CITY, MODES, almanac, almanac_spec, error_of, results

AGENT = "helpdesk.payer"
PAY = almanac_spec("pay", CITY, {"type": "object"})
WAIT = almanac_spec("wait", CITY, {"type": "object"})
DECLARATION = almanac((PAY, WAIT), {"almanac.pay": "pay", "almanac.wait": "wait"})


@pytest.fixture(params=sorted(MODES))
def mode(request: pytest.FixtureRequest) -> str:
    return MODES[request.param]


async def run(caller: SessionCaller, *rounds: Any) -> RunOutcome:
    rt = Runtime()
    rt.register_agent(
        AgentDefinition(id=AGENT, description="Pays.", specs=(PAY, WAIT)),
        planner=ScriptedPlanner([*rounds, answer()]),
        executors={"helpdesk.almanac": MCPToolsetExecutor(caller, DECLARATION)},
    )
    return await rt.client(AGENT).run("Pay")


async def test_a_call_past_the_sessions_read_timeout_is_outcome_unknown(mode: str) -> None:
    effects: list[str] = []
    server = MCPServer("payments")

    @server.tool(name="pay")
    async def pay(city: str) -> dict[str, str]:
        effects.append(city)  # the effect happens, and the answer never comes
        await asyncio.Event().wait()
        raise AssertionError("not reached")

    async with Client(server, mode=mode, read_timeout_seconds=0.2) as client:
        outcome = await run(SessionCaller(client.session), calls(("almanac.pay", {"city": "Oslo"})))
    assert effects == ["Oslo"]
    error = error_of(results(outcome)["almanac.pay"])
    assert error["kind"] == "outcome_unknown"
    message = error["message"]
    assert message.startswith(
        "almanac.pay: MCP tool 'pay': the session lost the answer to the call (MCPError: "
    )
    assert "timed out" in message.lower()
    assert message.endswith(
        "so the server may have run the tool; the outcome is unknown: do not retry or issue a "
        "replacement call, because the effect may have occurred"
    )


SERVER = """
import os, sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("payments")
effects = sys.argv[1]

@server.tool(name="pay")
def pay(city: str) -> dict:
    with open(effects, "a") as file:
        file.write(city + "\\n")
    if city == "crash":
        os._exit(3)  # dies with the call in flight, as a crash would
    return {"paid": city}

@server.tool(name="wait")
async def wait(city: str) -> dict:
    import anyio
    with open(effects, "a") as file:
        file.write(city + "\\n")
    await anyio.sleep_forever()

server.run()
"""


async def test_a_server_dying_with_calls_in_flight_is_outcome_unknown_then_tool_failed(
    tmp_path: Path,
) -> None:
    """Every call in flight when the connection closed may have run (the server here dies
    in one while the other waits); a later call on the closed session was never sent."""
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    effects = tmp_path / "effects.txt"
    params = StdioServerParameters(command=sys.executable, args=[str(script), str(effects)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        caller = SessionCaller(session)
        outcome = await run(
            caller,
            calls(("almanac.wait", {"city": "Bergen"}), ("almanac.pay", {"city": "crash"})),
            calls(("almanac.pay", {"city": "Oslo"}), prefix="d"),
        )
        with pytest.raises(MCPError, match="Connection closed"):
            await caller.call_tool("pay", {"city": "Rome"})
    assert sorted(effects.read_text().split()) == ["Bergen", "crash"]
    parts = [
        part
        for message in outcome.transcript
        for part in message.parts
        if isinstance(part, ToolResultPart)
    ]
    kinds = [(part.tool_id, json.loads(part.content)["error"]["kind"]) for part in parts]
    assert kinds == [
        ("almanac.wait", "outcome_unknown"),
        ("almanac.pay", "outcome_unknown"),
        ("almanac.pay", "tool_failed"),
    ]
    lost = json.loads(parts[1].content)["error"]["message"]
    assert "MCP tool 'pay': the session lost the answer to the call (MCPError: Connection " in lost
    failed = json.loads(parts[2].content)["error"]["message"]
    assert failed == "almanac.pay failed: MCPError: Connection closed"


Scope = dict[str, Any]
Receive = Any
Send = Any


def cutting_answers(inner: Any) -> Any:
    """``inner`` (an MCP server's streamable HTTP app) whose ``tools/call`` answers are lost
    after the tool ran: their event stream ends without a message, as when a proxy times out
    a long stream or the server restarts. The session, and every other request, is served."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await inner(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body, given = b"".join(chunks), False

        async def again() -> dict[str, Any]:
            nonlocal given
            if given:
                return dict(await receive())
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        if b'"tools/call"' not in body:
            await inner(scope, again, send)
            return

        async def nowhere(message: dict[str, Any]) -> None:
            pass

        await inner(scope, again, nowhere)  # the tool runs; its answer goes nowhere
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


@asynccontextmanager
async def serving_http(app: Any) -> AsyncIterator[str]:
    """``app`` served on a free port of 127.0.0.1; its MCP endpoint's URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(app, log_level="critical", lifespan="on")
    web = uvicorn.Server(config)
    task = asyncio.create_task(web.serve(sockets=[listener]))
    try:
        while not web.started:
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        web.should_exit = True
        await task
        listener.close()


async def test_answers_a_transport_lost_on_an_open_session_are_each_outcome_unknown() -> None:
    """Over streamable HTTP the SDK says "SSE stream ended without a response" (code
    connection-closed) for one request whose stream ended early, and the session stays open.
    The second such call in a row was read as one never sent, on a closed session: tool_failed,
    and the model was invited to pay again a payment that had gone through."""
    effects: list[str] = []
    server = MCPServer("payments")

    @server.tool(name="pay")
    async def pay(city: str) -> dict[str, str]:
        effects.append(city)
        return {"paid": city}

    async with (
        serving_http(cutting_answers(server.streamable_http_app())) as url,
        Client(url, read_timeout_seconds=30) as client,
    ):
        outcome = await run(
            SessionCaller(client.session),
            calls(("almanac.pay", {"city": "Oslo"})),
            calls(("almanac.pay", {"city": "Rome"}), prefix="d"),
        )
    assert effects == ["Oslo", "Rome"]
    parts = [
        part
        for message in outcome.transcript
        for part in message.parts
        if isinstance(part, ToolResultPart)
    ]
    errors = [json.loads(part.content)["error"] for part in parts]
    assert [error["kind"] for error in errors] == ["outcome_unknown", "outcome_unknown"]
    assert all(
        error["message"].startswith(
            "almanac.pay: MCP tool 'pay': the session lost the answer to the call (MCPError: "
            "SSE stream ended without a response), so the server may have run the tool"
        )
        for error in errors
    )


async def test_an_executor_that_cannot_tell_whether_its_call_ran_says_so() -> None:
    """The public exception is the executor's way to say it: the model reads outcome_unknown
    with the executor's words."""

    class Lost:
        async def execute(self, tool_id: str, payload: Any, context: ToolContext) -> Any:
            raise OutcomeUnknownError("the payment service hung up after the request was sent")

    rt = Runtime()
    rt.register_agent(
        AgentDefinition(id=AGENT, description="Pays.", specs=(PAY,)),
        planner=ScriptedPlanner([calls(("almanac.pay", {"city": "Oslo"})), answer()]),
        executors={"helpdesk.almanac": Lost()},
    )
    outcome = await rt.client(AGENT).run("Pay")
    error = error_of(results(outcome)["almanac.pay"])
    assert error == {
        "kind": "outcome_unknown",
        "message": "almanac.pay: the payment service hung up after the request was sent; the "
        "outcome is unknown: do not retry or issue a replacement call, because the effect may "
        "have occurred",
    }
    assert issubclass(MCPAnswerLostError, OutcomeUnknownError)
