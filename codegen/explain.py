"""``agentgen explain``: what each agent loads up front, what it finds by search, what its
default run policy bounds, and what the first model request costs.

Everything is read from the generation model: the tool definitions handed to the adapters are
the ones a planning catalog would advertise for the generated package (same IDs, titles,
descriptions, payload schemas, search documents, deferred flags, filtered by the agent's run
policy). The first request of each provider is built by the real adapter and captured in
memory (:mod:`agentgen.runtime.adapters.preview`), then measured in bytes and o200k tokens
(:mod:`agentgen.runtime.adapters.tokens`), once as designed and once with every tool eager.
Registry tools are resolved at run time, so they are listed as sources and never counted; the
search tool a deferred registry read makes the adapter add is counted, and each size says what
it leaves out (:attr:`RequestSize.left_out`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentgen.codegen.agent_views import AgentView, ToolView
from agentgen.codegen.generation_model import PolicyModel
from agentgen.runtime.adapters import tokens
from agentgen.runtime.adapters.preview import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_PROMPT,
    PROVIDERS,
    Provider,
    first_request,
    unavailable,
    without_deferred,
)
from agentgen.runtime.model_client import ModelError, ToolDefinition
from agentgen.runtime.search.document import SearchDocument

__all__ = [
    "AgentExplanation",
    "Measure",
    "RequestSize",
    "explain",
    "render_json",
    "render_text",
    "tool_definitions",
]

REGISTRY_NOTE = "registry tools are resolved at run time: they cannot be listed or counted here"

#: A deferred stand-in for the tools a deferred registry read resolves at run time: with it in
#: the request, the adapter adds its search tool as it does at run time; its own definition is
#: then taken out of the captured body (OpenAI's request never holds one).
_REGISTRY_STAND_IN = ToolDefinition(
    id="agentgen_explain.registry_stand_in",
    title="",
    description="",
    parameters_json='{"type":"object","properties":{}}',
    search=SearchDocument({}),
    deferred=True,
)


@dataclass(frozen=True)
class Measure:
    """The size of one captured request body."""

    bytes: int
    #: o200k tokens of the body; None when tokens cannot be counted.
    tokens: int | None
    #: Tokens without ``defer_loading`` definitions (what the model reads before searching).
    tokens_in_context: int | None


@dataclass(frozen=True)
class RequestSize:
    provider: Provider
    #: The first request as designed, and with every advertised tool eager (None: not measured).
    designed: Measure | None
    eager: Measure | None
    #: Why the request was not measured (what to install, or the adapter's refusal).
    problem: str | None = None
    #: What the measured requests leave out of the real one (the tools an agent's registry
    #: reads resolve at run time); None when they are the whole request.
    left_out: str | None = None

    @property
    def label(self) -> str:
        return PROVIDERS[self.provider].label

    @property
    def model(self) -> str:
        return PROVIDERS[self.provider].model


@dataclass(frozen=True)
class AgentExplanation:
    view: AgentView
    #: IDs of the compiled tools the agent's run policy lets the model see.
    advertised: frozenset[str]
    sizes: tuple[RequestSize, ...]


def tool_definitions(view: AgentView, *, eager: bool = False) -> tuple[ToolDefinition, ...]:
    """The compiled tools a planning catalog of this agent advertises, in catalog order.

    Tools the agent's own run policy hides are left out, as the runtime does (a runtime or run
    policy may hide more). ``eager`` clears every deferred flag.
    """
    return tuple(
        ToolDefinition(
            id=t.tool.id,
            title=t.tool.title,
            description=t.tool.description,
            parameters_json=t.tool.payload.schema_json,
            search=t.tool.search,
            deferred=t.deferred and not eager,
            tags=t.tool.tags,
        )
        for t in view.tools
        if not view.hidden(t.tool)
    )


def _measure(body: bytes, count: bool) -> Measure:
    if not count:
        return Measure(len(body), None, None)
    return Measure(
        len(body),
        tokens.count_tokens(body.decode()),
        tokens.count_tokens(without_deferred(body)),
    )


def _without_stand_in(body: bytes) -> bytes:
    """``body`` without the registry stand-in's definition, serialised as the SDKs' transport
    does (compact, UTF-8: a captured body reads back to the same bytes)."""
    data = json.loads(body)
    names = {_REGISTRY_STAND_IN.id, _REGISTRY_STAND_IN.id.replace(".", "_")}
    tools = [tool for tool in data.get("tools", ()) if tool.get("name") not in names]
    if len(tools) == len(data.get("tools", ())):
        return body
    data["tools"] = tools
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def _left_out(provider: Provider, view: AgentView) -> str | None:
    """What the measured requests of ``view`` leave out of the real ones, said precisely."""
    if not view.registry_reads:
        return None
    parts = []
    if any(read.deferred for read in view.registry_reads):
        if provider == "openai":
            parts.append(
                "designed holds the tool_search tool that the deferred registry tools add "
                "once any resolves (their definitions are not sent before a search)"
            )
        else:
            parts.append(
                "designed holds the tool_search_tool_regex tool that the deferred registry tools "
                "add once any resolves, not their definitions (sent with defer_loading: in "
                "context is unaffected)"
            )
    if any(not read.deferred for read in view.registry_reads):
        parts.append("no column holds the tools of its eager registry reads")
    parts.append("eager leaves out every registry tool, so saved is not shown")
    return "; ".join(parts)


def _size(provider: Provider, view: AgentView, count: bool) -> RequestSize:
    problem = unavailable(provider)
    if problem is not None:
        return RequestSize(provider, None, None, problem)
    designed_tools = tool_definitions(view)
    # Tools a deferred registry read resolves are deferred at run time, so the request carries
    # the adapter's search tool even when no compiled tool is deferred.
    stand_in = any(read.deferred for read in view.registry_reads) and not any(
        tool.deferred for tool in designed_tools
    )
    try:
        designed = first_request(
            provider, (*designed_tools, _REGISTRY_STAND_IN) if stand_in else designed_tools
        )
        eager = first_request(provider, tool_definitions(view, eager=True))
    except ModelError as exc:
        return RequestSize(provider, None, None, f"the adapter refuses the request: {exc}")
    if stand_in:
        designed = _without_stand_in(designed)
    return RequestSize(
        provider,
        _measure(designed, count),
        _measure(eager, count),
        left_out=_left_out(provider, view),
    )


def explain(views: Sequence[AgentView], *, sizes: bool = True) -> list[AgentExplanation]:
    """Explain each agent; ``sizes`` builds and measures the first requests."""
    count = sizes and tokens.unavailable() is None
    explanations = []
    for view in views:
        advertised = frozenset(d.id for d in tool_definitions(view))
        measured = tuple(_size(provider, view, count) for provider in PROVIDERS) if sizes else ()
        explanations.append(AgentExplanation(view, advertised, measured))
    return explanations


# ---------------------------------------------------------------------------------- output


def _loading(deferred: bool) -> str:
    return "deferred" if deferred else "immediate"


def _tool_note(tool: ToolView, advertised: frozenset[str]) -> str:
    notes = []
    if tool.source == "agent" and tool.tool.agent_id:
        notes.append(f"runs agent {tool.tool.agent_id}")
    if tool.source == "mcp" and tool.toolset.mcp_service:
        renamed = tool.tool.server_name != tool.tool.name
        called = f" (calls its tool {tool.tool.server_name})" if renamed else ""
        notes.append(f"MCP server {tool.toolset.mcp_service}{called}")
    if tool.tool.id not in advertised:
        notes.append("hidden by the agent's run policy")
    return "; ".join(notes)


def _tool_json(tool: ToolView, advertised: frozenset[str]) -> dict[str, Any]:
    return {
        "id": tool.tool.id,
        "title": tool.tool.title,
        "source": tool.source,
        "loading": _loading(tool.deferred),
        "deferred": tool.deferred,
        "tags": list(tool.tool.tags),
        "toolset": tool.toolset.registration_name,
        "fingerprint": tool.toolset.fingerprint,
        "advertised": tool.tool.id in advertised,
        "agent_id": tool.tool.agent_id,
        "mcp_server": tool.toolset.mcp_service,
        "mcp_tool": tool.tool.server_name if tool.source == "mcp" else None,
    }


def _policy_json(policy: PolicyModel) -> dict[str, Any]:
    return {
        "max_tool_calls": policy.max_tool_calls,
        "max_consecutive_failed_tool_calls": policy.max_consecutive_failed_tool_calls,
        "model_timeout": policy.model_timeout,
        "tag_clauses": [
            {"allowed_any": list(c.allowed_any), "denied_any": list(c.denied_any)}
            for c in policy.tag_clauses
        ],
    }


def _policy_text(policy: PolicyModel) -> str | None:
    """The agent's default run policy in one line; None when it sets nothing."""
    parts = []
    if policy.max_tool_calls is not None:
        parts.append(f"at most {policy.max_tool_calls} tool calls")
    if policy.max_consecutive_failed_tool_calls is not None:
        parts.append(
            f"stop after {policy.max_consecutive_failed_tool_calls} failed tool calls in a row"
        )
    if policy.model_timeout is not None:
        parts.append(f"each model call within {policy.model_timeout:g} seconds")
    for clause in policy.tag_clauses:
        if clause.allowed_any:
            parts.append(f"only tools tagged {' or '.join(clause.allowed_any)}")
        if clause.denied_any:
            parts.append(f"no tools tagged {' or '.join(clause.denied_any)}")
    return f"  run policy: {'; '.join(parts)}" if parts else None


