"""Local stand-ins for the providers' HTTP endpoints, used through the real SDK clients.

The SDKs (openai >= 3, anthropic >= 2) send through ``httpx2``; a ``MockTransport`` answers
with canned replies and records each request. Every request body is checked against the SDK's
own parameter types before it is answered (a non-conforming body gets an HTTP 400 carrying the
problems, so the test fails with them), and clients are built with strict response
validation, so every canned reply is parsed by the SDK's response models.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import httpx2
import openai
import openai.providers
from anthropic import AsyncAnthropic, AsyncAnthropicBedrock
from anthropic.types import Message as AnthropicMessage
from anthropic.types import MessageParam, ToolUnionParam
from anthropic.types import message_create_params as anthropic_params
from anthropic.types.beta import BetaMessageParam, BetaToolUnionParam
from anthropic.types.beta import message_create_params as beta_params
from openai import AsyncOpenAI
from openai.types.responses import Response, ResponseInputItemParam, ToolParam
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

from tests.adapters.wire import conformance_problems

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Exchange:
    url: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Server:
    """Answers requests in order with ``replies``; ``check`` lists a body's problems."""

    check: Callable[[str, dict[str, str], dict[str, Any]], list[str]]
    replies: list[Reply]
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [exchange.body for exchange in self.exchanges]

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        url, headers = str(request.url), dict(request.headers)
        self.exchanges.append(Exchange(url, headers, body))
        problems = self.check(url, headers, body)
        if problems:
            return httpx2.Response(400, json={"error": {"message": "\n".join(problems)}})
        if not self.replies:
            return httpx2.Response(500, json={"error": {"message": "no reply left"}})
        reply = self.replies.pop(0)
        return httpx2.Response(200, json=reply(body) if callable(reply) else reply)

    def http_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))


# --- OpenAI Responses ---------------------------------------------------------------------


def check_openai(url: str, headers: dict[str, str], body: dict[str, Any]) -> list[str]:
    problems = conformance_problems(body, ResponseCreateParamsNonStreaming)
    for tool in body.get("tools", []):
        problems += conformance_problems(tool, ToolParam)
    for item in body.get("input", []):
        problems += conformance_problems(item, ResponseInputItemParam)
    return problems


def openai_server(*replies: Reply) -> Server:
    return Server(check_openai, list(replies))


def openai_client(server: Server, *, bedrock: bool = False, strict: bool = True) -> AsyncOpenAI:
    """``strict=False`` is the SDK's default (lenient) parsing, which lets content the SDK's
    types do not know through to the adapter."""
    if bedrock:
        provider = openai.providers.bedrock(
            endpoint="runtime",
            region="us-west-2",
            access_key_id="AKIDTEST",
            secret_access_key="secret",
        )
        return AsyncOpenAI(
            provider=provider,
            http_client=server.http_client(),
            max_retries=0,
            _strict_response_validation=strict,
        )
    return AsyncOpenAI(
        api_key="sk-test",
        base_url="http://stub.local/v1",
        http_client=server.http_client(),
        max_retries=0,
        _strict_response_validation=strict,
    )


