"""Playing recorded provider exchanges through the real SDK clients and the real adapters.

A :class:`Recording` holds a provider's replies in its exact wire shape, each optionally with
the summary of the request it answers (:mod:`~agentgen.runtime.testing.summaries`). Its
:class:`RecordedProvider` answers an SDK client's HTTP requests in process, through an
``httpx2.MockTransport``: nothing reaches the network, yet every request is built and every
reply parsed by the same code as in production. Each reply is validated with the SDK's own
public response type (``openai.types.responses.Response``, ``anthropic.types.Message`` or
``BetaMessage``) before it is served, so a reply that is not in the API's wire shape is caught
here, never passed on half-parsed. A request that does not match its recorded summary, or
that arrives after the recording ran out, gets an HTTP 400 naming the difference (the adapter
then fails the run with it) and is kept in :attr:`RecordedProvider.problems`.

``httpx2`` and the provider SDKs are imported when a recording is played, so importing this
module needs neither.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, get_args

from agentgen.runtime.adapters.errors import ANSWERED_BY_HEADER
from agentgen.runtime.model_client import ModelClient, ModelError, ModelRequest, ModelResponse
from agentgen.runtime.testing.summaries import Provider, summarize

if TYPE_CHECKING:
    import httpx2

__all__ = ["Exchange", "RecordedProvider", "Recording", "RecordingError"]

#: The region recorded Bedrock clients are built for (requests never leave the process).
BEDROCK_REGION = "us-east-1"
#: Credentials recorded clients are built with: SDKs refuse to start without some.
PLACEHOLDER_KEY = "recorded-exchange"

#: The header marking every answer of a player as its own, which the adapters read (an adapter
#: over :meth:`RecordedProvider.client` then says its refusal is the player's, not a provider's).
ANSWERED = {ANSWERED_BY_HEADER: "agentgen's recording player"}

Check = Callable[[int, "httpx2.Request"], list[str]]


class RecordingError(Exception):
    """A recording cannot be read, or a played recording did not match the run."""


@dataclass(frozen=True)
class Exchange:
    """One round trip: the provider's reply and, when given, the summary of the request it
    answers (``None``: any request gets this reply)."""

    response: Mapping[str, Any]
    request: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Recording:
    """A provider's replies, in order, for one conversation."""

    provider: Provider
    exchanges: tuple[Exchange, ...]
    #: The model the conversation was recorded with, and its first user message, if known.
    model: str = ""
    prompt: str = ""
    path: Path | None = None

    @classmethod
    def of(cls, provider: Provider, *replies: Mapping[str, Any], model: str = "") -> Recording:
        """Replies given in code, answering whatever requests arrive, in order."""
        for number, reply in enumerate(replies, start=1):
            _object(reply, f"Recording.of: reply {number}", "the provider's JSON reply")
        return cls(_provider(provider), tuple(Exchange(reply) for reply in replies), model)

    @classmethod
    def load(cls, path: str | os.PathLike[str], provider: Provider | None = None) -> Recording:
        """A recording file: ``{"provider", "model", "prompt", "exchanges": [{"request":
        summary, "response": reply}]}``. ``provider``, when given, must be the file's.

        Its shape is checked here, naming the file and the exchange: a reply that is not a JSON
        object failed the run that played it with a bare ``ValueError``, and a missing key was
        reported as Python's ``KeyError('exchanges')``."""
        file = Path(path)
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RecordingError(f"cannot read the recording {file}: {exc!r}") from exc
        except RecursionError:
            raise RecordingError(
                f"cannot read the recording {file}: its JSON is nested too deeply"
            ) from None
        shape = (
            '{"provider", "model", "prompt", "exchanges": [{"request": summary, "response": '
            "reply}]}"
        )
        _object(data, str(file), f"a recording, {shape}")
        if "provider" not in data or "exchanges" not in data:
            missing = " and ".join(
                f'"{key}"' for key in ("provider", "exchanges") if key not in data
            )
            raise RecordingError(f"{file}: a recording needs {missing}: {shape}")
        try:
            recorded = _provider(data["provider"])
        except RecordingError as exc:
            raise RecordingError(f"{file}: {exc}") from None
        listed = data["exchanges"]
        if not isinstance(listed, list):
            raise RecordingError(
                f'{file}: "exchanges" is a JSON list of {{"request", "response"}}, not '
                f"{_kind(listed)}"
            )
        exchanges: list[Exchange] = []
        for number, exchange in enumerate(listed, start=1):
            where = f"{file}: exchange {number}"
            _object(exchange, where, '{"request": summary, "response": reply}')
            if "response" not in exchange:
                raise RecordingError(f'{where} has no "response" (the provider\'s reply)')
            reply = _object(exchange["response"], f'{where}: "response"', "the provider's reply")
            request = exchange.get("request")
            if request is not None:
                request = _object(request, f'{where}: "request"', "the summary of the request")
            exchanges.append(Exchange(reply, request))
        for key in ("model", "prompt"):
            if not isinstance(data.get(key, ""), str):
                raise RecordingError(f'{file}: "{key}" is text, not {_kind(data[key])}')
        if provider is not None and recorded != provider:
            raise RecordingError(f"{file} is a recording of {recorded}, not of {provider}")
        return cls(recorded, tuple(exchanges), data.get("model", ""), data.get("prompt", ""), file)

    def player(self, *, check: Check | None = None) -> RecordedProvider:
        """A fresh player of this recording; ``check(index, request)`` may list more problems
        with a request (what a test insists on whatever the recording says)."""
        return RecordedProvider(self, check)