def _measure_json(measure: Measure | None) -> dict[str, Any] | None:
    if measure is None:
        return None
    return {
        "bytes": measure.bytes,
        "tokens": measure.tokens,
        "tokens_in_context": measure.tokens_in_context,
    }


def render_json(design: str, explanations: Sequence[AgentExplanation]) -> dict[str, Any]:
    """The explanation as JSON-ready data (``agentgen explain --json``)."""
    token_problem = tokens.unavailable()
    return {
        "design": design,
        "request": {
            "prompt": DEFAULT_PROMPT,
            "system": None,
            "max_tokens": DEFAULT_MAX_TOKENS,
            "models": {provider: info.model for provider, info in PROVIDERS.items()},
            "encoding": tokens.ENCODING,
            "tokens_unavailable": token_problem,
        },
        "agents": [
            {
                "id": e.view.agent.id,
                "description": e.view.agent.description,
                "policy": _policy_json(e.view.agent.policy),
                "tools": [_tool_json(t, e.advertised) for t in e.view.tools],
                "toolsets": [
                    {
                        "name": toolset.registration_name,
                        "source": toolset.kind,
                        "fingerprint": toolset.fingerprint,
                    }
                    for toolset in _toolsets(e.view)
                ],
                "registry_sources": [
                    {
                        "registry": read.registry,
                        "toolset": read.toolset,
                        "version": read.version or None,
                        "loading": _loading(read.deferred),
                        "deferred": read.deferred,
                    }
                    for read in e.view.registry_reads
                ],
                "first_request": {
                    size.provider: {
                        "provider": size.label,
                        "model": size.model,
                        "designed": _measure_json(size.designed),
                        "eager": _measure_json(size.eager),
                        "problem": size.problem,
                        "left_out": size.left_out,
                    }
                    for size in e.sizes
                },
            }
            for e in explanations
        ],
    }


