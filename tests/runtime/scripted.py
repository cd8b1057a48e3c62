"""A scripted model client that behaves like a provider with client-side tool search.

It sees only what a real model would: eager definitions, plus deferred ones it loaded by a
search over their precomputed documents (the runtime's BM25). It refuses to call a tool it has
not seen, so a test passes only if deferred tools really are found through search.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgen.runtime.messages import Message, TextPart, ToolCallPart
from agentgen.runtime.model_client import ModelRequest, ModelResponse, ToolDefinition, Usage
from agentgen.runtime.search.index import SearchEntry, SearchIndex


@dataclass(frozen=True)
class Search:
    query: str


@dataclass(frozen=True)
class Call:
    tool_id: str
    arguments: dict[str, Any]
    call_id: str = ""


@dataclass(frozen=True)
class Answer:
    text: str


Step = Search | Call | Answer | Sequence[Call]


@dataclass
class ScriptedModel:
    """Plays ``script`` one turn per ``complete`` call; searches do not end a turn."""

    script: list[Step]
    requests: list[ModelRequest] = field(default_factory=list)
    searches: list[tuple[str, list[str]]] = field(default_factory=list)
    loaded: set[str] = field(default_factory=set)
    counter: int = 0

    def visible(self, tools: Sequence[ToolDefinition]) -> set[str]:
        return {t.id for t in tools if not t.deferred} | (self.loaded & {t.id for t in tools})

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        records: list[dict[str, Any]] = []
        while self.script and isinstance(self.script[0], Search):
            step = self.script.pop(0)
            assert isinstance(step, Search)
            deferred = [t for t in request.tools if t.deferred]
            index = SearchIndex([SearchEntry(t.id, t.search) for t in deferred])
            hits = [hit.tool_id for hit in index.search(step.query)]
            self.loaded.update(hits)
            self.searches.append((step.query, hits))
            records.append({"query": step.query, "loaded": hits})
        if not self.script:
            raise AssertionError("the script ran out")
        step = self.script.pop(0)
        metadata = {"scripted.search": records} if records else {}
        if isinstance(step, Answer):
            return ModelResponse(
                Message("assistant", (TextPart(step.text),), metadata), Usage(10, 5)
            )
        calls = [step] if isinstance(step, Call) else list(step)
        visible = self.visible(request.tools)
        parts = []
        for call in calls:
            assert isinstance(call, Call)
            if call.tool_id not in visible:
                raise AssertionError(f"the model cannot call {call.tool_id}: it never saw it")
            self.counter += 1
            parts.append(
                ToolCallPart(
                    call.call_id or f"call_{self.counter}", call.tool_id, json.dumps(call.arguments)
                )
            )
        return ModelResponse(Message("assistant", tuple(parts), metadata), Usage(10, 5))
