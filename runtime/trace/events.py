"""A run's story, read back from its transcript: who asked, what was searched and loaded, which
tools were called with what, what they answered, the answer, and what it cost.

Everything comes from the messages (and the records adapters keep in their metadata), so the
same events come out of a live run's outcome and of a transcript stored months ago: the native
search records of the OpenAI Responses adapter (``openai.tool_search``), of the Anthropic
Messages adapter (``anthropic.tool_search``) and of agentgen's test models
(:data:`TESTING_SEARCH_KEY`), and the usage :class:`~agentgen.runtime.agents.model_planner.
ModelPlanner` records on each reply (:data:`~agentgen.runtime.model_client.USAGE_METADATA_KEY`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeGuard

from agentgen.runtime.adapters import ANTHROPIC_METADATA_KEY, OPENAI_METADATA_KEY
from agentgen.runtime.adapters.anthropic_search import SearchMetadata as AnthropicRecords
from agentgen.runtime.adapters.errors import HistoryReplayError
from agentgen.runtime.adapters.names import provider_name
from agentgen.runtime.adapters.openai_search import SearchMetadata as OpenAIRecords
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import USAGE_METADATA_KEY, ToolDefinition

__all__ = [
    "TESTING_SEARCH_KEY",
    "USAGE_SHOWN",
    "EventKind",
    "HasTranscript",
    "TraceError",
    "TraceEvent",
    "Usage",
    "events",
    "loaded_tools",
    "transcript_of",
]

#: Where agentgen's test models (``agentgen.runtime.testing``) record their searches in an
#: assistant message's metadata: a list of ``{"query": ..., "loaded": [tool IDs]}``.
TESTING_SEARCH_KEY = "agentgen.testing.search"

EventKind = Literal[
    "system", "user", "tools", "search", "loaded", "call", "result", "model", "answer", "usage"
]


class TraceError(ValueError):
    """A transcript whose records cannot be read (the message and what is wrong are named)."""


class HasTranscript(Protocol):
    """A run's outcome (``RunOutcome``), or anything else that holds a transcript."""

    @property
    def transcript(self) -> Sequence[Message]: ...


@dataclass(frozen=True)
class Usage:
    """What one model response cost, as ``ModelPlanner`` recorded it. ``unreported`` counts
    the provider responses behind it that reported no usage (the counts leave them out)."""

    model: str
    input_tokens: int
    output_tokens: int
    unreported: int = 0


@dataclass(frozen=True)
class TraceEvent:
    """One step of a run. ``message`` is the index of the message it comes from (-1 for the
    summary events: the catalog and the usage)."""

    kind: EventKind
    text: str
    message: int = -1
    tool_id: str | None = None
    call_id: str | None = None
    is_error: bool = False
    #: ``search``: the query; ``loaded``: the tool IDs (or provider names) it loaded.
    query: str | None = None
    tools: tuple[str, ...] = ()
    #: ``usage``: each model response's usage, in order.
    usage: tuple[Usage, ...] = field(default=())


def transcript_of(source: HasTranscript | Sequence[Message]) -> Sequence[Message]:
    """The messages of a run's outcome or of a transcript. Anything else is a ``TypeError``
    saying what to pass: a stored transcript's JSON text (a ``str``, a sequence too) or its
    decoded list failed with ``'str' object has no attribute 'tool_calls'``."""
    if isinstance(source, str | bytes | bytearray):
        raise TypeError(
            "a trace reads messages, not a stored transcript's JSON text: pass "
            "agentgen.runtime.transcript.loads(text), or the run's outcome"
        )
    if isinstance(source, Sequence):
        for index, message in enumerate(source):
            if not isinstance(message, Message):
                raise TypeError(
                    f"message {index} is a {type(message).__name__}, not a Message: read a "
                    "stored transcript with agentgen.runtime.transcript.loads(text)"
                )
        return source
    messages = getattr(source, "transcript", None)
    if messages is None:
        raise TypeError(
            f"a trace reads a run's outcome (RunOutcome) or its transcript, not a "
            f"{type(source).__name__}"
        )
    return transcript_of(messages)


def events(
    source: HasTranscript | Sequence[Message], *, tools: Sequence[ToolDefinition] | None = None
) -> list[TraceEvent]:
    """The run's steps in order. ``tools`` (the first request's advertised definitions, when
    the caller has them) adds the catalog after the first user message and names tools that
    were loaded but never called by their IDs."""
    messages = transcript_of(source)
    names = _names(messages, tools)
    out: list[TraceEvent] = []
    usage: list[Usage] = []
    catalog_shown = tools is None
    for index, message in enumerate(messages):
        if message.role in ("system", "user"):
            out.append(TraceEvent(message.role, message.text, index))
            if message.role == "user" and not catalog_shown:
                assert tools is not None
                out.append(_catalog(tools))
                catalog_shown = True
        elif message.role == "tool":
            out.extend(_results(message, index))
        else:
            out.extend(_assistant(message, index, names))
            recorded = _usage(message, index)
            if recorded is not None:
                usage.append(recorded)
    if usage:
        out.append(_total(usage))
    return out


