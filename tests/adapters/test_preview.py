"""Capturing an adapter's first request offline, and counting its o200k tokens."""

from __future__ import annotations

import json
import os
import sys

import pytest

from agentgen.runtime.adapters import AnthropicMessagesModel, OpenAIResponsesModel, tokens
from agentgen.runtime.adapters.preview import (
    PreviewUnavailableError,
    capture_first_request,
    first_request,
    unavailable,
    without_deferred,
)
from agentgen.runtime.model_client import ModelError
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
from tests.adapters.tools import CATALOG, RECORDS, request, tool


async def test_capture_is_what_the_adapters_send() -> None:
    server = openai_server(response(text("ok")))
    await OpenAIResponsesModel(openai_client(server)).complete(request())
    assert json.loads(await capture_first_request("openai", request())) == server.bodies[0]

    claude = request(model="claude-opus-4-7")
    server = anthropic_server(message(claude_text("ok")))
    await AnthropicMessagesModel(anthropic_client(server)).complete(claude)
    assert json.loads(await capture_first_request("anthropic", claude)) == server.bodies[0]


def test_first_request_from_sync_code() -> None:
    body = json.loads(first_request("openai", CATALOG))
    assert [t.get("name", t["type"]) for t in body["tools"]] == ["records_search", "tool_search"]
    assert body["max_output_tokens"] == 4096
    assert body["input"] == [
        {"type": "message", "role": "user", "content": "What can you help me with?"}
    ]


async def test_the_adapters_refusals_are_raised() -> None:
    with pytest.raises(ModelError, match="lists tool 'records.search' twice"):
        await capture_first_request("openai", request(tools=(RECORDS, RECORDS)))


def test_without_deferred_drops_flagged_definitions_only() -> None:
    body = first_request("anthropic", CATALOG)
    names = [t["name"] for t in json.loads(without_deferred(body))["tools"]]
    assert names == ["records_search", "tool_search_tool_regex"]
    bare = first_request("anthropic", ())
    assert without_deferred(bare) == bare.decode()
    eager = first_request("anthropic", (tool("x.café", "Ünïcode — kept as UTF-8."),))
    assert without_deferred(eager) == eager.decode()


def test_missing_sdk_is_reported_with_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    message = "Anthropic Messages needs anthropic: pip install 'agentgen[anthropic]'"
    assert unavailable("anthropic") == message
    assert unavailable("openai") is None
    with pytest.raises(PreviewUnavailableError, match=r"agentgen\[anthropic\]"):
        first_request("anthropic", CATALOG)


def test_o200k_loads_offline_and_leaves_the_environment_alone() -> None:
    tokens.o200k.cache_clear()
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    assert tokens.unavailable() is None
    assert os.environ.get("TIKTOKEN_CACHE_DIR") == before
    assert tokens.count_tokens("hello world") == 2
    # Special-token text in a tool description is counted as text, not refused.
    assert tokens.count_tokens("<|endoftext|>") > 1


def test_missing_tiktoken_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens.o200k.cache_clear()
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    try:
        assert tokens.unavailable() == (
            "counting tokens needs tiktoken: pip install 'agentgen[tokens]'"
        )
        with pytest.raises(tokens.TokenCounterError):
            tokens.count_tokens("hello")
    finally:
        tokens.o200k.cache_clear()
