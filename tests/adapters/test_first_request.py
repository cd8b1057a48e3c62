"""The OpenAI first request does not grow with the number of deferred tools (SPEC I1); the
Anthropic one lists them all, flagged, behind one immediate search tool (SPEC I2)."""

from __future__ import annotations

import json

from agentgen.runtime.adapters import AnthropicMessagesModel, OpenAIResponsesModel
from agentgen.runtime.model_client import ToolDefinition
from tests.adapters.fakes import (
    anthropic_client,
    anthropic_server,
    claude_text,
    message,
    openai_client,
    openai_server,
    response,
    text,
)
from tests.adapters.tools import RECORDS, request, tool

SIZES = (10, 100, 1000)


def catalog(size: int) -> tuple[ToolDefinition, ...]:
    return tuple(
        tool(
            f"set{i % 17}.action_{i}",
            f"Performs action number {i} on the records of toolset {i % 17}.",
            {"id": {"type": "string", "description": f"Identifier for action {i}."}},
            deferred=True,
        )
        for i in range(size)
    )


async def test_openai_deferred_first_request_is_the_same_for_any_catalog_size() -> None:
    bodies = []
    for size in SIZES:
        server = openai_server(response(text("ok")))
        await OpenAIResponsesModel(openai_client(server)).complete(
            request(tools=(RECORDS, *catalog(size)))
        )
        bodies.append(json.dumps(server.bodies[0], sort_keys=True))
    assert len(set(bodies)) == 1
    assert "action_" not in bodies[0] and "Performs action" not in bodies[0]


async def test_anthropic_deferred_first_request_flags_every_deferred_tool() -> None:
    for size in SIZES:
        server = anthropic_server(message(claude_text("ok")))
        await AnthropicMessagesModel(anthropic_client(server)).complete(
            request(tools=catalog(size), model="claude-opus-4-7")
        )
        sent = server.bodies[0]["tools"]
        assert len(sent) == size + 1
        assert all(entry["defer_loading"] is True for entry in sent[:-1])
        assert "defer_loading" not in sent[-1] and sent[-1]["name"] == "tool_search_tool_regex"
