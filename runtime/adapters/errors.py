"""Typed failures of the model adapters.

Every adapter failure is a :class:`~agentgen.runtime.model_client.ModelError`, so callers that only
care that the model call failed catch one type; the subclasses exist for callers (and tests)
that must tell a configuration mistake from a broken transcript or a misbehaving model. Each
message starts with the provider, names the tool, model or message at fault, and says what to
do about it.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from agentgen.runtime.messages import Part, TextPart, ToolCallPart
from agentgen.runtime.model_client import (
    REFUSED_STOP_REASONS,
    ModelError,
    ModelRefusalError,
    ToolSearchUnsupportedError,
)
from agentgen.runtime.visible import quoted

__all__ = [
    "ANSWERED_BY_HEADER",
    "CUT_STOPS",
    "LATER_ATTEMPT",
    "REFUSED_STOPS",
    "SHORTER_CONVERSATION",
    "BrokenHistoryError",
    "DuplicateCallIdError",
    "EmptyRefusalError",
    "EmptyReplyError",
    "HistoryReplayError",
    "MissingNamespaceHistoryError",
    "MissingSearchRecordsError",
    "ModelError",
    "ModelRefusalError",
    "OutputBudgetError",
    "ProviderNameError",
    "TamperedHistoryError",
    "ToolIdentityError",
    "ToolSearchUnsupportedError",
    "blank",
    "broken_reply",
    "call_under_no_tool_choice",
    "cut_off",
    "refuse_empty_reply",
    "refused_reply",
    "request_failure",
    "sdk_errors",
    "transient_failure",
    "transient_status",
]


class ProviderNameError(ModelError):
    """Tool IDs cannot be sent under distinct, permitted provider-visible names.

    Raised before anything is sent: two tools that a provider would see under one name could
    not be told apart when the model calls one of them.
    """


class ToolIdentityError(ModelError):
    """The model called a tool it was not offered, or under the wrong identity.

    Calls are only ever mapped back to tools the current request permits; a call that does not
    resolve is refused rather than guessed at.
    """


class DuplicateCallIdError(ToolIdentityError):
    """The model's reply reuses a tool-call ID (of the same reply or of the conversation):
    running it could run a call twice or answer it with another call's result."""


class HistoryReplayError(ModelError):
    """A stored transcript cannot be replayed as it is.

    Native search records are validated on every request (pairing, references, record shape);
    the adapter never repairs or drops parts of a transcript to make it acceptable.
    """


class BrokenHistoryError(HistoryReplayError):
    """Calls and results do not pair up in order: a result was dropped, duplicated or moved,
    a call ID repeats, or the conversation does not start with the user."""


class TamperedHistoryError(HistoryReplayError):
    """A message's stored search records do not match the message (its fingerprint differs):
    a call was switched to another tool, or a saved definition was changed, after storing."""


class MissingSearchRecordsError(HistoryReplayError):
    """A call to a tool that only a search could have loaded has no search records: the
    message's metadata was lost, so the exchange cannot be replayed as it happened."""


class MissingNamespaceHistoryError(HistoryReplayError):
    """A transcript holds a call to a dynamically loaded tool without the namespace the
    provider needs to replay it: on Bedrock any such call (older transcripts loaded bare
    functions, and Bedrock drops their namespace and then rejects the call), anywhere a call to
    a tool loaded inside a namespace. The adapter never invents the missing field; only the
    user can decide how to recover: start a new conversation, or remove that whole exchange
    from the transcript."""


class EmptyReplyError(ModelError):
    """The model's reply holds neither a tool call nor any text but whitespace: it is no
    answer, and a transcript that stored it could not be replayed (Claude and Converse reject a
    message without content, and text that is only whitespace). It is refused, never passed on
    as an empty final answer; the message says the stop reason and what to do."""


class EmptyRefusalError(EmptyReplyError, ModelRefusalError):
    """A reply the provider refused or filtered before it held any text or call: both an
    :class:`EmptyReplyError` (no answer, not kept) and a :class:`ModelRefusalError`, so either
    ``except`` catches it."""


class OutputBudgetError(ModelError):
    """A reply ran out of its output token budget (``max_tokens``) where that leaves nothing
    to act on: while searching for tools, or in the middle of a tool call whose arguments may
    be cut short. The remedy is a larger ``max_tokens``, never a retry of the same request."""


def call_arguments(what: str, part: ToolCallPart) -> dict[str, Any]:
    """A historical call's arguments as the JSON object providers replay; anything else in a
    stored transcript is refused (never guessed)."""
    try:
        arguments = json.loads(part.arguments)
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        raise HistoryReplayError(
            f"{what}: call {part.call_id!r} to {part.tool_id!r} has arguments that are not "
            "a JSON object"
        )
    return arguments


