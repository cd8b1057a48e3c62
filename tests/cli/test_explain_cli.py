"""``agentgen explain``: every tool's source, loading and fingerprint, registry sources, and the
first request's size as the real adapters build it."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

from agentgen.codegen.agent_views import select
from agentgen.codegen.cli import main
from agentgen.codegen.explain import tool_definitions
from agentgen.codegen.pipeline import model_of, render_model
from agentgen.runtime.adapters import AnthropicMessagesModel, OpenAIResponsesModel, tokens
from agentgen.runtime.adapters.preview import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_PROMPT,
    PROVIDERS,
    Provider,
    capture_first_request,
    preview_request,
)
from agentgen.runtime.agents.executors import ToolContext
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.app import Runtime
from examples.records.gen.assistant.agents import assistant as assistant_agent
from examples.records.gen.assistant.agents import clerk as clerk_agent
from examples.records.gen.assistant.toolsets.records import declarations, types
from tests.adapters.fakes import (
    Server,
    anthropic_client,
    check_anthropic,
    check_openai,
    claude_text,
    message,
    openai_client,
    response,
    text,
)

ROOT = Path(__file__).resolve().parents[2]
RECORDS = str(ROOT / "examples/records/design.py")
COMPANY = str(ROOT / "examples/company/design.py")
KITCHEN_SINK = ROOT / "tests/designs/kitchen_sink.py"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["explain", *args])
    return result.exit_code, result.stdout, result.stderr


def explained(*args: str) -> dict[str, Any]:
    code, out, err = run(*args, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def agent(data: dict[str, Any], agent_id: str) -> dict[str, Any]:
    (found,) = [a for a in data["agents"] if a["id"] == agent_id]
    return found


def loading(agent: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {t["id"]: (t["source"], t["loading"]) for t in agent["tools"]}


# --- tools, sources, fingerprints ---------------------------------------------------------


def test_records_tools_loading_and_fingerprint() -> None:
    data = explained(RECORDS)
    assert [a["id"] for a in data["agents"]] == ["assistant.assistant", "assistant.clerk"]
    assistant = agent(data, "assistant.assistant")
    assert loading(assistant) == {
        "records.lookup": ("local", "immediate"),
        "records.search": ("local", "deferred"),
        "records.analyze": ("local", "deferred"),
    }
    assert {t["fingerprint"] for t in assistant["tools"]} == {declarations.SCHEMA_FINGERPRINT}
    assert assistant["toolsets"] == [
        {
            "name": "assistant.records",
            "source": "local",
            "fingerprint": declarations.SCHEMA_FINGERPRINT,
        }
    ]
    assert assistant["registry_sources"] == []
    clerk = agent(data, "assistant.clerk")
    assert {t["loading"] for t in clerk["tools"]} == {"immediate"}


def test_records_text_output() -> None:
    code, out, _ = run(RECORDS, "--agent", "assistant.assistant")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "agent assistant.assistant: Find and analyze records."
    assert lines[1] == "  3 compiled tools (1 immediate, 2 deferred), 0 registry sources"
    assert "run policy" not in out  # the records agents set none
    rows = {line.split()[0]: line.split()[1:] for line in lines if "records." in line}
    assert rows["records.lookup"] == ["local", "immediate", "-", "assistant.records"]
    assert rows["records.search"] == ["local", "deferred", "-", "assistant.records"]
    assert f"assistant.records  {declarations.SCHEMA_FINGERPRINT}" in out
    assert re.search(r"^  OpenAI Responses\s+gpt-5\.4\s+[\d,]+\s+\d", out, re.MULTILINE)
    assert re.search(r"^  Anthropic Messages\s+claude-opus-4-7\s+[\d,]+", out, re.MULTILINE)
    assert "agent assistant.clerk" not in out


def kitchen_sink_fingerprints() -> dict[str, str]:
    """``SCHEMA_FINGERPRINT`` of every toolset package the kitchen sink generates."""
    found = {}
    for file in render_model(model_of(KITCHEN_SINK)):
        path = Path(file.path)
        if path.name == "declarations.py":
            match = re.search(r'^SCHEMA_FINGERPRINT = "([0-9a-f]{64})"$', file.text, re.MULTILINE)
            assert match is not None
            found[f"{path.parts[0]}.{path.parts[2]}"] = match.group(1)
    return found


def test_kitchen_sink_sources_policy_and_fingerprints() -> None:
    data = explained(str(KITCHEN_SINK))
    triage = agent(data, "helpdesk.triage")
    assert loading(triage) == {
        "tickets.search": ("local", "deferred"),
        "tickets.more": ("local", "immediate"),
        "tickets.get": ("local", "deferred"),
        "tickets.refund": ("local", "immediate"),
        "tickets.ping": ("local", "immediate"),
        "tickets.open_folder": ("local", "immediate"),
        "weather.get-forecast": ("mcp", "deferred"),
        "ask_expert.ask": ("agent", "immediate"),
        "notes.add_note": ("local", "deferred"),
    }
    tools = {t["id"]: t for t in triage["tools"]}
    # A toolset's tags apply to its tools: Tags("support") on tickets, Tags("read") on search.
    assert tools["tickets.search"]["tags"] == ["support", "read"]
    assert tools["tickets.ping"]["tags"] == ["support"]
    assert tools["ask_expert.ask"]["agent_id"] == "helpdesk.expert"
    assert tools["weather.get-forecast"]["mcp_server"] == "weather_server"
    # The name tools/call sends (the design's, as the kitchen sink gives no MCPName).
    assert tools["weather.get-forecast"]["mcp_tool"] == "get-forecast"
    assert tools["tickets.search"]["mcp_tool"] is None
    # The agent's run policy (AllowTags("support", "read")) lets only tagged tools through:
    # every tickets tool carries its toolset's "support".
    assert [t for t, tool in tools.items() if tool["advertised"]] == [
        "tickets.search", "tickets.more", "tickets.get", "tickets.refund", "tickets.ping",
        "tickets.open_folder",
    ]  # fmt: skip
    assert triage["policy"] == {
        "max_tool_calls": 12,
        "max_consecutive_failed_tool_calls": None,
        "model_timeout": 90.0,
        "tag_clauses": [
            {"allowed_any": ["support", "read"], "denied_any": []},
            {"allowed_any": [], "denied_any": ["admin"]},
        ],
    }
    fingerprints = kitchen_sink_fingerprints()
    assert {t["toolset"]: t["fingerprint"] for t in triage["tools"]} == fingerprints
    assert {t["name"]: t["fingerprint"] for t in triage["toolsets"]} == fingerprints
    assert triage["registry_sources"] == [
        {
            "registry": "company",
            "toolset": "records",
            "version": "1.2.3",
            "loading": "deferred",
            "deferred": True,
        }
    ]
    everything = agent(data, "reporting.everything")
    assert everything["tools"] == []
    assert everything["registry_sources"] == [
        {
            "registry": "company",
            "toolset": None,
            "version": None,
            "loading": "immediate",
            "deferred": False,
        }
    ]
    reporter = agent(data, "reporting.reporter")
    assert reporter["policy"] == {
        "max_tool_calls": None,
        "max_consecutive_failed_tool_calls": None,
        "model_timeout": None,
        "tag_clauses": [],
    }
    assert loading(reporter) == {
        "tickets.search": ("local", "immediate"),
        "tickets.more": ("local", "immediate"),
    }


def test_kitchen_sink_text_marks_hidden_agent_and_mcp_tools() -> None:
    code, out, _ = run(str(KITCHEN_SINK), "--agent", "triage")
    assert code == 0
    assert out.splitlines()[2] == (
        "  run policy: at most 12 tool calls; each model call within 90 seconds; "
        "only tools tagged support or read; no tools tagged admin"
    )
    assert "runs agent helpdesk.expert; hidden by the agent's run policy" in out
    assert "MCP server weather_server" in out
    assert re.search(r"^  company\s+records\s+1\.2\.3\s+deferred$", out, re.MULTILINE)
    assert "registry tools are resolved at run time" in out


def test_company_registry_sources() -> None:
    data = explained(COMPANY)
    reader, generalist = agent(data, "assistant.reader"), agent(data, "assistant.generalist")
    assert reader["tools"] == [] and generalist["tools"] == []
    assert reader["registry_sources"] == [
        {
            "registry": "company",
            "toolset": "records",
            "version": None,
            "loading": "deferred",
            "deferred": True,
        }
    ]
    assert generalist["registry_sources"][0]["toolset"] is None
    code, out, _ = run(COMPANY)
    assert code == 0
    assert re.search(r"^  company\s+\(whole registry\)\s+any\s+deferred$", out, re.MULTILINE)
    assert re.search(r"^  company\s+records\s+any\s+deferred$", out, re.MULTILINE)


# --- first request sizes ------------------------------------------------------------------


def test_a_deferred_registry_read_counts_the_search_tool_its_request_carries() -> None:
    # The registry's tools are deferred at run time, so the adapter adds its search tool; the
    # sizes were of a request without it.
    from agentgen.runtime.adapters.preview import first_request, without_deferred
    from agentgen.runtime.model_client import ToolDefinition
    from agentgen.runtime.search.document import SearchDocument

    registry_tool = ToolDefinition(
        id="records.lookup",
        title="Lookup",
        description="Look a record up.",
        parameters_json='{"type":"object","properties":{"id":{"type":"string"}}}',
        search=SearchDocument({}),
        deferred=True,
    )
    real = {p: first_request(p, [registry_tool]) for p in ("openai", "anthropic")}
    assert b'"type":"tool_search"' in real["openai"] and b"records_lookup" not in real["openai"]
    reader = agent(explained(COMPANY), "assistant.reader")["first_request"]
    # OpenAI's first request sends no deferred definition: the shown size is the whole request.
    assert reader["openai"]["designed"]["bytes"] == len(real["openai"])
    # Claude's carries the registry tools with defer_loading, left out; the rest is counted.
    up_front = without_deferred(real["anthropic"]).encode()
    assert b"tool_search_tool_regex" in up_front
    assert reader["anthropic"]["designed"]["bytes"] == len(up_front)
    assert reader["openai"]["left_out"].startswith("designed holds the tool_search tool")
    code, out, _ = run(COMPANY, "--agent", "assistant.reader")
    assert code == 0
    shown = f"{len(real['openai']):,}"
    assert re.search(rf"^  OpenAI Responses\s+gpt-5\.4\s+{shown}\s.*\s-$", out, re.MULTILINE), out
    assert (
        "  Anthropic Messages: designed holds the tool_search_tool_regex tool that the deferred "
        "registry tools add once any resolves, not their definitions (sent with defer_loading: "
        "in context is unaffected); eager leaves out every registry tool, so saved is not shown"
    ) in out
    # A design without registry reads leaves nothing out.
    assistant = agent(explained(RECORDS), "assistant.assistant")["first_request"]
    assert assistant["openai"]["left_out"] is None


def test_deferred_openai_request_is_smaller_than_eager_for_the_assistant() -> None:
    sizes = agent(explained(RECORDS), "assistant.assistant")["first_request"]
    openai = sizes["openai"]
    assert openai["problem"] is None
    assert openai["designed"]["bytes"] < openai["eager"]["bytes"]
    assert openai["designed"]["tokens"] < openai["eager"]["tokens"]
    # OpenAI sends nothing deferred, so everything it sends is in context.
    assert openai["designed"]["tokens_in_context"] == openai["designed"]["tokens"]
    anthropic = sizes["anthropic"]
    # Claude receives the deferred definitions flagged, but keeps them out of context.
    assert anthropic["designed"]["bytes"] > anthropic["eager"]["bytes"]
    assert anthropic["designed"]["tokens_in_context"] < anthropic["eager"]["tokens"]
    clerk = agent(explained(RECORDS), "assistant.clerk")["first_request"]["openai"]
    assert clerk["designed"] == clerk["eager"]


@dataclass
class RawServer(Server):
    """A fake provider endpoint that also keeps each request's exact bytes."""

    raw: list[bytes] = field(default_factory=list)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.raw.append(request.content)
        return super().handler(request)