def _kind(value: object) -> str:
    """What a JSON value is, for a message: ``a JSON list``, ``a str``..."""
    names = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}
    names.update({int: "number", float: "number"})
    name = names.get(type(value))
    return f"a JSON {name}" if name else f"{type(value).__name__} {value!r:.40}"


def _object(value: object, where: str, what: str) -> dict[str, Any]:
    """``value`` when it is a JSON object (a mapping); a :class:`RecordingError` naming
    ``where`` and ``what`` it should be otherwise."""
    if not isinstance(value, Mapping):
        raise RecordingError(f"{where}: expected {what} as a JSON object, found {_kind(value)}")
    return dict(value)


def _provider(value: object) -> Provider:
    if value not in get_args(Provider):
        raise RecordingError(
            f"unknown provider {value!r}; recordings hold {', '.join(get_args(Provider))}"
        )
    return cast(Provider, value)


@dataclass
class RecordedProvider:
    """Answers an SDK client's HTTP requests from a :class:`Recording`, in order."""

    recording: Recording
    check: Check | None = None
    #: How many exchanges were answered.
    served: int = 0
    #: Everything wrong so far, one message per problem (``request 2: ...``).
    problems: list[str] = field(default_factory=list)
    #: The summary of every request received, in order.
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Every exchange was answered and nothing went wrong."""
        return not self.problems and self.served == len(self.recording.exchanges)

    def assert_finished(self) -> None:
        """Raise :class:`RecordingError` unless the run used exactly the recording."""
        if self.problems:
            raise RecordingError("\n".join(self.problems))
        if self.served != len(self.recording.exchanges):
            raise RecordingError(
                f"the run ended after {self.served} of the {len(self.recording.exchanges)} "
                f"recorded exchanges{self._where()}"
            )

    def _where(self) -> str:
        return f" in {self.recording.path}" if self.recording.path else ""

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        """The ``httpx2.MockTransport`` handler."""
        import httpx2

        exchanges = self.recording.exchanges
        index, number = self.served, self.served + 1
        provider = self.recording.provider
        try:
            actual = summarize(provider, request)
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            # Not a request of the API the recording holds (a GET without a body, another
            # provider's shape): refused like any request the recording does not answer. The
            # exception escaped into the SDK, which failed the call with a bare JSONDecodeError
            # or "Connection error." and left `problems` empty.
            problem = (
                f"request {number} ({request.method} {request.url.path}) is not a request "
                f"this {provider} recording can answer: {type(exc).__name__}: {exc}"
            )
            self.requests.append({"path": request.url.path, "method": request.method})
            self.problems.append(problem)
            return httpx2.Response(
                400,
                json={"error": {"type": "invalid_request_error", "message": problem}},
                headers=ANSWERED,
            )
        self.requests.append(actual)
        problems = [f"request {number}: {p}" for p in (self.check or _none)(index, request)]
        reply: Mapping[str, Any] | None = None
        if index >= len(exchanges):
            problems.append(
                f"request {number} was not recorded: the recording{self._where()} holds "
                f"{len(exchanges)} exchange(s), and the run asked for another model reply. "
                f"{NOT_A_PROVIDER} if the run now makes more model calls on purpose, record "
                f"the conversation again; otherwise find why it did not end. The request:\n"
                f"{_indent(actual)}"
            )
        else:
            expected = exchanges[index].request
            if expected is not None and actual != expected:
                differences = "; ".join(_differences(actual, expected))
                problems.append(
                    f"request {number} does not match the recording{self._where()} (exchange "
                    f"{number}): {differences}. {NOT_A_PROVIDER} if the run's requests changed "
                    'on purpose, record the exchange again (or correct its "request"); '
                    f"otherwise the run changed by mistake.\n  the run sent:\n"
                    f"{_indent(actual)}\n  the recording answers:\n{_indent(expected)}"
                )
            reply = exchanges[index].response
            invalid = _reply_problem(self.recording.provider, request, reply)
            if invalid is not None:
                problems.append(
                    f"reply {number}{self._where()} (exchange {number}) {invalid}"
                    if self.recording.path
                    else f"reply {number} {invalid}"
                )
        if problems or reply is None:
            self.problems.extend(problems)
            message = "; ".join(problems)
            return httpx2.Response(
                400,
                json={"error": {"type": "invalid_request_error", "message": message}},
                headers=ANSWERED,
            )
        self.served += 1
        return httpx2.Response(200, json=dict(reply), headers=ANSWERED)

    def http_client(self) -> httpx2.AsyncClient:
        """An ``httpx2.AsyncClient`` whose requests this player answers; hand it to an SDK
        client (``AsyncOpenAI(http_client=...)``, ``AsyncAnthropic(http_client=...)``)."""
        import httpx2

        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))

    def client(self) -> Any:
        """The provider's SDK client, built as an application builds it, with this player as
        its transport (placeholder credentials; retries off so a refusal fails at once)."""
        provider, http = self.recording.provider, self.http_client()
        if provider == "openai":
            from openai import AsyncOpenAI

            return AsyncOpenAI(
                api_key=PLACEHOLDER_KEY,
                base_url="http://recording.invalid/v1",
                http_client=http,
                max_retries=0,
            )
        if provider == "openai-bedrock":
            import openai.providers
            from openai import AsyncOpenAI

            bedrock = openai.providers.bedrock(
                endpoint="runtime",
                region=BEDROCK_REGION,
                access_key_id=PLACEHOLDER_KEY,
                secret_access_key=PLACEHOLDER_KEY,
            )
            return AsyncOpenAI(provider=bedrock, http_client=http, max_retries=0)
        if provider == "anthropic":
            from anthropic import AsyncAnthropic

            return AsyncAnthropic(
                api_key=PLACEHOLDER_KEY,
                base_url="http://recording.invalid",
                http_client=http,
                max_retries=0,
            )
        from anthropic import AsyncAnthropicBedrock

        return AsyncAnthropicBedrock(
            aws_region=BEDROCK_REGION,
            aws_access_key=PLACEHOLDER_KEY,
            aws_secret_key=PLACEHOLDER_KEY,
            http_client=http,
            max_retries=0,
        )

    def model(self, **options: Any) -> ModelClient:
        """The real adapter for the recording's provider over :meth:`client`; ``options`` go
        to the adapter (``tool_change_models=...`` for Anthropic, ``search_limit=...``).

        The player answers what the recording cannot (a request it does not match, a reply the
        SDK cannot read) with an HTTP 400, which the adapter reports as refused (by the player,
        as its :data:`ANSWERED` header says). The adapter is wrapped so that such a failure
        leads with what the player found: the recording, not the provider, is at fault."""
        # Each adapter is imported only when its provider is played: an OpenAI recording
        # needs no Anthropic SDK (``make demo-registry`` installs only the openai extra).
        adapter: ModelClient
        if self.recording.provider.startswith("openai"):
            from agentgen.runtime.adapters import OpenAIResponsesModel

            adapter = OpenAIResponsesModel(self.client(), **options)
        else:
            from agentgen.runtime.adapters import AnthropicMessagesModel

            adapter = AnthropicMessagesModel(self.client(), **options)
        return _PlayedModel(adapter, self)


class _PlayedModel:
    """An adapter over a :class:`RecordedProvider` whose failures caused by the player name
    the player's problems, not a provider's refusal; everything else is the adapter's."""

    def __init__(self, adapter: ModelClient, player: RecordedProvider) -> None:
        self._adapter = adapter
        self._player = player

    def __getattr__(self, name: str) -> Any:
        # Read from __dict__: an instance made without __init__ (copy.copy, pickle) has no
        # _adapter, and looking it up here again recursed until RecursionError.
        adapter = self.__dict__.get("_adapter")
        if adapter is None:
            raise AttributeError(name)
        return getattr(adapter, name)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        before = len(self._player.problems)
        try:
            return await self._adapter.complete(request)
        except ModelError as exc:
            found = self._player.problems[before:]
            if not found:
                raise
            recording, said = self._player.recording, "; ".join(found)
            named = not recording.path or str(recording.path) in said
            where = "" if named else f" {recording.path}"
            error = ModelError(
                f"the {recording.provider} recording{where} cannot answer this request: {said}",
                status=exc.status,
            )
            error.usage = exc.usage
            raise error from exc