def response(
    *output: dict[str, Any],
    output_tokens: int = 20,
    status: str = "completed",
    incomplete: str | None = None,
    response_id: str = "resp_1",
) -> dict[str, Any]:
    """A complete Responses API reply; parsed once here so a malformed canned reply fails."""
    reply = {
        "id": response_id,
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": "gpt-5.4",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": list(output),
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "usage": {
            "input_tokens": 100,
            "output_tokens": output_tokens,
            "total_tokens": 100 + output_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    Response.model_validate(reply)
    return reply


def search_call(call_id: str, query: str, item_id: str | None = None) -> dict[str, Any]:
    return {
        "type": "tool_search_call",
        "id": item_id or f"tsc_{call_id}",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "arguments": {"query": query},
    }


def function_call(
    call_id: str, name: str, arguments: str = "{}", namespace: str | None = None
) -> dict[str, Any]:
    item = {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }
    if namespace is not None:
        item["namespace"] = namespace
    return item


def text(value: str, item_id: str = "msg_1", phase: str | None = None) -> dict[str, Any]:
    item = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": value, "annotations": []}],
    }
    if phase is not None:
        item["phase"] = phase
    return item


def reasoning(item_id: str = "rs_1") -> dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": []}


# --- Anthropic Messages -------------------------------------------------------------------

BEDROCK_INVOKE = "https://bedrock-runtime.us-west-2.amazonaws.com/model/"


def check_anthropic(url: str, headers: dict[str, str], body: dict[str, Any]) -> list[str]:
    body = dict(body)
    if url.startswith(BEDROCK_INVOKE):
        # The Bedrock envelope: model in the URL, version and betas in the body.
        problems = [] if "model" not in body else ["$.model: Bedrock takes the model in the URL"]
        body.pop("anthropic_version", None)
        betas = body.pop("anthropic_beta", [])
        body["model"] = unquote(url.removeprefix(BEDROCK_INVOKE).removesuffix("/invoke"))
    else:
        problems = []
        betas = [beta for beta in headers.get("anthropic-beta", "").split(",") if beta]
    whole: Any
    tool_type: Any
    message_type: Any
    if betas:
        whole, tool_type, message_type = (
            beta_params.MessageCreateParamsNonStreaming,
            BetaToolUnionParam,
            BetaMessageParam,
        )
    else:
        whole, tool_type, message_type = (
            anthropic_params.MessageCreateParamsNonStreaming,
            ToolUnionParam,
            MessageParam,
        )
    problems += conformance_problems(body, whole)
    for tool in body.get("tools", []):
        problems += conformance_problems(tool, tool_type)
    for message in body.get("messages", []):
        problems += conformance_problems(message, message_type)
    return problems


def anthropic_server(*replies: Reply) -> Server:
    return Server(check_anthropic, list(replies))


def anthropic_client(
    server: Server, *, bedrock: bool = False, strict: bool = True
) -> AsyncAnthropic | AsyncAnthropicBedrock:
    if bedrock:
        return AsyncAnthropicBedrock(
            aws_access_key="AKIDTEST",
            aws_secret_key="secret",
            aws_region="us-west-2",
            http_client=server.http_client(),
            max_retries=0,
            _strict_response_validation=strict,
        )
    return AsyncAnthropic(
        api_key="sk-ant-test",
        base_url="http://stub.local",
        http_client=server.http_client(),
        max_retries=0,
        _strict_response_validation=strict,
    )


def raw_anthropic_client(raw: str | bytes) -> AsyncAnthropic:
    """A client every request of which is answered with the JSON text ``raw``: a reply the
    dictionaries above cannot hold (an escaped lone surrogate: valid JSON, not valid Unicode)."""

    def handler(_: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=raw, headers={"content-type": "application/json"})

    return AsyncAnthropic(
        api_key="sk-ant-test",
        base_url="http://stub.local",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )


def message(
    *content: dict[str, Any],
    stop_reason: str = "end_turn",
    output_tokens: int = 20,
    validate: bool = True,
) -> dict[str, Any]:
    """A complete Messages API reply; parsed once here so a malformed canned reply fails."""
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-7",
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": output_tokens},
    }
    if validate:
        AnthropicMessage.model_validate(reply)
    return reply


def server_search(block_id: str, pattern: str) -> dict[str, Any]:
    return {
        "type": "server_tool_use",
        "id": block_id,
        "name": "tool_search_tool_regex",
        "input": {"pattern": pattern},
    }


def search_result(block_id: str, *names: str) -> dict[str, Any]:
    return {
        "type": "tool_search_tool_result",
        "tool_use_id": block_id,
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": name} for name in names],
        },
    }


def search_error(block_id: str, code: str) -> dict[str, Any]:
    return {
        "type": "tool_search_tool_result",
        "tool_use_id": block_id,
        "content": {"type": "tool_search_tool_result_error", "error_code": code},
    }


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def claude_text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}