class Records:
    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        raise AssertionError("not called")

    async def search(self, args: types.SearchArgs, context: ToolContext) -> types.SearchResult:
        raise AssertionError("not called")

    async def analyze(self, args: types.AnalyzeArgs, context: ToolContext) -> types.Analysis:
        raise AssertionError("not called")


async def sent_by_runtime(package: Any, config: Any, provider: Provider) -> bytes:
    """The first request the generated agent sends through the real adapter and runtime."""
    if provider == "openai":
        server = RawServer(check_openai, [response(text("ok"))])
        adapter: Any = OpenAIResponsesModel(openai_client(server))
    else:
        server = RawServer(check_anthropic, [message(claude_text("ok"))])
        adapter = AnthropicMessagesModel(anthropic_client(server))
    rt = Runtime()
    rt.register_model(provider, adapter)
    planner = ModelPlanner(provider, model=PROVIDERS[provider].model, max_tokens=DEFAULT_MAX_TOKENS)
    register = next(getattr(package, n) for n in dir(package) if n.startswith("register_"))
    register(rt, config(planner=planner, records_executor=Records()))
    outcome = await package.new_client(rt).run(DEFAULT_PROMPT)
    assert outcome.final_text == "ok"
    assert len(server.raw) == 1
    return server.raw[0]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_sizes_are_the_bytes_the_generated_agent_sends(provider: Provider) -> None:
    model = model_of(Path(RECORDS))
    for package, config in (
        (assistant_agent, assistant_agent.AssistantAgentConfig),
        (clerk_agent, clerk_agent.ClerkAgentConfig),
    ):
        sent = await sent_by_runtime(package, config, provider)
        (view,) = select(model, package.AGENT_ID)
        request = preview_request(tool_definitions(view), PROVIDERS[provider].model)
        assert await capture_first_request(provider, request) == sent
        measured = await _measured(package.AGENT_ID, provider)
        assert measured["designed"]["bytes"] == len(sent)
        assert measured["designed"]["tokens"] == tokens.count_tokens(sent.decode())


