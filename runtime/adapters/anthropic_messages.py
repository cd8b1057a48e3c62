"""Anthropic Messages adapter with Claude's hosted tool search, direct or on Bedrock.

Claude searches on the provider's side, so every permitted tool is sent: deferred ones with
``defer_loading: true``, which keeps them out of the model's context until a search finds them,
plus the hosted regex search tool whenever something is deferred or the transcript already
holds searches. The search tool is never deferred, so an agent whose own tools are all
deferred still sends one immediate tool. The prompt-cache marker goes on the search tool (or,
without one, on the last tool), never on a deferred tool, whose definition is not part of the
cached prefix.

Thinking blocks (``thinking``, ``redacted_thinking``) are kept in the reply's metadata and
sent back unchanged, where they were, to later requests of the same model (see
:mod:`.anthropic_thinking`): the API refuses a tool loop's next request without them.

On Bedrock (``AsyncAnthropicBedrock``, i.e. InvokeModel) the search tool's type has no date, the
tool-search beta goes into the body's ``anthropic_beta`` and ``anthropic_version`` is pinned to
the version AWS documents.

Out of scope: continuing a turn that Claude paused (``pause_turn``) after doing only hosted
work. Such a reply is refused with a transient :class:`~agentgen.runtime.model_client.ModelError`
(a durable run asks again) instead of being passed off as a final answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any, Literal

from anthropic import AsyncAnthropic, AsyncAnthropicBedrock

from agentgen.runtime.adapters.anchors import Anchored
from agentgen.runtime.adapters.anthropic_replay import Replay, encode_history, validate_blocks
from agentgen.runtime.adapters.anthropic_search import (
    BEDROCK_ANTHROPIC_VERSION,
    BEDROCK_SEARCH_TOOL_TYPE,
    BEDROCK_TOOL_SEARCH_BETA,
    METADATA_KEY,
    SEARCH_TOOL_NAME,
    SEARCH_TOOL_TYPE,
    TOOL_CHANGES_BETA,
    Definition,
    SearchMetadata,
    change_message,
)
from agentgen.runtime.adapters.anthropic_thinking import (
    THINKING_KEY,
    THINKING_KINDS,
    THINKING_MODEL_KEY,
    refuse_forced_tool_use,
    stored_block,
)
from agentgen.runtime.adapters.anthropic_thinking import to_json as thinking_json
from agentgen.runtime.adapters.errors import (
    CUT_STOPS,
    REFUSED_STOPS,
    ToolIdentityError,
    broken_reply,
    call_under_no_tool_choice,
    cut_off,
    refuse_empty_reply,
    refused_reply,
    request_failure,
    sdk_errors,
)
from agentgen.runtime.adapters.history import check_system, claim_call_id, require_unicode
from agentgen.runtime.adapters.model_switch import thinking_refused
from agentgen.runtime.adapters.names import NameMap, shared_table
from agentgen.runtime.adapters.selection import ToolSelection, select_tools
from agentgen.runtime.adapters.usage import reported_usage
from agentgen.runtime.messages import Message, Part, TextPart, ToolCallPart
from agentgen.runtime.model_client import (
    ModelError,
    ModelRequest,
    ModelResponse,
    ToolSearchUnsupportedError,
    Usage,
)
from agentgen.runtime.telemetry.spans import model_response, searched
from agentgen.runtime.visible import quoted

__all__ = ["TOOL_CHANGE_MODELS", "AnthropicMessagesModel"]

AnthropicPlatform = Literal["anthropic", "bedrock"]

#: Model ID patterns (``fnmatch`` syntax) known to support mid-conversation tool changes.
#: Which models do is not published, so none are assumed; declare yours with
#: ``AnthropicMessagesModel(..., tool_change_models=[...])``.
TOOL_CHANGE_MODELS: tuple[str, ...] = ()

#: What the client raises for a request it could not get answered: the SDK's errors, and on
#: Bedrock botocore's (signing a request reads the AWS profile and credentials).
_SDK_ERRORS = sdk_errors("anthropic", "botocore.exceptions")

_RESERVED = {SEARCH_TOOL_NAME: "is the name of Claude's hosted tool search tool"}


class AnthropicMessagesModel:
    """A :class:`~agentgen.runtime.model_client.ModelClient` over the Messages API.

    ``client`` is an ``anthropic.AsyncAnthropic`` or ``anthropic.AsyncAnthropicBedrock``;
    ``platform`` defaults from its type and is only needed for other Bedrock clients.
    ``default_max_tokens`` is used when a request sets none (the API requires one).
    ``tool_change_models`` extends :data:`TOOL_CHANGE_MODELS`: models allowed to receive
    ``tool_addition``/``tool_removal`` changes, which replaying a conversation needs once a tool
    an earlier search found has left the catalog. ``cache_tools`` places the prompt-cache
    marker on the tools. ``thinking`` is sent as the request's ``thinking`` configuration
    (``{"type": "adaptive"}``, ``{"type": "enabled", "budget_tokens": 2048}``...: which ones a
    model takes is the API's to say); left out, the model's default applies. Extended thinking
    with a tool choice that forces tool use is refused before sending
    (:func:`.anthropic_thinking.refuse_forced_tool_use`). Thinking blocks
    of a reply, asked for or not, are kept and go back to the same model
    (:mod:`.anthropic_thinking`).
    """

    #: No agentgen ranking: Claude searches deferred tools on Anthropic's side (the hosted
    #: regex search), so their search documents are never read, and an agent whose package
    #: another search version generated runs
    #: (:func:`~agentgen.runtime.search.index.reads_documents`).
    search_ranking: None = None

    def __init__(
        self,
        client: AsyncAnthropic | AsyncAnthropicBedrock,
        *,
        platform: AnthropicPlatform | None = None,
        default_max_tokens: int = 4096,
        tool_change_models: Iterable[str] = (),
        cache_tools: bool = True,
        thinking: Mapping[str, Any] | None = None,
    ) -> None:
        if default_max_tokens < 1:
            raise ValueError(
                f"anthropic: default_max_tokens must be positive, got {default_max_tokens}"
            )
        self._client = client
        self.platform: AnthropicPlatform = platform or (
            "bedrock" if isinstance(client, AsyncAnthropicBedrock) else "anthropic"
        )
        self.default_max_tokens = default_max_tokens
        self.tool_change_models = (*TOOL_CHANGE_MODELS, *tool_change_models)
        self.cache_tools = cache_tools
        self.thinking = dict(thinking) if thinking is not None else None
        self._provider = "anthropic on bedrock" if self.platform == "bedrock" else "anthropic"
        #: The GenAI conventions' name of the provider (``gen_ai.provider.name``).
        self.provider_name = "aws.bedrock" if self.platform == "bedrock" else "anthropic"

    def supports_tool_changes(self, model: str) -> bool:
        """Whether ``model`` is declared to accept mid-conversation tool changes."""
        return any(fnmatchcase(model, pattern) for pattern in self.tool_change_models)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        provider = self._provider
        selection = select_tools(provider, request)
        check_system(provider, request.model, request.system)
        names = NameMap(
            provider,
            (tool.id for tool in request.tools),
            _RESERVED,
            table=shared_table(request.tools),
        )
        current = {
            names.name(tool.id): Definition.of(tool, names.name(tool.id)) for tool in selection.all
        }
        replay = encode_history(
            provider,
            request.messages,
            names,
            current,
            frozen=selection.choice.mode == "none",
            eager={tool.id for tool in selection.eager},
            model=request.model,
        )
        body, betas = self._body(request, selection, names, current, replay)
        raw = await self._create(body, betas, request)
        usage = reported_usage(
            raw, cache_keys=("cache_creation_input_tokens", "cache_read_input_tokens")
        )
        try:
            return self._decode(raw, usage, request, selection, names, current, replay)
        except ModelError as exc:
            # A reply refused once it was generated was billed all the same.
            if exc.usage is None:
                exc.usage = usage
            raise

    def _body(
        self,
        request: ModelRequest,
        selection: ToolSelection,
        names: NameMap,
        current: Mapping[str, Definition],
        replay: Replay,
    ) -> tuple[dict[str, Any], list[str]]:
        deferred_ids = {tool.id for tool in selection.deferred}
        tools = [
            current[names.name(tool.id)].param(deferred=tool.id in deferred_ids)
            for tool in request.tools
        ]
        tools.extend(definition.param(deferred=True) for definition in replay.resent)
        betas: list[str] = []
        if deferred_ids or replay.resent or replay.searched:
            bedrock = self.platform == "bedrock"
            search_type = BEDROCK_SEARCH_TOOL_TYPE if bedrock else SEARCH_TOOL_TYPE
            tools.append({"type": search_type, "name": SEARCH_TOOL_NAME})
            if bedrock:
                betas.append(BEDROCK_TOOL_SEARCH_BETA)
        if self.cache_tools and tools:
            # The last entry is the search tool if there is one, else an immediate tool.
            tools[-1]["cache_control"] = {"type": "ephemeral"}
        messages = list(replay.messages)
        if replay.changes:
            messages.append(change_message(replay.changes))
        if replay.changes or replay.changed:
            if not self.supports_tool_changes(request.model):
                changes = ", ".join(f"{c.kind} {c.name!r}" for c in replay.changes) or (
                    "replaying earlier changes"
                )
                raise ToolSearchUnsupportedError(
                    f"{self._provider}: tools found by earlier searches changed availability "
                    f"({changes}), which needs mid-conversation tool changes, and model "
                    f"{request.model!r} is not declared to support them. If it does, pass "
                    f"tool_change_models=[{request.model!r}] to AnthropicMessagesModel; "
                    "otherwise keep those tools in the catalog or start a new conversation"
                )
            betas.append(TOOL_CHANGES_BETA)
        max_tokens = self._max_tokens(request)
        if max_tokens < 1:
            raise ModelError(f"{self._provider}: max_tokens must be positive, got {max_tokens}")
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": max_tokens,
            "messages": messages,
        }
        system = [text for text in (request.system, *replay.system) if text]
        if system:
            body["system"] = "\n\n".join(system)
        if tools:
            refuse_forced_tool_use(self._provider, request.model, self.thinking, selection.choice)
            body["tools"] = tools
            choice = selection.choice
            if choice.mode == "none":
                body["tool_choice"] = {"type": "none"}
            elif choice.mode == "any":
                body["tool_choice"] = {"type": "any"}
            elif selection.forced is not None:
                name = names.name(selection.forced.id)
                body["tool_choice"] = {"type": "tool", "name": name}
        if self.thinking is not None:
            body["thinking"] = dict(self.thinking)
        if self.platform == "bedrock":
            body["extra_body"] = {"anthropic_version": BEDROCK_ANTHROPIC_VERSION}
        return body, betas

    def _max_tokens(self, request: ModelRequest) -> int:
        return self.default_max_tokens if request.max_tokens is None else request.max_tokens

    async def _create(
        self, body: Mapping[str, Any], betas: list[str], request: ModelRequest
    ) -> dict[str, Any]:
        # Both client classes expose the same resources; their union confuses type checkers.
        client: Any = self._client
        try:
            if betas:
                response = await client.beta.messages.create(**body, betas=betas)
            else:
                response = await client.messages.create(**body)
        except _SDK_ERRORS as exc:
            failure = request_failure(self._provider, request.model, exc)
            refused = thinking_refused(
                self._provider,
                exc,
                failure,
                request,
                THINKING_KEY,
                _thinking_model,
                also="; or, on a model that can, turn its thinking off "
                "(AnthropicMessagesModel(thinking={'type': 'disabled'}))",
            )
            raise refused or failure from exc
        raw: dict[str, Any] = response.to_dict(mode="json", warnings=False)
        model_response(
            self.provider_name, response_id=raw.get("id"), response_model=raw.get("model")
        )
        return raw

    def _decode(
        self,
        raw: Mapping[str, Any],
        usage: Usage,
        request: ModelRequest,
        selection: ToolSelection,
        names: NameMap,
        current: Mapping[str, Definition],
        replay: Replay,
    ) -> ModelResponse:
        what = f"{self._provider}: reply {raw.get('id')!r} of model {request.model!r}"
        _refuse_refused(raw, what)
        permitted = {tool.id for tool in selection.all}
        seen = set(replay.call_ids)
        parts: list[Part] = []
        records: list[Anchored] = []
        #: Thinking blocks, anchored among the parts and search blocks before them.
        thoughts: list[Anchored] = []
        choice = selection.choice.mode
        for position, block in enumerate(raw.get("content") or []):
            # Text that is not valid Unicode could be neither stored nor sent back.
            require_unicode(block, f"{what}: content[{position}]")
            kind = block.get("type")
            if kind == "text":
                parts.append(TextPart(block.get("text") or ""))
            elif kind == "tool_use":
                parts.append(self._call(block, what, names, permitted, seen, choice))
            elif kind in ("server_tool_use", "tool_search_tool_result"):
                records.append((len(parts), block))
            elif kind in THINKING_KINDS:
                kept = stored_block(block, f"{what}: content[{position}]")
                thoughts.append((len(parts) + len(records), kept))
            else:
                raise ModelError(
                    f"{what} holds a content block of type {kind!r}, which this adapter does "
                    "not handle"
                )
        referenced, unanswered = validate_blocks(
            [block for _, block in records], what, stored=False
        )
        stop_reason = raw.get("stop_reason")
        if stop_reason in CUT_STOPS:
            _refuse_cut(what, str(stop_reason), self._max_tokens(request), parts, unanswered)
        if stop_reason == "pause_turn" or unanswered:
            raise broken_reply(
                f"{what} paused its turn (stop_reason {stop_reason!r}) with hosted tool search "
                "work in progress, and continuing such pauses is not supported"
            )
        _report_searches(records, names)
        sent = {**current, **{definition.name: definition for definition in replay.resent}}
        definitions = []
        for name in referenced:
            definition = sent.get(name)
            if definition is None:
                raise ModelError(f"{what}: a search found {name!r}, which the request did not send")
            definitions.append(definition)
        refuse_empty_reply(what, parts, stop_reason)
        metadata: dict[str, Any] = {}
        if records or replay.changes or any(isinstance(p, ToolCallPart) for p in parts):
            # Messages with calls always carry their (sealed) records, even without a search:
            # a message whose records were lost is then recognised on replay.
            metadata[METADATA_KEY] = SearchMetadata(
                tuple(records), tuple(definitions), replay.changes
            ).to_json(parts)
        if thoughts:
            metadata[THINKING_KEY] = thinking_json(thoughts, parts, what)
            metadata[THINKING_MODEL_KEY] = request.model
        return ModelResponse(
            Message("assistant", tuple(parts), metadata),
            usage,
            str(stop_reason) if stop_reason is not None else None,
        )

    def _call(
        self,
        block: Mapping[str, Any],
        what: str,
        names: NameMap,
        permitted: set[str],
        seen: set[str],
        choice: str,
    ) -> ToolCallPart:
        name, call_id, arguments = block.get("name"), block.get("id"), block.get("input")
        if not isinstance(name, str) or not isinstance(call_id, str):
            raise ModelError(f"{what} holds a tool_use block without name or id")
        if choice == "none":
            raise call_under_no_tool_choice(what, name)
        seen.add(claim_call_id(what, name, call_id, "tool_use ID", seen))
        tool_id = names.tool_id(name)
        if tool_id is None or tool_id not in permitted:
            raise ToolIdentityError(
                f"{what} called {quoted(name)}, which is not a tool this request permits"
            )
        if arguments is not None and not isinstance(arguments, Mapping):
            # Replay sends calls' arguments back as objects: accepting this would break every
            # later request of the conversation.
            raise broken_reply(
                f"{what} calls {name!r} (tool_use {quoted(call_id)}) with input of type "
                f"{type(arguments).__name__}, not a JSON object"
            )
        return ToolCallPart(
            call_id, tool_id, json.dumps(arguments if arguments is not None else {})
        )


def _thinking_model(message: Message) -> str | None:
    """The model that produced an assistant message's thinking, as recorded beside it."""
    model = message.metadata.get(THINKING_MODEL_KEY)
    return model if isinstance(model, str) and model else None


def _refuse_refused(raw: Mapping[str, Any], what: str) -> None:
    """Refuse a reply Claude's safety classifiers stopped (``stop_reason: "refusal"``) while it
    held tool calls or an unanswered hosted search, before reading them: its content may be
    partial, and none of it may run. Without either it goes on with its stop reason, which the
    planner does not take for a finished answer."""
    stop_reason = raw.get("stop_reason")
    if stop_reason not in REFUSED_STOPS:
        return
    blocks = [block for block in raw.get("content") or [] if isinstance(block, Mapping)]
    calls = sum(block.get("type") == "tool_use" for block in blocks)
    answered = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_search_tool_result"}
    searching = [
        block.get("id")
        for block in blocks
        if block.get("type") == "server_tool_use" and block.get("id") not in answered
    ]
    if calls or searching:
        unfinished = ""
        if searching:
            unfinished = f"unanswered hosted tool search {', '.join(map(repr, searching))}"
        raise refused_reply(
            what, f"stop_reason {stop_reason!r}", str(stop_reason), calls, unfinished
        )


def _refuse_cut(
    what: str, stop_reason: str, max_tokens: int, parts: list[Part], unanswered: list[str]
) -> None:
    """Refuse a reply cut off (at ``max_tokens``, or by the context window) where that leaves
    nothing to act on: a hosted search without its result, or a tool call whose input may have
    been cut short (the last call is the one being written; running it could act on half its
    arguments)."""
    if unanswered:
        writing = (
            f"in the middle of a hosted tool search (server_tool_use {unanswered} has no result)"
        )
        raise cut_off(what, stop_reason, max_tokens, writing)
    calls = [part for part in parts if isinstance(part, ToolCallPart)]
    if calls:
        raise cut_off(
            what,
            stop_reason,
            max_tokens,
            f"while calling {calls[-1].tool_id!r} (tool_use {quoted(calls[-1].call_id)}, "
            f"stop_reason {stop_reason!r}): its input may be cut short, so no call of the reply "
            "is run",
        )


def _report_searches(records: list[Anchored], names: NameMap) -> None:
    """Claude's hosted searches of one reply, as search rounds of the model call (already
    validated: each result answers a search of the same reply)."""
    queries: dict[str, str] = {}
    for _, block in records:
        if block.get("type") == "server_tool_use":
            given = block.get("input") or {}
            queries[str(block.get("id"))] = str(given.get("pattern", given.get("query", "")))
            continue
        content = block.get("content") or {}
        error = None
        if content.get("type") == "tool_search_tool_result_error":
            error = str(content.get("error_code") or "error")
        loaded = [
            names.tool_id(str(ref.get("tool_name"))) or str(ref.get("tool_name"))
            for ref in content.get("tool_references") or ()
        ]
        query = queries.get(str(block.get("tool_use_id")), "")
        searched(query, loaded, executed_by="provider", error=error)