#: What to do about a reply the model's context window cut (raising max_tokens cannot help).
SHORTER_CONVERSATION = (
    "shorten the conversation (compact it, or start a new one) or use a model with a larger "
    "context window"
)

#: What the message of a transient failure says to do about it.
LATER_ATTEMPT = "a later attempt may pass (durable runs retry it)"

#: Error codes of an answer that no later attempt gets past whatever its HTTP status: OpenAI
#: answers 429 ``insufficient_quota`` when the account's quota or credit is used up, which
#: lasts until someone changes the plan or billing, unlike a rate limit.
_QUOTA_CODES = frozenset({"insufficient_quota"})

#: HTTP statuses of a provider's error answer that a later attempt can get past besides the
#: server errors: a request timeout, a conflict, a rate limit.
_TRANSIENT_CLIENT_STATUS = frozenset({408, 409, 429})

#: Bedrock's error codes for a request that may pass later (the Converse and InvokeModel
#: errors botocore's service model lists: a rate limit, a model not ready yet, a model timeout,
#: an internal error, an unavailable service), for an answer whose HTTP status was lost.
_TRANSIENT_AWS_CODES = frozenset(
    {
        "ThrottlingException",
        "ModelNotReadyException",
        "ModelTimeoutException",
        "InternalServerException",
        "ServiceUnavailableException",
    }
)

#: The SDKs' exceptions for a request that got no answer (a refused or broken connection, a
#: timeout), by module: an attempt a moment later may get through.
_CONNECTION_ERRORS = {
    "openai": ("APIConnectionError",),
    "anthropic": ("APIConnectionError",),
    "botocore.exceptions": ("ConnectionError", "HTTPClientError"),
    # The HTTP client the SDKs use, unwrapped (a model client of the application's own).
    "httpx2": ("NetworkError", "TimeoutException", "RemoteProtocolError"),
}


#: The SDKs' exceptions for a request that was sent (the others of their families are raised
#: before anything is sent: a client that is not configured).
_API_ERRORS = {"openai": ("APIError",), "anthropic": ("APIError",)}


def transient_status(status: int) -> bool:
    """Whether a provider's error answer with HTTP ``status`` may pass when sent again: a
    timeout, conflict or rate limit, or any server error (Anthropic's 529 overloaded too)."""
    return status in _TRANSIENT_CLIENT_STATUS or status >= 500


