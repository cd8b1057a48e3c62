"""Amazon Bedrock Converse adapter: eager tools only.

Converse has no tool search: its tool specifications cannot be deferred, and Claude's hosted
search is only reachable through InvokeModel (use
:class:`~agentgen.runtime.adapters.anthropic_messages.AnthropicMessagesModel` with
``AsyncAnthropicBedrock`` for that). A request in which the model could need a deferred tool is
therefore refused with :class:`~agentgen.runtime.model_client.ToolSearchUnsupportedError`;
loading the deferred tools eagerly instead would silently change what the model sees and pays
for. Forcing one tool sends just that tool, and tool choice ``none`` turns discovery (and tools)
off, so both work whatever is deferred.

Reasoning the model shows (``reasoningContent`` blocks: DeepSeek-R1 and gpt-oss always reason,
Claude does with thinking) is kept in the reply's metadata under :data:`REASONING_KEY`,
anchored between the message's parts, and replayed verbatim where it was: Converse rejects a
Claude turn whose tool call comes back without the signed reasoning that preceded it. It goes
back only to the model that produced it: Claude's signatures are bound to their model (another
one rejects the block: "Invalid signature in thinking block"), and another model's reasoning is
no part of a conversation a different model continues.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from agentgen.runtime.adapters.anchors import Anchored, describe, interleave, read_anchored
from agentgen.runtime.adapters.errors import (
    CUT_STOPS,
    REFUSED_STOPS,
    HistoryReplayError,
    ToolIdentityError,
    blank,
    broken_reply,
    call_arguments,
    call_under_no_tool_choice,
    cut_off,
    refuse_empty_reply,
    refused_reply,
    request_failure,
)
from agentgen.runtime.adapters.history import (
    REMEDY,
    check_history,
    check_system,
    claim_call_id,
    require_unicode,
)
from agentgen.runtime.adapters.model_switch import planned_model, thinking_refused
from agentgen.runtime.adapters.names import NameMap, shared_table
from agentgen.runtime.adapters.selection import select_tools
from agentgen.runtime.adapters.usage import reported_usage
from agentgen.runtime.messages import Message, Part, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import (
    ModelError,
    ModelRequest,
    ModelResponse,
    ToolDefinition,
    ToolSearchUnsupportedError,
    Usage,
)
from agentgen.runtime.telemetry.spans import model_response
from agentgen.runtime.visible import quoted

__all__ = ["ERROR_STATUS_MODELS", "REASONING_KEY", "REASONING_MODEL_KEY", "BedrockConverseModel"]

_PROVIDER = "bedrock converse"

#: The metadata key of a reply's ``reasoningContent`` blocks::
#:
#:     {"version": 1,
#:      "blocks": [{"at": 0, "block": {"reasoningText": {"text": "...", "signature": "..."}}},
#:                 {"at": 1, "block": {"redactedContent": "<base64>"}}]}
#:
#: ``at`` anchors each block between the message's parts (see :mod:`.anchors`); a block is
#: the ``reasoningContent`` value as Converse gave it, its ``redactedContent`` bytes as
#: base64 text (JSON has no bytes).
REASONING_KEY = "bedrock_converse.reasoning"
#: The metadata key of the model ID the request that produced a message's reasoning gave: the
#: only model the blocks are replayed to. Beside the record, not in it: every agentgen refuses
#: a record of another shape, and a worker of the release before, planning the next turn of a
#: durable run that a newer one planned, failed the run on it. A message stored without it
#: (before it was recorded) goes to the model ModelPlanner recorded it was requested from
#: (:data:`~agentgen.runtime.model_client.USAGE_METADATA_KEY`, the same ID), and without that
#: either, to whichever model, as it did: the model continuing a conversation is most likely
#: the one that produced it, and Claude refuses a tool loop without its own thinking.
REASONING_MODEL_KEY = "bedrock_converse.reasoning_model"
_REASONING_VERSION = 1


#: Model ID patterns (``fnmatch`` syntax) of the models whose tool results may carry
#: ``status: "error"``: botocore documents the field as "only supported by Amazon Nova and
#: Anthropic Claude 3 and 4 models" (Converse rejects it for others). Matched against the model
#: ID as given, and its part after the last ``/`` of an ARN with and without its
#: inference-profile prefix (``us.``, ``eu.``, ``global.``...). An ID that names no model (an
#: application inference profile's or provisioned throughput's ARN) matches none: declare
#: yours with ``BedrockConverseModel(..., error_status_models=[...])``.
ERROR_STATUS_MODELS: tuple[str, ...] = (
    "amazon.nova-*",
    "anthropic.claude-3*",
    "anthropic.claude-opus-4*",
    "anthropic.claude-sonnet-4*",
    "anthropic.claude-haiku-4*",
)


class BedrockConverseModel:
    """A :class:`~agentgen.runtime.model_client.ModelClient` over boto3's ``converse``.

    ``client`` is a boto3 ``bedrock-runtime`` client. boto3 is synchronous, so each call runs in
    a worker thread and does not block the event loop. ``error_status_models`` extends
    :data:`ERROR_STATUS_MODELS`: models whose failed tool results are marked with Converse's
    ``status: "error"``; for every other model a failed result says so in its content instead
    (``{"error": ...}``).
    """

    #: No ranking: Converse cannot search (a request that needs a deferred tool is refused),
    #: so the tools' search documents are never read
    #: (:func:`~agentgen.runtime.search.index.reads_documents`).
    search_ranking: None = None

    def __init__(self, client: Any, *, error_status_models: Iterable[str] = ()) -> None:
        self._client = client
        self.error_status_models = (*ERROR_STATUS_MODELS, *error_status_models)

    def supports_error_status(self, model: str) -> bool:
        """Whether tool results sent to ``model`` may carry ``status: "error"``."""
        name = model.rsplit("/", 1)[-1]
        candidates = (model, name, name.split(".", 1)[-1])
        return any(
            fnmatchcase(candidate, pattern)
            for candidate in candidates
            for pattern in self.error_status_models
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        selection = select_tools(_PROVIDER, request)
        check_system(_PROVIDER, request.model, request.system)
        if selection.discovery:
            raise ToolSearchUnsupportedError(
                f"{_PROVIDER}: model {request.model!r} was given deferred tools "
                f"{sorted(tool.id for tool in selection.deferred)}, but Converse cannot load "
                "tools by search (and they are not loaded eagerly instead). Use the Anthropic "
                "Messages adapter on Bedrock (InvokeModel) or the OpenAI Responses adapter for "
                "tool search, or remove Deferred() for this agent"
            )
        names = NameMap(
            _PROVIDER, (tool.id for tool in request.tools), table=shared_table(request.tools)
        )
        call_ids = check_history(_PROVIDER, request.messages)
        system, messages, used_tools = _encode_history(
            request.messages,
            names,
            error_status=self.supports_error_status(request.model),
            model=request.model,
        )
        if selection.forced is not None:
            advertised: tuple[ToolDefinition, ...] = (selection.forced,)
        elif selection.choice.mode == "none":
            # Converse cannot say "no tool", and rejects tool blocks in a history sent without a
            # tool configuration; only then are tools sent (and any call refused): the eager
            # ones, and the deferred ones the conversation already called (forced calls), which
            # the model has seen. Other deferred tools are never sent.
            advertised = _answering_tools(request, selection.eager) if used_tools else ()
        else:
            advertised = selection.eager
        kwargs: dict[str, Any] = {"modelId": request.model, "messages": messages}
        system_texts = [text for text in (request.system, *system) if text]
        if system_texts:
            kwargs["system"] = [{"text": text} for text in system_texts]
        if request.max_tokens is not None:
            if request.max_tokens < 1:
                raise ModelError(
                    f"{_PROVIDER}: max_tokens must be positive, got {request.max_tokens}"
                )
            kwargs["inferenceConfig"] = {"maxTokens": request.max_tokens}
        if advertised:
            config: dict[str, Any] = {
                "tools": [
                    {
                        "toolSpec": {
                            "name": names.name(tool.id),
                            "description": tool.description or tool.title,
                            "inputSchema": {"json": tool.parameters()},
                        }
                    }
                    for tool in advertised
                ]
            }
            if selection.forced is not None:
                config["toolChoice"] = {"tool": {"name": names.name(selection.forced.id)}}
            elif selection.choice.mode == "any":
                config["toolChoice"] = {"any": {}}
            kwargs["toolConfig"] = config
        try:
            raw = await asyncio.to_thread(self._client.converse, **kwargs)
        except (BotoCoreError, ClientError) as exc:
            failure = request_failure(_PROVIDER, request.model, exc)
            refused = thinking_refused(_PROVIDER, exc, failure, request, REASONING_KEY, _producer)
            raise refused or failure from exc
        metadata = raw.get("ResponseMetadata") if isinstance(raw, dict) else None
        request_id = metadata.get("RequestId") if isinstance(metadata, dict) else None
        model_response("aws.bedrock", response_id=request_id)
        usage = reported_usage(
            raw, "inputTokens", "outputTokens", ("cacheReadInputTokens", "cacheWriteInputTokens")
        )
        callable_ids = None if selection.choice.mode == "none" else {tool.id for tool in advertised}
        try:
            return _decode(raw, usage, request, names, callable_ids, set(call_ids))
        except ModelError as exc:
            # A reply refused once it was generated was billed all the same.
            if exc.usage is None:
                exc.usage = usage
            raise


def _answering_tools(
    request: ModelRequest, eager: tuple[ToolDefinition, ...]
) -> tuple[ToolDefinition, ...]:
    """The tools a tool-choice-``none`` request sends to carry a history with tool blocks: the
    eager ones and the deferred ones the history called. Without any, Converse would reject the
    request (tool blocks need a tool configuration), so it is refused here, saying why."""
    called = {call.tool_id for message in request.messages for call in message.tool_calls()}
    sent = eager + tuple(tool for tool in request.tools if tool.deferred and tool.id in called)
    if not sent:
        raise HistoryReplayError(
            f"{_PROVIDER}: model {request.model!r} was asked to answer without tools (tool "
            "choice none), but the conversation holds tool calls and results, which Converse "
            "only accepts with a tool configuration, and the request offers none of the tools "
            f"called ({sorted(called)}) nor any eager tool; offer the tools the conversation "
            "called, or give the agent an eager tool"
        )
    return sent


def _encode_history(
    history: Sequence[Message], names: NameMap, *, error_status: bool, model: str
) -> tuple[list[str], list[dict[str, Any]], bool]:
    """Return leading system texts, the Converse messages, and whether tools were used.
    ``error_status``: whether the model accepts ``status`` on tool results; ``model``: the
    request's model, the only one a message's recorded reasoning is replayed to."""
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    used_tools = False
    for index, message in enumerate(history):
        what = f"{_PROVIDER}: {describe(index, message)}"
        if message.role == "system":
            if messages:
                raise HistoryReplayError(
                    f"{what} comes after the conversation started, which Converse cannot "
                    "express; put system text in the request's system prompt"
                )
            system.append(message.text)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        allowed = {"assistant": (TextPart, ToolCallPart), "tool": (ToolResultPart,)}
        if any(not isinstance(p, allowed.get(message.role, (TextPart,))) for p in message.parts):
            raise HistoryReplayError(
                f"{what} holds parts its role cannot have (calls belong to assistant messages, "
                "results to tool messages)"
            )
        recorded, reasoning = _read_reasoning(what, message)
        producer = recorded or (_producer(message) if reasoning else None)
        if producer is not None and producer != model:
            # Another model's reasoning: its signatures would be rejected, and it is not this
            # model's. The message's text and calls go as they are.
            reasoning = []
        blocks = [
            {"reasoningContent": _wire_reasoning(element)}
            if isinstance(element, dict)
            else _block(what, element, names, error_status)
            for element in interleave(message.parts, reasoning)
        ]
        content = [block for block in blocks if block is not None]
        if all("reasoningContent" in block for block in content):
            raise HistoryReplayError(
                f"{what} holds no call, result or text but whitespace, and Converse rejects a "
                "message without content (or with blank text): give it text or remove it from "
                "the transcript (empty replies are refused by the adapters)"
            )
        used_tools = used_tools or any("toolUse" in b or "toolResult" in b for b in content)
        if messages and messages[-1]["role"] == role:
            # Converse wants turns to alternate: tool results and the user's words are one turn.
            messages[-1]["content"].extend(content)
        else:
            messages.append({"role": role, "content": content})
    return system, messages, used_tools


def _producer(message: Message) -> str | None:
    """The model that produced an assistant message's reasoning: the one recorded beside it
    (:data:`REASONING_MODEL_KEY`), else the one ModelPlanner requested the reply from."""
    recorded = message.metadata.get(REASONING_MODEL_KEY)
    if isinstance(recorded, str) and recorded:
        return recorded
    return planned_model(message)


def _block(what: str, part: Part, names: NameMap, error_status: bool) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        # Converse rejects blank text; whitespace says nothing, so it is not sent.
        return None if blank(part.text) else {"text": part.text}
    if isinstance(part, ToolCallPart):
        arguments = call_arguments(what, part)
        name = names.add(part.tool_id)
        return {"toolUse": {"toolUseId": part.call_id, "name": name, "input": arguments}}
    assert isinstance(part, ToolResultPart)
    try:
        value = json.loads(part.content)
    except ValueError:
        value = None
    if part.is_error and not error_status and not (isinstance(value, dict) and "error" in value):
        # The model takes no status: the content says the call failed (the runtime's own tool
        # errors already do, as {"error": ...}).
        value = {"error": part.content if value is None else value}
    content = [{"json": value}] if isinstance(value, dict) else [{"text": part.content}]
    result: dict[str, Any] = {"toolUseId": part.call_id, "content": content}
    if part.is_error and error_status:
        result["status"] = "error"
    return {"toolResult": result}


def _read_reasoning(what: str, message: Message) -> tuple[str | None, list[Anchored]]:
    """The model that produced the reasoning stored with a message (:data:`REASONING_MODEL_KEY`;
    None for a message stored before it was recorded) and its blocks (:data:`REASONING_KEY`),
    checked, so that a damaged record is refused naming the message rather than by botocore's
    validation."""
    stored = message.metadata.get(REASONING_KEY)
    if stored is None:
        return None, []
    where = f"{what}: metadata {REASONING_KEY!r}"
    if message.role != "assistant":
        raise HistoryReplayError(f"{where}: only assistant messages carry reasoning")
    if not isinstance(stored, dict):
        raise HistoryReplayError(f"{where} must be an object, got {type(stored).__name__}")
    if stored.get("version") != _REASONING_VERSION:
        raise HistoryReplayError(
            f"{where} must be version {_REASONING_VERSION}, got {stored.get('version')!r}"
        )
    if set(stored) != {"version", "blocks"}:
        raise HistoryReplayError(f"{where} must be an object with exactly 'blocks', 'version'")
    model = message.metadata.get(REASONING_MODEL_KEY)
    if REASONING_MODEL_KEY in message.metadata and (not isinstance(model, str) or not model):
        raise HistoryReplayError(
            f"{what}: metadata {REASONING_MODEL_KEY!r} must be the model ID that produced the "
            f"message's reasoning, got {model!r}"
        )
    blocks = read_anchored(stored["blocks"], "block", len(message.parts), f"{where}.blocks")
    for position, (_, block) in enumerate(blocks):
        _wire_reasoning(block, f"{where}.blocks[{position}].block")
    return model, blocks


def _wire_reasoning(block: dict[str, Any], what: str = "") -> dict[str, Any]:
    """A stored reasoning block as Converse takes it (``redactedContent`` back to bytes);
    with ``what``, a block of another shape is refused naming it."""
    text, redacted = block.get("reasoningText"), block.get("redactedContent")
    if (
        len(block) == 1
        and isinstance(text, dict)
        and "text" in text
        and set(text) <= {"text", "signature"}
        and all(isinstance(value, str) for value in text.values())
    ):
        return {"reasoningText": dict(text)}
    if len(block) == 1 and isinstance(redacted, str):
        try:
            return {"redactedContent": base64.b64decode(redacted, validate=True)}
        except binascii.Error:
            pass
    raise HistoryReplayError(
        f"{what} must be {{'reasoningText': {{'text': str, 'signature'?: str}}}} or "
        f"{{'redactedContent': <base64 text>}}, as the adapter stored it: the transcript was "
        f"changed after it was stored; restore the message, or {REMEDY}"
    )


def _stored_reasoning(value: object, what: str) -> dict[str, Any]:
    """A reply's ``reasoningContent`` as stored: as given, its ``redactedContent`` bytes as
    base64 text. A member this adapter does not know is refused, never dropped (replay needs
    the whole block)."""
    if isinstance(value, dict) and len(value) == 1:
        text, redacted = value.get("reasoningText"), value.get("redactedContent")
        if (
            isinstance(text, dict)
            and isinstance(text.get("text"), str)
            and set(text) <= {"text", "signature"}
        ):
            return {"reasoningText": dict(text)}
        if isinstance(redacted, bytes):
            return {"redactedContent": base64.b64encode(redacted).decode("ascii")}
    shown = sorted(value) if isinstance(value, dict) else type(value).__name__
    raise ModelError(
        f"{what} holds a reasoningContent block ({shown}) that is neither reasoningText "
        "(text, signature) nor redactedContent, which this adapter cannot keep for replay"
    )


def _decode(
    raw: dict[str, Any],
    usage: Usage,
    request: ModelRequest,
    names: NameMap,
    callable_ids: set[str] | None,
    seen: set[str],
) -> ModelResponse:
    """The reply as a message; ``callable_ids`` is None when the request's tool choice was
    ``none`` (any call is refused)."""
    what = f"{_PROVIDER}: reply of model {request.model!r}"
    message = (raw.get("output") or {}).get("message") or {}
    stop_reason = _stop_reason(raw.get("stopReason"), what)
    if stop_reason in REFUSED_STOPS:
        # Checked before the blocks are read: a call the provider did not let through must not
        # run (and its input may be cut short). A reply without one goes on with its stop
        # reason, which the planner does not take for a finished answer.
        held = sum("toolUse" in block for block in message.get("content") or [])
        if held:
            assert stop_reason is not None
            stop = f"stopReason {raw.get('stopReason')!r}"
            raise refused_reply(what, stop, stop_reason, held)
    parts: list[Part] = []
    reasoning: list[Anchored] = []
    for position, block in enumerate(message.get("content") or []):
        # Text that is not valid Unicode could be neither stored nor sent back.
        require_unicode(block, f"{what}: content[{position}]")
        if "text" in block:
            parts.append(TextPart(block["text"]))
        elif "reasoningContent" in block:
            # Kept for replay: Converse wants Claude's signed reasoning back with its calls.
            stored = _stored_reasoning(block["reasoningContent"], f"{what}: content[{position}]")
            reasoning.append((len(parts), stored))
        elif "toolUse" in block:
            use = block["toolUse"]
            if callable_ids is None:
                raise call_under_no_tool_choice(what, use.get("name"))
            tool_id = names.tool_id(use.get("name", ""))
            if tool_id is None or tool_id not in callable_ids:
                raise ToolIdentityError(
                    f"{what} called {quoted(use.get('name'))}, which this request does not let "
                    "it call"
                )
            call_id = claim_call_id(what, use.get("name"), use.get("toolUseId"), "toolUseId", seen)
            seen.add(call_id)
            if not isinstance(use.get("input"), dict):
                # Replay sends calls' arguments back as objects: accepting this would break
                # every later request of the conversation.
                raise broken_reply(
                    f"{what} calls {use.get('name')!r} (toolUseId {quoted(call_id)}) with input of "
                    f"type {type(use.get('input')).__name__}, not a JSON object"
                )
            parts.append(ToolCallPart(call_id, tool_id, json.dumps(use.get("input"))))
        else:
            raise ModelError(
                f"{what} holds a content block with keys {sorted(block)}, which this adapter "
                "does not handle"
            )
    calls = [part for part in parts if isinstance(part, ToolCallPart)]
    if stop_reason in CUT_STOPS and calls:
        assert stop_reason is not None
        raise cut_off(
            what,
            stop_reason,
            request.max_tokens,
            f"while calling {calls[-1].tool_id!r} (toolUseId {quoted(calls[-1].call_id)}, "
            f"stopReason {stop_reason!r}): its input may be cut short, so no call of the reply "
            "is run",
        )
    refuse_empty_reply(what, parts, stop_reason)
    metadata: dict[str, Any] = {}
    if reasoning:
        blocks = [{"at": at, "block": block} for at, block in reasoning]
        metadata[REASONING_KEY] = {"version": _REASONING_VERSION, "blocks": blocks}
        metadata[REASONING_MODEL_KEY] = request.model
    return ModelResponse(Message("assistant", tuple(parts), metadata), usage, stop_reason)


#: Converse's documented stop reasons (botocore's ``StopReason``), as the adapters report them:
#: Anthropic Messages' names where Claude has the same stop, OpenAI's ``content_filter`` for a
#: provider's content filter, and Converse's own name for what only Bedrock does (a guardrail).
_STOP_REASONS = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "model_context_window_exceeded": "model_context_window_exceeded",
    "content_filtered": "content_filter",
    "guardrail_intervened": "guardrail_intervened",
}
#: Stops whose reply Bedrock itself says is broken: it holds no answer to act on.
_MALFORMED = {
    "malformed_model_output": "the model's output could not be parsed",
    "malformed_tool_use": "the model asked for a tool call that could not be parsed",
}


def _stop_reason(value: object, what: str) -> str | None:
    """The stop reason as the adapters report it. One Converse does not document (a newer one)
    is reported as received, as the other adapters report a provider's stop they do not map:
    never as ``end_turn``, which would pass a cut or blocked reply for a finished answer."""
    if value is None:
        return None
    reason = str(value)
    if reason in _MALFORMED:
        raise broken_reply(f"{what} stopped with stopReason {reason!r} ({_MALFORMED[reason]})")
    return _STOP_REASONS.get(reason, reason)