def _toolsets(view: AgentView) -> list[Any]:
    seen: dict[str, Any] = {}
    for tool in view.tools:
        seen.setdefault(tool.toolset.registration_name, tool.toolset)
    return list(seen.values())


def _table(rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return lines


def _number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _agent_text(e: AgentExplanation) -> list[str]:
    view = e.view
    deferred = len(view.deferred)
    lines = [
        f"agent {view.agent.id}: {view.agent.description}",
        f"  {len(view.tools)} compiled tool{'s' if len(view.tools) != 1 else ''} "
        f"({len(view.tools) - deferred} immediate, {deferred} deferred), "
        f"{len(view.registry_reads)} registry source{'s' if len(view.registry_reads) != 1 else ''}",
    ]
    policy = _policy_text(view.agent.policy)
    if policy is not None:
        lines.append(policy)
    if view.tools:
        rows = [["tool", "source", "loading", "tags", "toolset", "note"]]
        rows += [
            [
                t.tool.id,
                t.source,
                _loading(t.deferred),
                ",".join(t.tool.tags) or "-",
                t.toolset.registration_name,
                _tool_note(t, e.advertised),
            ]
            for t in view.tools
        ]
        if not any(row[-1] for row in rows[1:]):
            rows = [row[:-1] for row in rows]
        lines += ["", *("  " + line for line in _table(rows))]
        lines += ["", "  toolset fingerprints:"]
        lines += [
            "  " + line
            for line in _table(
                [[f"  {t.registration_name}", t.fingerprint] for t in _toolsets(view)]
            )
        ]
    if view.registry_reads:
        rows = [["registry source", "toolset", "version", "loading"]]
        rows += [
            [
                read.registry,
                read.toolset or "(whole registry)",
                read.version or "any",
                _loading(read.deferred),
            ]
            for read in view.registry_reads
        ]
        lines += ["", *("  " + line for line in _table(rows))]
        lines.append(f"  ({REGISTRY_NOTE})")
    if e.sizes:
        lines += ["", *_sizes_text(e.sizes)]
    return lines


def _sizes_text(sizes: Sequence[RequestSize]) -> list[str]:
    header = [
        "first request",
        "model",
        "designed bytes",
        "tokens",
        "in context",
        "eager bytes",
        "tokens",
        "saved",
    ]
    rows = [header]
    problems = []
    for size in sizes:
        designed, eager = size.designed, size.eager
        if designed is None or eager is None:
            rows.append([size.label, size.model, "-", "-", "-", "-", "-", "-"])
            problems.append(f"  {size.label}: not measured ({size.problem})")
            continue
        if size.left_out is not None:
            problems.append(f"  {size.label}: {size.left_out}")
        saved = "-"
        if size.left_out is None and designed.tokens_in_context is not None and eager.tokens:
            saved = f"{1 - designed.tokens_in_context / eager.tokens:.0%}"
        rows.append(
            [
                size.label,
                size.model,
                _number(designed.bytes),
                _number(designed.tokens),
                _number(designed.tokens_in_context),
                _number(eager.bytes),
                _number(eager.tokens),
                saved,
            ]
        )
    return ["  " + line for line in _table(rows, right=range(2, 8))] + problems


def render_text(explanations: Sequence[AgentExplanation]) -> str:
    """The explanation as plain text, one block per agent, then what the sizes mean."""
    lines: list[str] = []
    for e in explanations:
        if lines:
            lines.append("")
        lines += _agent_text(e)
    if any(e.sizes for e in explanations):
        token_problem = tokens.unavailable()
        lines += [
            "",
            f"First request of a conversation (one user message, {DEFAULT_PROMPT!r}, no system",
            f"prompt, max_tokens {DEFAULT_MAX_TOKENS}), built by the real adapters and captured "
            "offline:",
            "  tokens      o200k (OpenAI's tokenizer; Claude's differs: Anthropic counts are "
            "estimates)"
            if token_problem is None
            else f"  tokens      not counted: {token_problem}",
            "  in context  the designed request without its defer_loading definitions, which "
            "Claude",
            "              keeps out of the model's context until a search finds them (OpenAI "
            "sends none)",
            "  saved       1 - in context / eager tokens",
        ]
    return "\n".join(lines)