@cache
def _installed(names: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[type[Exception], ...]:
    """The named exception classes of the SDKs that are installed (each is an optional extra)."""
    found: list[type[Exception]] = []
    for module_name, classes in names:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found.extend(getattr(module, name) for name in classes)
    return tuple(found)


def sdk_errors(*modules: str) -> tuple[type[Exception], ...]:
    """What the named SDKs raise for a failed request: their base exception classes
    (``anthropic.AnthropicError``, ``openai.OpenAIError``, and botocore's, which the Bedrock
    clients raise while signing a request: a missing profile or credentials)."""
    bases = {
        "openai": ("OpenAIError",),
        "anthropic": ("AnthropicError",),
        "botocore.exceptions": ("BotoCoreError", "ClientError"),
    }
    return _installed(tuple((module, bases[module]) for module in modules))


def _aws_error(exc: BaseException) -> tuple[int | None, str | None]:
    """The HTTP status and error code of botocore's ``ClientError`` (its parsed ``response``)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None, None
    error = response.get("Error")
    code = error.get("Code") if isinstance(error, dict) else None
    metadata = response.get("ResponseMetadata")
    status = metadata.get("HTTPStatusCode") if isinstance(metadata, dict) else None
    return (status if isinstance(status, int) else None), (str(code) if code else None)


def _answer(exc: BaseException) -> tuple[int | None, str | None]:
    """The HTTP status (an error's: 400 or more) and Bedrock error code an SDK's failure
    carries: openai's and anthropic's ``status_code``, botocore's parsed ``response``."""
    status = getattr(exc, "status_code", None)
    code = None
    if not isinstance(status, int):
        status, code = _aws_error(exc)
    if status is not None and status < 400:
        status = None  # an answer the SDK could not read (its response validation), not an error
    return status, code


def _out_of_quota(exc: BaseException) -> bool:
    """Whether an SDK's error answer says the account is out of quota (openai's ``code``)."""
    return getattr(exc, "code", None) in _QUOTA_CODES


def transient_failure(exc: BaseException) -> bool:
    """Whether an SDK's failure (unwrapped) may pass when the request is sent again: an error
    answer whose status or Bedrock code says so (but not an account out of quota, answered
    429 too), or a request that got no answer."""
    status, code = _answer(exc)
    if _out_of_quota(exc):
        return False
    if status is not None or code is not None:
        return (status is not None and transient_status(status)) or code in _TRANSIENT_AWS_CODES
    return isinstance(exc, _installed(tuple(_CONNECTION_ERRORS.items())))


#: The response header by which a stand-in for a provider (agentgen's recording player, a test
#: server of the application's own) names itself in its answers. An SDK client reports any
#: error answer as the provider's, so an answer carrying it is said to be the stand-in's: the
#: stand-in, not a provider, refused the request. No provider sends it.
ANSWERED_BY_HEADER = "agentgen-answered-by"

#: How much of a stand-in's name a message quotes.
_NAME_WIDTH = 120


def _answered_by(exc: BaseException) -> str | None:
    """The name an SDK's error answer carries under :data:`ANSWERED_BY_HEADER`, if any: the
    headers of openai's and anthropic's ``response``, or of botocore's parsed one."""
    response = getattr(exc, "response", None)
    headers: Any = getattr(response, "headers", None)
    if headers is None and isinstance(response, dict):
        metadata = response.get("ResponseMetadata")
        headers = metadata.get("HTTPHeaders") if isinstance(metadata, dict) else None
    getter = getattr(headers, "get", None)
    name = getter(ANSWERED_BY_HEADER) if callable(getter) else None
    if not isinstance(name, str) or not name.strip():
        return None
    name = name.strip()
    return name if len(name) <= _NAME_WIDTH else name[: _NAME_WIDTH - 1] + "…"


def request_failure(provider: str, model: str, exc: BaseException) -> ModelError:
    """The :class:`ModelError` for an SDK's failure to get an answer to a request for ``model``,
    classified: an error answer keeps its HTTP status and is transient when its status (or
    Bedrock's error code) says a later attempt may pass; a request that got no answer is
    transient; anything else (the client could not even send it: a missing profile,
    credentials or region) is a configuration mistake, permanent. An answer a stand-in gave
    (:data:`ANSWERED_BY_HEADER`) says so, rather than that the provider refused the request."""
    status, code = _answer(exc)
    detail = f"{type(exc).__name__}: {exc}"
    if status is not None or code is not None:
        transient = transient_failure(exc)
        answered = f" with HTTP {status}" if status is not None else ""
        stand_in = _answered_by(exc)
        if transient:
            remedy = LATER_ATTEMPT
        elif _out_of_quota(exc):
            remedy = (
                "the account is out of quota, which no later attempt gets past: check its plan "
                "and billing details with the provider"
            )
        elif stand_in is None:
            remedy = "the provider refused this request: fix what it names"
        else:
            remedy = "fix what it names"
        if stand_in is not None:
            remedy = f"answered by {stand_in}, not by a provider: {remedy}"
        return ModelError(
            f"{provider}: the request for model {model!r} failed{answered}: {detail}; {remedy}",
            status=status,
            transient=transient,
        )
    if transient_failure(exc):
        return ModelError(
            f"{provider}: the request for model {model!r} failed without an answer: {detail}; "
            f"{LATER_ATTEMPT}",
            transient=True,
        )
    if isinstance(exc, _installed(tuple(_API_ERRORS.items()))):
        return ModelError(f"{provider}: the request for model {model!r} failed: {detail}")
    return ModelError(
        f"{provider}: the client could not send the request for model {model!r}: {detail}; "
        "check the client's configuration (credentials, profile, region, endpoint)"
    )


#: Stop reasons of a reply cut off in the middle of whatever it was writing: the output limit,
#: or the model's context window (Claude's and Converse's ``model_context_window_exceeded``).
CUT_STOPS = frozenset({"max_tokens", "model_context_window_exceeded"})


def cut_off(what: str, stop_reason: str, max_tokens: int | None, writing: str) -> ModelError:
    """The refusal of a reply (``what``) that ``stop_reason`` (one of :data:`CUT_STOPS`) cut
    off while ``writing`` (a tool call whose input may be cut short, a hosted search without
    its result): at the output limit an :class:`OutputBudgetError` (raise ``max_tokens``);
    cut by the context window, which holds the conversation as well as the reply, a permanent
    :class:`ModelError` whose remedy is a shorter conversation (more ``max_tokens`` cannot
    help there)."""
    if stop_reason == "max_tokens":
        limit = "its output limit" if max_tokens is None else f"max_tokens ({max_tokens})"
        return OutputBudgetError(f"{what} reached {limit} {writing}; raise max_tokens")
    return ModelError(f"{what} filled the model's context window {writing}; {SHORTER_CONVERSATION}")


#: Stop reasons (in the adapters' words) of a reply the provider refused or filtered: what
#: stopped it, and what to do. Each is permanent: the providers say that sending the same
#: conversation again is refused again (Anthropic: "attempting to continue without resetting
#: will result in continued refusals"), and none documents a retry as the remedy.
_REFUSALS = {
    "refusal": (
        "refused",
        "the provider's safety classifiers stopped it, and its content may be partial",
        "remove or rephrase the turn that caused it (or start a new conversation), or ask "
        "another model",
    ),
    "content_filter": (
        "filtered",
        "the provider's content filter blocked it",
        "check the conversation against the provider's content policy and rephrase it",
    ),
    "guardrail_intervened": (
        "filtered",
        "a Bedrock guardrail intervened",
        "check the conversation against the guardrail's configuration",
    ),
}
REFUSED_STOPS = REFUSED_STOP_REASONS  # _REFUSALS says each one's words (a test pins both)


def refused_reply(
    what: str, stop: str, reason: str, calls: int, unfinished: str = "", cause: str = ""
) -> ModelRefusalError:
    """The refusal of a reply (``what`` names provider, reply and model) that the provider
    refused or filtered (``reason``, one of :data:`REFUSED_STOPS`; ``stop`` shows the stop as
    the provider said it) while it held ``calls`` tool calls (and ``unfinished`` tool search
    work, e.g. ``"2 tool searches"``; ``cause`` replaces the reason's usual cause when the
    provider says it otherwise). None of them may run: the provider did not let the reply
    through, so its calls are not ones the model was let make, and their arguments may be cut
    short. Permanent: the same conversation is refused the same way. The adapter sets
    ``usage`` (the reply was billed all the same)."""
    verb, usual_cause, remedy = _REFUSALS[reason]
    cause = cause or usual_cause
    held = [f"{calls} tool call{'' if calls == 1 else 's'}"] if calls else []
    held += [unfinished] if unfinished else []
    return ModelRefusalError(
        f"{what} was {verb} by the provider ({stop}: {cause}); none of what it holds "
        f"({' and '.join(held)}) is run, and the reply is not kept. The same conversation "
        f"would be {verb} again: {remedy}"
    )


def broken_reply(message: str) -> ModelError:
    """The transient :class:`ModelError` for a reply that came back broken as output (the
    provider says it could not parse it, a tool input that is not a JSON object, text that is
    not valid Unicode, a turn paused with hosted work unfinished): nothing in the request
    caused it, and sampling again usually gives a well-formed reply, so a durable engine
    retries it (its cost is counted all the same). ``message`` names what is broken."""
    return ModelError(f"{message}; the reply is refused: {LATER_ATTEMPT}", transient=True)


def call_under_no_tool_choice(what: str, name: object) -> ToolIdentityError:
    """The refusal of a call in a reply to a request whose tool choice was ``none`` (a
    final-answer-only request: the run's tool budget is spent), so that no adapter hands one
    to the run."""
    return ToolIdentityError(
        f"{what} called {quoted(name)}, though the request's tool choice was 'none' (no tool may "
        "be called: a final-answer-only request); the reply is refused"
    )


def blank(text: str) -> bool:
    """Whether ``text`` says nothing (empty or whitespace only): providers reject such text
    blocks, so replay never sends one."""
    return not text.strip()


def refuse_empty_reply(what: str, parts: Sequence[Part], stop_reason: object) -> None:
    """Refuse a reply (``what`` names provider, reply and model) that holds no tool call and
    no text but whitespace, with the remedy its stop reason calls for; one the provider refused
    or filtered is an :class:`EmptyRefusalError`, so that callers can tell it by type."""
    if any(
        isinstance(p, ToolCallPart) or (isinstance(p, TextPart) and not blank(p.text))
        for p in parts
    ):
        return
    error: type[EmptyReplyError] = EmptyReplyError
    if stop_reason == "max_tokens":
        remedy = "the output limit was reached before any text: raise max_tokens"
    elif stop_reason == "model_context_window_exceeded":
        remedy = f"the conversation filled the model's context window: {SHORTER_CONVERSATION}"
    elif stop_reason in ("end_turn", "stop_sequence", None):
        remedy = (
            "the model ended its turn without an answer (Claude does so at times right after "
            "tool results): ask again, or add a user message asking it to go on"
        )
    elif isinstance(stop_reason, str) and stop_reason in _REFUSALS:
        verb, _, fix = _REFUSALS[stop_reason]
        remedy = f"the provider {verb} the reply before any text, and would again: {fix}"
        error = EmptyRefusalError
    else:
        remedy = "the provider stopped the reply before any text: see its stop reason"
    raise error(
        f"{what} holds no tool call and no text (stop reason {stop_reason!r}); it is no "
        f"answer and is not kept: {remedy}"
    )
