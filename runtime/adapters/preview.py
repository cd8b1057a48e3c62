"""The first request an adapter would send, captured offline.

:func:`capture_first_request` runs a real adapter (:class:`OpenAIResponsesModel` or
:class:`AnthropicMessagesModel`) on a :class:`ModelRequest` with an SDK client whose HTTP
transport is an in-memory ``httpx2.MockTransport``: the transport keeps the exact bytes the SDK
would put on the wire and answers with a canned final reply, so the adapter returns after one
request. Nothing is sent anywhere, no credentials are read, and the bytes are the SDK's own
serialisation of what the adapter builds (``agentgen explain`` and ``bench/first_request.py``
measure them).

Each provider needs its SDK (``pip install 'agentgen[openai]'`` or ``'agentgen[anthropic]'``);
:func:`unavailable` says which is missing instead of failing at import.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agentgen.runtime.messages import Message
from agentgen.runtime.model_client import ModelClient, ModelRequest, ToolDefinition

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "PROVIDERS",
    "CaptureTransport",
    "PreviewUnavailableError",
    "Provider",
    "ProviderInfo",
    "capture_first_request",
    "first_request",
    "first_request_body",
    "preview_request",
    "unavailable",
    "without_deferred",
]

Provider = Literal["openai", "anthropic"]

#: What ``agentgen explain`` asks for: one short user message, no system prompt, and the output
#: budget :class:`~agentgen.runtime.agents.model_planner.ModelPlanner` uses by default.
DEFAULT_PROMPT = "What can you help me with?"
DEFAULT_MAX_TOKENS = 4096


@dataclass(frozen=True)
class ProviderInfo:
    label: str
    #: The model named in previews (the size barely depends on it).
    model: str
    #: Modules the capture needs, and the extra that installs them.
    modules: tuple[str, ...]
    extra: str

    @property
    def install(self) -> str:
        return f"pip install 'agentgen[{self.extra}]'"


PROVIDERS: dict[Provider, ProviderInfo] = {
    "openai": ProviderInfo("OpenAI Responses", "gpt-5.4", ("openai", "httpx2"), "openai"),
    "anthropic": ProviderInfo(
        "Anthropic Messages", "claude-opus-4-7", ("anthropic", "httpx2"), "anthropic"
    ),
}

_OPENAI_REPLY: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "status": "completed",
    "model": "gpt-5.4",
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
    "usage": {
        "input_tokens": 1,
        "output_tokens": 1,
        "total_tokens": 2,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}
_ANTHROPIC_REPLY: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-opus-4-7",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
# Placeholders the SDK clients need to build a request; the capture never sends them.
_BASE_URLS: dict[Provider, str] = {
    "openai": "http://stub.local/v1",
    "anthropic": "http://stub.local",
}
_API_KEY = "sk-preview-offline"


class PreviewUnavailableError(ImportError):
    """A provider's SDK is not installed; the message says what to install."""


def unavailable(provider: Provider) -> str | None:
    """What to install before ``provider``'s request can be captured, or None if nothing."""
    info = PROVIDERS[provider]
    missing = [name for name in info.modules if not _importable(name)]
    if not missing:
        return None
    return f"{info.label} needs {' and '.join(missing)}: {info.install}"


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a None entry in sys.modules, or a broken package
        return False


class CaptureTransport:
    """An in-memory transport that keeps each request's body and answers with ``reply``."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.bodies: list[bytes] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        import httpx2

        self.bodies.append(request.content)
        return httpx2.Response(200, json=self.reply)

    def client(self) -> httpx2.AsyncClient:
        import httpx2

        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))


def preview_request(
    tools: Sequence[ToolDefinition],
    model: str,
    *,
    prompt: str = DEFAULT_PROMPT,
    system: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> ModelRequest:
    """The first request of a conversation: one user message and the advertised tools."""
    return ModelRequest(
        model=model,
        messages=(Message.user(prompt),),
        tools=tuple(tools),
        max_tokens=max_tokens,
        system=system,
    )


async def capture_first_request(provider: Provider, request: ModelRequest) -> bytes:
    """The exact body ``provider``'s adapter sends first for ``request``.

    Raises :class:`PreviewUnavailableError` when the SDK is missing and the adapter's own
    :class:`~agentgen.runtime.model_client.ModelError` when it refuses the request (a name clash,
    a missing output budget...), before anything would have been sent.
    """
    problem = unavailable(provider)
    if problem is not None:
        raise PreviewUnavailableError(problem)
    model: ModelClient
    if provider == "openai":
        from openai import AsyncOpenAI

        from agentgen.runtime.adapters.openai_responses import OpenAIResponsesModel

        capture = CaptureTransport(_OPENAI_REPLY)
        openai_client = AsyncOpenAI(
            api_key=_API_KEY,
            base_url=_BASE_URLS[provider],
            http_client=capture.client(),
            max_retries=0,
        )
        model, close = OpenAIResponsesModel(openai_client), openai_client.close
    else:
        from anthropic import AsyncAnthropic

        from agentgen.runtime.adapters.anthropic_messages import AnthropicMessagesModel

        capture = CaptureTransport(_ANTHROPIC_REPLY)
        anthropic_client = AsyncAnthropic(
            api_key=_API_KEY,
            base_url=_BASE_URLS[provider],
            http_client=capture.client(),
            max_retries=0,
        )
        model, close = AnthropicMessagesModel(anthropic_client), anthropic_client.close
    try:
        await model.complete(request)
    finally:
        await close()
    if len(capture.bodies) != 1:  # pragma: no cover - the canned reply ends the invocation
        raise AssertionError(f"expected one request, captured {len(capture.bodies)}")
    return capture.bodies[0]


def first_request_body(provider: Provider, request: ModelRequest) -> bytes:
    """:func:`capture_first_request` from synchronous code (not inside a running loop)."""
    return asyncio.run(capture_first_request(provider, request))


def first_request(provider: Provider, tools: Sequence[ToolDefinition], **options: Any) -> bytes:
    """The first request body for ``tools`` with :func:`preview_request`'s defaults."""
    return first_request_body(
        provider, preview_request(tools, PROVIDERS[provider].model, **options)
    )


def without_deferred(body: bytes) -> str:
    """The request without ``defer_loading`` tool entries: what the model reads up front.

    Claude's API keeps deferred definitions out of the model's context until a search finds
    them, so for Anthropic this approximates the context cost of the request; OpenAI requests
    hold nothing deferred, and lose nothing here.
    """
    data = json.loads(body)
    if "tools" not in data:
        return body.decode()
    data["tools"] = [tool for tool in data["tools"] if not tool.get("defer_loading")]
    # Serialised as the SDKs' transport does (compact, UTF-8).
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