def loaded_tools(source: HasTranscript | Sequence[Message]) -> set[str]:
    """Every tool the transcript's searches loaded (by tool ID where it can be told)."""
    messages = transcript_of(source)
    names = _names(messages, None)
    found: set[str] = set()
    for index, message in enumerate(messages):
        if message.role == "assistant":
            for _, kind, _, loaded in _searches(message, index, names):
                if kind == "loaded":
                    found.update(loaded)
    return found


# --- assistant messages ----------------------------------------------------------------------

#: A search step: (anchor, "search" or "loaded", text, tools).
_Step = tuple[int, Literal["search", "loaded"], str, tuple[str, ...]]


def _assistant(message: Message, index: int, names: Mapping[str, str]) -> list[TraceEvent]:
    steps = sorted(_searches(message, index, names), key=lambda step: step[0])
    calls = message.tool_calls()
    out: list[TraceEvent] = []
    position = 0
    for at, part in enumerate((*message.parts, None)):
        while position < len(steps) and steps[position][0] <= at:
            _, kind, text, loaded = steps[position]
            query = text if kind == "search" else None
            out.append(TraceEvent(kind, text, index, query=query, tools=loaded))
            position += 1
        if isinstance(part, ToolCallPart):
            out.append(
                TraceEvent(
                    "call",
                    f"{part.tool_id} {part.arguments}",
                    index,
                    tool_id=part.tool_id,
                    call_id=part.call_id,
                )
            )
        elif isinstance(part, TextPart) and part.text and calls:
            out.append(TraceEvent("model", part.text, index))
    if not calls:
        out.append(TraceEvent("answer", message.text, index))
    return out


def _searches(message: Message, index: int, names: Mapping[str, str]) -> list[_Step]:
    what = f"message {index} (assistant)"
    steps: list[_Step] = []
    try:
        openai = message.metadata.get(OPENAI_METADATA_KEY)
        if openai is not None:
            records = OpenAIRecords.from_json(openai, message.parts, what).records
            for at, item in records:
                if item.get("type") == "tool_search_call":
                    arguments = item.get("arguments")
                    given = arguments.get("query") if isinstance(arguments, Mapping) else None
                    query = _text(given, what)
                    steps.append((at, "search", query, ()))
                elif item.get("type") == "tool_search_output":
                    loaded = tuple(names.get(n, n) for n in _loaded_names(item, what))
                    steps.append((at, "loaded", _listed(loaded), loaded))
        anthropic = message.metadata.get(ANTHROPIC_METADATA_KEY)
        if anthropic is not None:
            stored = AnthropicRecords.from_json(anthropic, message.parts, what)
            for at, block in stored.records:
                steps.extend(_anthropic_step(at, block, names, what))
    except HistoryReplayError as exc:
        raise TraceError(str(exc)) from None
    testing = message.metadata.get(TESTING_SEARCH_KEY)
    if testing is not None:
        if not isinstance(testing, list):
            raise TraceError(f"{what}: {TESTING_SEARCH_KEY!r} must be a list of searches")
        for search in testing:
            if not isinstance(search, Mapping) or not isinstance(search.get("loaded"), list):
                raise TraceError(f"{what}: {TESTING_SEARCH_KEY!r} holds a malformed search")
            loaded = tuple(str(tool) for tool in search["loaded"])
            steps.append((0, "search", _text(search.get("query"), what), ()))
            steps.append((0, "loaded", _listed(loaded), loaded))
    return steps


def _anthropic_step(
    at: int, block: Mapping[str, Any], names: Mapping[str, str], what: str
) -> list[_Step]:
    kind = block.get("type")
    if kind == "server_tool_use":
        given = block.get("input")
        query = given.get("pattern", given.get("query", "")) if isinstance(given, dict) else ""
        return [(at, "search", f"{_text(query, what)} ({block.get('name')})", ())]
    if kind != "tool_search_tool_result":
        return []
    content = block.get("content")
    if not isinstance(content, Mapping):
        raise TraceError(f"{what}: a tool_search_tool_result has no content")
    if content.get("type") == "tool_search_tool_result_error":
        return [(at, "loaded", f"nothing: the search failed ({content.get('error_code')})", ())]
    references = content.get("tool_references") or []
    loaded = tuple(
        names.get(ref.get("tool_name", ""), str(ref.get("tool_name")))
        for ref in references
        if isinstance(ref, Mapping)
    )
    return [(at, "loaded", _listed(loaded), loaded)]