async def _measured(agent_id: str, provider: Provider) -> dict[str, Any]:
    # The command runs its own event loop: run it outside this test's loop.
    data = await asyncio.to_thread(explained, RECORDS, "--agent", agent_id)
    result: dict[str, Any] = data["agents"][0]["first_request"][provider]
    return result


# --- output formats and failures ----------------------------------------------------------


@pytest.mark.parametrize("design", [RECORDS, COMPANY, str(KITCHEN_SINK)])
def test_json_parses_for_every_design(design: str) -> None:
    data = explained(design)
    assert data["design"] == design
    assert data["request"]["prompt"] == DEFAULT_PROMPT
    assert data["request"]["tokens_unavailable"] is None
    for found in data["agents"]:
        assert set(found["first_request"]) == {"openai", "anthropic"}


def test_unknown_agent_is_a_usage_error() -> None:
    code, _, err = run(RECORDS, "--agent", "nobody")
    assert code == 2 and "the design has no agent 'nobody'" in err


def test_help_has_examples() -> None:
    result = CliRunner().invoke(main, ["explain", "--help"])
    assert result.exit_code == 0
    assert "agentgen explain examples/records/design.py" in result.stdout


def test_missing_sdk_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    code, out, _ = run(RECORDS, "--agent", "assistant")
    assert code == 0
    assert "OpenAI Responses: not measured (OpenAI Responses needs openai: " in out
    assert "pip install 'agentgen[openai]'" in out
    data = explained(RECORDS, "--agent", "assistant")
    sizes = data["agents"][0]["first_request"]
    assert sizes["openai"]["designed"] is None and "agentgen[openai]" in sizes["openai"]["problem"]
    assert sizes["anthropic"]["designed"]["bytes"] > 0


