"""A design tool mapped to the MCP server's own tool name with ``MCPName``.

MCP servers name tools with dots, leading digits or up to 128 characters (``files.read``);
design tool names cannot (they are tool IDs and provider tool names). The design keeps its own
name and ``MCPName`` gives the server's: the generated ``MCP_TOOL_NAMES`` holds it, the start-up
check looks for it in ``tools/list``, and ``tools/call`` sends it. The design is generated,
and its generated ``register_*`` function wires a ``SessionCaller`` over a real ``mcp.Client``
to a real in-process ``MCPServer``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from agentgen.runtime.app import Runtime
from agentgen.runtime.mcp import SessionCaller
from agentgen.runtime.mcp_check import MCPServerMismatch
from tests.codegen.helpers import generated_module
from tests.runtime.agents import ScriptedPlanner, answer, calls
from tests.runtime.test_mcp import MODES, error_of, results

LONG = "archive." + "x" * 100
DESIGN = f'''
from agentgen.dsl import Agent, Args, FromExternalMCP, MCPName, Return, Service, Tool, Toolset, Use

PATH = {{"type": "object", "properties": {{"path": {{"type": "string"}}}}, "required": ["path"]}}
CODES = {{"type": "array", "items": {{"type": "string"}}}}
TEXT = {{"type": "string"}}

with Toolset("files", FromExternalMCP("fs_server", "files")) as Files:
    Tool("read", "Read a file.", lambda: (MCPName("files.read"), Args(PATH), Return(TEXT)))
    Tool("codes", "One-time codes.", lambda: (MCPName("2fa-codes"), Return(CODES)))
    Tool("archive", "Archive a path.", lambda: (MCPName("{LONG}"), Args(PATH)))

with Service("helpdesk"):
    Agent("bot", "Reads files.", lambda: Use(Files))
'''


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    base = tmp_path_factory.mktemp("mcp-names")
    design = base / "design.py"
    design.write_text(DESIGN)
    with generated_module(design, base, "mcp_names_gen", "helpdesk.agents.bot") as module:
        yield module


@pytest.fixture(scope="module")
def files(bot: ModuleType) -> ModuleType:
    import importlib

    return importlib.import_module("mcp_names_gen.helpdesk.toolsets.files.specs")


def server(received: list[tuple[str, Any]], *, renamed: bool = False) -> MCPServer:
    server = MCPServer("fs_server")

    @server.tool(name="files.read" if not renamed else "files_read", structured_output=False)
    def read(path: str) -> str:
        received.append(("files.read", path))
        return f"contents of {path}"

    @server.tool(name="2fa-codes", structured_output=False)
    def codes() -> list[str]:
        received.append(("2fa-codes", None))
        return ["123456"]

    @server.tool(name=LONG, structured_output=False)
    def archive(path: str) -> None:
        received.append((LONG, path))

    return server


@pytest.fixture(params=sorted(MODES))
def mode(request: pytest.FixtureRequest) -> str:
    return MODES[request.param]


def test_the_server_names_are_generated(files: ModuleType) -> None:
    assert files.MCP_TOOL_NAMES == {
        "files.read": "files.read",
        "files.codes": "2fa-codes",
        "files.archive": LONG,
    }
    assert dict(files.MCP_DECLARATION.names) == files.MCP_TOOL_NAMES


async def test_calls_reach_the_servers_tools_by_their_names(
    bot: ModuleType, files: ModuleType, mode: str
) -> None:
    received: list[tuple[str, Any]] = []
    async with Client(server(received), mode=mode) as client:
        caller = await SessionCaller.checked(client.session, files.MCP_DECLARATION)
        rt = Runtime()
        planner = ScriptedPlanner(
            [
                calls(
                    ("files.read", {"path": "/etc/motd"}),
                    ("files.codes", {}),
                    ("files.archive", {"path": "/tmp"}),
                ),
                answer(),
            ]
        )
        bot.register_bot_agent(rt, bot.BotAgentConfig(planner=planner, files_mcp=caller))
        outcome = await rt.client(bot.AGENT_ID).run("Read the motd.")
    assert sorted(received, key=str) == sorted(
        [("files.read", "/etc/motd"), ("2fa-codes", None), (LONG, "/tmp")], key=str
    )
    by_tool = results(outcome)
    assert json.loads(by_tool["files.read"].content) == "contents of /etc/motd"
    assert json.loads(by_tool["files.codes"].content) == ["123456"]
    assert not by_tool["files.archive"].is_error


async def test_the_check_looks_for_the_servers_name(files: ModuleType, mode: str) -> None:
    async with Client(server([], renamed=True), mode=mode) as client:
        with pytest.raises(MCPServerMismatch) as caught:
            await SessionCaller.checked(client.session, files.MCP_DECLARATION)
    (problem,) = caught.value.problems
    assert (problem.tool, problem.tool_id) == ("files.read", "files.read")
    assert problem.problem.startswith("not served: the server lists 2fa-codes, archive.xx")
    assert "files_read" in problem.problem


async def test_an_unchecked_call_of_a_missing_server_tool_names_it(
    bot: ModuleType, mode: str
) -> None:
    async with Client(server([], renamed=True), mode=mode) as client:
        rt = Runtime()
        planner = ScriptedPlanner([calls(("files.read", {"path": "/etc/motd"})), answer()])
        config = bot.BotAgentConfig(planner=planner, files_mcp=SessionCaller(client.session))
        bot.register_bot_agent(rt, config)
        outcome = await rt.client(bot.AGENT_ID).run("Read the motd.")
    error = error_of(results(outcome)["files.read"])
    assert "MCP tool 'files.read' reported an error: Unknown tool: files.read" in error["message"]


def test_explain_names_the_servers_tool(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agentgen.codegen.cli import main

    design = tmp_path / "design.py"
    design.write_text(DESIGN)
    text = CliRunner().invoke(main, ["explain", str(design), "--agent", "bot"])
    assert text.exit_code == 0, text.output
    assert "MCP server fs_server (calls its tool files.read)" in text.output
    shown = CliRunner().invoke(main, ["explain", str(design), "--agent", "bot", "--json"])
    tools = {tool["id"]: tool for tool in json.loads(shown.output)["agents"][0]["tools"]}
    assert tools["files.read"]["mcp_tool"] == "files.read"
    assert tools["files.codes"]["mcp_tool"] == "2fa-codes"