def _loaded_names(item: Mapping[str, Any], what: str) -> list[str]:
    tools = item.get("tools")
    if not isinstance(tools, list):
        raise TraceError(f"{what}: a tool_search_output has no tools list")
    return [str(tool.get("name")) for tool in tools if isinstance(tool, Mapping)]


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TraceError(f"{what}: a search has no query")
    return json.dumps(value, ensure_ascii=False)


def _listed(loaded: Sequence[str]) -> str:
    return ", ".join(loaded) or "nothing (no tool matched)"


def _names(messages: Sequence[Message], tools: Sequence[ToolDefinition] | None) -> dict[str, str]:
    """Provider names to tool IDs: from the catalog when given, from every call of the
    transcript, and from the definitions the Anthropic adapter saved."""
    ids: list[str] = [tool.id for tool in tools or ()]
    names: dict[str, str] = {}
    for message in messages:
        ids.extend(call.tool_id for call in message.tool_calls())
        saved = message.metadata.get(ANTHROPIC_METADATA_KEY)
        definitions = saved.get("definitions") if isinstance(saved, Mapping) else None
        for definition in definitions if isinstance(definitions, list) else ():
            if isinstance(definition, Mapping):
                name, tool_id = definition.get("name"), definition.get("tool_id")
                if isinstance(name, str) and isinstance(tool_id, str):
                    names[name] = tool_id
    for tool_id in ids:
        names.setdefault(provider_name(tool_id), tool_id)
        names.setdefault(tool_id, tool_id)
    return names


# --- tool results, catalog and usage ---------------------------------------------------------


def _results(message: Message, index: int) -> Iterable[TraceEvent]:
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            error = " (error)" if part.is_error else ""
            yield TraceEvent(
                "result",
                f"{part.tool_id} → {part.content}{error}",
                index,
                tool_id=part.tool_id,
                call_id=part.call_id,
                is_error=part.is_error,
            )


def _catalog(tools: Sequence[ToolDefinition]) -> TraceEvent:
    eager = [tool.id for tool in tools if not tool.deferred]
    deferred = [tool.id for tool in tools if tool.deferred]
    text = f"immediate: {', '.join(eager) or 'none'}\ndeferred ({len(deferred)}): " + (
        ", ".join(deferred) or "none"
    )
    return TraceEvent("tools", text, tools=(*eager, *deferred))


def _usage(message: Message, index: int) -> Usage | None:
    value = message.metadata.get(USAGE_METADATA_KEY)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TraceError(f"message {index} (assistant): {USAGE_METADATA_KEY!r} is malformed")
    sent, received = value.get("input_tokens"), value.get("output_tokens")
    unreported = value.get("unreported_responses", 0)
    if not (_count(sent) and _count(received) and _count(unreported)):
        raise TraceError(f"message {index} (assistant): {USAGE_METADATA_KEY!r} is malformed")
    return Usage(str(value.get("model", "")), sent, received, unreported)


def _count(value: object) -> TypeGuard[int]:
    """A token or response count as stored: an exact non-negative int (``true`` and ``-5``
    are not counts, and would be shown as ``1`` and ``-5`` tokens)."""
    return type(value) is int and value >= 0


#: The usage line lists this many responses at most: a long run's line stays one line to read
#: (the totals cover them all; ``TraceEvent.usage`` holds each).
USAGE_SHOWN = 10


def _total(usage: Sequence[Usage]) -> TraceEvent:
    tokens_in = sum(u.input_tokens for u in usage)
    tokens_out = sum(u.output_tokens for u in usage)
    unreported = sum(u.unreported for u in usage)
    each = ", ".join(_each(u) for u in usage[:USAGE_SHOWN])
    if len(usage) > USAGE_SHOWN:
        each += f", and {len(usage) - USAGE_SHOWN:,} more"
    count = f"{len(usage):,} model response{'s' if len(usage) != 1 else ''}"
    text = f"{tokens_in:,} input + {tokens_out:,} output tokens, the sum of {count} ({each})"
    if unreported:
        # The totals are a lower bound: said on the line, never left to be read as the cost.
        silent = (
            "1 provider response reported no usage, and what it cost"
            if unreported == 1
            else f"{unreported:,} provider responses reported no usage, and what they cost"
        )
        text = f"at least {text}; {silent} is not counted"
    return TraceEvent("usage", text, usage=tuple(usage))


def _each(usage: Usage) -> str:
    counts = f"{usage.input_tokens:,} + {usage.output_tokens:,}"
    if not usage.unreported:
        return counts
    if not usage.input_tokens and not usage.output_tokens:
        return "not reported"
    return f"{counts} and {usage.unreported:,} not reported"