def test_missing_tiktoken_still_gives_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens.o200k.cache_clear()
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    try:
        code, out, _ = run(RECORDS, "--agent", "assistant")
        assert code == 0
        assert "tokens      not counted: counting tokens needs tiktoken: " in out
        assert "pip install 'agentgen[tokens]'" in out
        data = explained(RECORDS, "--agent", "assistant")
    finally:
        tokens.o200k.cache_clear()
    assert "agentgen[tokens]" in data["request"]["tokens_unavailable"]
    designed = data["agents"][0]["first_request"]["openai"]["designed"]
    assert designed["bytes"] > 0 and designed["tokens"] is None


def test_design_errors_exit_1() -> None:
    code, _, err = run(str(ROOT / "tests/designs_with_errors/deferred.py"))
    assert code == 1 and "design error" in err


def test_what_a_design_prints_goes_to_standard_error(tmp_path: Path) -> None:
    # explain --json is read by tools: a design's own print on standard output broke its JSON.
    design = tmp_path / "design.py"
    design.write_text(
        'print("loading the shop design")\n'
        "from pydantic import BaseModel\n"
        "from agentgen.dsl import Agent, Args, Return, Service, Tool, Toolset, Use\n"
        "class Query(BaseModel):\n"
        "    q: str\n"
        "class Found(BaseModel):\n"
        "    ids: list[str]\n"
        "def orders() -> None:\n"
        '    Tool("find_order", "Find an order.", lambda: (Args(Query), Return(Found)))\n'
        'Orders = Toolset("orders", orders)\n'
        'with Service("shop"):\n'
        '    Agent("support", "Answers questions.", lambda: Use(Orders))\n'
    )
    code, out, err = run(str(design), "--json")
    assert code == 0, err
    assert "loading the shop design" in err
    assert "loading the shop design" not in out
    assert [a["id"] for a in json.loads(out)["agents"]] == ["shop.support"]
