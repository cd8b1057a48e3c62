"""Readable summaries of provider requests, which recordings store and compare.

A summary keeps what decides the reply (the API path, the model, the tools offered, the
conversation so far) in a form a person can read in a diff, and leaves out what does not
(schemas, cache markers, headers). A recorded exchange answers only a request with the same
summary: when an adapter or a design changes what is sent, the recording says so instead of
answering a question nobody asked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote

if TYPE_CHECKING:
    import httpx2

__all__ = ["Provider", "summarize", "summarize_anthropic", "summarize_openai"]

#: The wire formats a recording can hold: the OpenAI Responses API and the Anthropic Messages
#: API, directly or on Amazon Bedrock (Anthropic through InvokeModel).
Provider = Literal["openai", "anthropic", "openai-bedrock", "anthropic-bedrock"]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _openai_input(item: Mapping[str, Any]) -> str:
    kind = item.get("type", "message")
    if kind == "message":
        content = item.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        return f"{item.get('role')}: {content}"
    if kind == "tool_search_call":
        return f"tool_search_call {item['call_id']}: {_json(item['arguments'])}"
    if kind == "tool_search_output":
        names = [tool["name"] for tool in item["tools"]]
        return f"tool_search_output {item['call_id']}: loaded {', '.join(names) or 'nothing'}"
    if kind == "function_call":
        namespace = f" in namespace {item['namespace']}" if item.get("namespace") else ""
        return f"function_call {item['call_id']}: {item['name']}{namespace} {item['arguments']}"
    if kind == "function_call_output":
        return f"function_call_output {item['call_id']}: {item['output']}"
    return str(kind)


def summarize_openai(request: httpx2.Request) -> dict[str, Any]:
    """What a Responses API request asks: path, model, tool names, the input items."""
    body = json.loads(request.content)
    items = body.get("input", [])
    # The API takes a bare string as one user message (`responses.create(input="...")`): it
    # was read as items, one per character, and the player failed with AttributeError.
    summary = [f"user: {items}"] if isinstance(items, str) else [_openai_input(i) for i in items]
    return {
        "path": request.url.path,
        "model": body.get("model"),
        "tools": [tool.get("name") or tool["type"] for tool in body.get("tools", [])],
        "input": summary,
    }


def _anthropic_block(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return f"text: {block['text']}"
    if kind in ("server_tool_use", "tool_use"):
        return f"{kind} {block['id']}: {block['name']} {_json(block['input'])}"
    if kind == "tool_search_tool_result":
        names = [ref["tool_name"] for ref in block["content"].get("tool_references", [])]
        return f"tool_search_tool_result {block['tool_use_id']}: {', '.join(names) or 'nothing'}"
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        return f"tool_result {block['tool_use_id']}: {content}"
    return str(kind)


def _bedrock_model(path: str) -> str | None:
    """The model of a Bedrock InvokeModel path (``/model/<id>/invoke``)."""
    parts = path.split("/")
    return unquote(parts[2]) if len(parts) > 2 and parts[1] == "model" else None


def summarize_anthropic(request: httpx2.Request) -> dict[str, Any]:
    """What a Messages API request asks: path, model, tool names (deferred ones and hosted
    tools marked), the messages."""
    body = json.loads(request.content)
    tools = []
    for tool in body.get("tools", []):
        if "type" in tool:
            tools.append(f"{tool['name']} ({tool['type']})")
        else:
            tools.append(tool["name"] + (" (defer_loading)" if tool.get("defer_loading") else ""))
    messages = []
    for message in body.get("messages", []):
        content = message["content"]
        blocks = [content] if isinstance(content, str) else [_anthropic_block(b) for b in content]
        messages.append(f"{message['role']}: " + " | ".join(blocks))
    return {
        "path": request.url.path,
        "model": body.get("model") or _bedrock_model(request.url.path),
        "tools": tools,
        "messages": messages,
    }


def summarize(provider: Provider, request: httpx2.Request) -> dict[str, Any]:
    """The summary of a request in ``provider``'s wire format."""
    if provider.startswith("openai"):
        return summarize_openai(request)
    return summarize_anthropic(request)