#: What a player's refusal is: an SDK client reports any HTTP 400 as the provider refusing the
#: request, and the words of the body are all the user sees of the player.
NOT_A_PROVIDER = "No provider was asked: the recording answered, and it cannot answer this;"


def _differences(actual: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """What differs between the summary of the request the run sent and the recorded one,
    field by field (a list by its first differing item): two whole summaries side by side left
    the reader to find the one word that changed."""
    found = []
    for key in [*expected, *(k for k in actual if k not in expected)]:
        sent, recorded = actual.get(key), expected.get(key)
        if sent == recorded:
            continue
        if isinstance(sent, list) and isinstance(recorded, list):
            at = next(
                (i for i, (a, b) in enumerate(zip(sent, recorded, strict=False)) if a != b),
                min(len(sent), len(recorded)),
            )
            counts = (
                f" (the run sent {len(sent)} items, the recording has {len(recorded)})"
                if len(sent) != len(recorded)
                else ""
            )
            sent_item = _shown(sent[at]) if at < len(sent) else "nothing"
            recorded_item = _shown(recorded[at]) if at < len(recorded) else "nothing"
            found.append(
                f"{key} item {at + 1}: the run sent {sent_item}, the recording has "
                f"{recorded_item}{counts}"
            )
        elif key not in actual or key not in expected:
            side = "the run sent none" if key not in actual else "the recording has none"
            found.append(f"{key}: {side} ({_shown(recorded if key not in actual else sent)})")
        else:
            shown = f"the run sent {_shown(sent)}, the recording has {_shown(recorded)}"
            found.append(f"{key}: {shown}")
    return found


def _shown(value: Any, width: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


def _none(index: int, request: httpx2.Request) -> list[str]:
    return []


def _indent(value: Any) -> str:
    return "\n".join(
        f"    {line}" for line in json.dumps(value, indent=2, ensure_ascii=False).splitlines()
    )


def _reply_problem(
    provider: Provider, request: httpx2.Request, reply: Mapping[str, Any]
) -> str | None:
    """Why ``reply`` is not a reply of ``provider``'s API to ``request``, as the SDK's public
    response type validates it; None when it is one."""
    from pydantic import ValidationError

    if provider.startswith("openai"):
        from openai.types.responses import Response

        shape: Any = Response
        name = "Responses API reply"
    else:
        body = json.loads(request.content or b"{}")
        beta = request.url.params.get("beta") == "true" or "anthropic_beta" in body
        if beta:
            from anthropic.types.beta import BetaMessage

            shape, name = BetaMessage, "Messages API (beta) reply"
        else:
            from anthropic.types import Message

            shape, name = Message, "Messages API reply"
    try:
        shape.model_validate(dict(reply))
    except ValidationError as exc:
        sdk = "openai" if provider.startswith("openai") else "anthropic"
        return (
            f"is not a valid {name}: the recording holds a reply the {sdk} SDK cannot read, "
            "and no provider was asked; correct that exchange's \"response\" to the API's "
            f"wire shape, or record the exchange again. {exc}"
        )
    return None
