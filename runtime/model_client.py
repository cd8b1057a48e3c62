"""The model client seam: what planners hand to provider adapters and get back.

Adapters do tool search inside ``complete``: a request may carry deferred definitions, and the
response only ever holds ordinary tool calls. An adapter that cannot search raises
:class:`ToolSearchUnsupportedError` for requests with deferred definitions; it never loads them
eagerly instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from agentgen.runtime.messages import Message
from agentgen.runtime.search.document import SearchDocument
from agentgen.runtime.wire_fields import ADDED

__all__ = [
    "FINISHED_STOP_REASONS",
    "REFUSED_STOP_REASONS",
    "STOP_REASON_METADATA_KEY",
    "USAGE_METADATA_KEY",
    "AdvertisedTools",
    "IncompleteAnswerError",
    "ModelClient",
    "ModelError",
    "ModelRefusalError",
    "ModelRequest",
    "ModelResponse",
    "RefusedAnswerError",
    "ToolChoice",
    "ToolDefinition",
    "ToolSearchUnsupportedError",
    "Usage",
]


#: Where :class:`~agentgen.runtime.agents.model_planner.ModelPlanner` records what each reply
#: cost in the assistant message's metadata: ``{"model": ..., "input_tokens": ...,
#: "output_tokens": ...}``, plus ``"unreported_responses": n`` when n of the responses behind
#: the reply reported no usage (the counts leave their tokens out), so that a stored transcript
#: still says it.
USAGE_METADATA_KEY = "agentgen.usage"

#: Where :class:`~agentgen.runtime.agents.model_planner.ModelPlanner` records why each reply
#: stopped (``ModelResponse.stop_reason``, when the client said), in the assistant message's
#: metadata; a run's outcome reports the final answer's (``RunOutcome.stop_reason``).
STOP_REASON_METADATA_KEY = "agentgen.stop_reason"

#: The stop reasons of a finished answer (``None``: the client did not say). Any other stop of
#: a final answer (cut at ``max_tokens``, refused, filtered, a stop reason a provider added
#: later) is not a finished answer.
FINISHED_STOP_REASONS: frozenset[str | None] = frozenset({"end_turn", "stop_sequence", None})

#: The stop reasons of a reply the provider refused or filtered, as the adapters normalise them:
#: a refusal of any kind is a :class:`ModelRefusalError`.
REFUSED_STOP_REASONS: frozenset[str] = frozenset(
    {"refusal", "content_filter", "guardrail_intervened"}
)


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as advertised to a model for one planning activity."""

    id: str
    title: str
    description: str
    parameters_json: str
    search: SearchDocument
    deferred: bool = False
    tags: tuple[str, ...] = ()

    def parameters(self) -> dict[str, Any]:
        """A fresh copy of the payload JSON Schema."""
        value: dict[str, Any] = json.loads(self.parameters_json)
        return value


T = TypeVar("T")


class AdvertisedTools(tuple[ToolDefinition, ...]):
    """A planning activity's advertised definitions: an immutable sequence that keeps what
    adapters derive from it.

    A catalog can hold thousands of deferred tools, and an adapter needs facts about all of
    them before its first request (which IDs exist, which are deferred, the provider name of
    each). Planning catalogs hand the same object to every activity whose definitions did not
    change, so those facts are computed once per catalog rather than on every request. Any
    other sequence of definitions works as well, at the cost of recomputing them.
    """

    def derived(self, key: Hashable, make: Callable[[AdvertisedTools], T]) -> T:
        """``make(self)``, computed the first time ``key`` is asked for and kept.

        ``make`` must depend on nothing but the definitions (two threads may both run it;
        either result is kept).
        """
        memo: dict[Hashable, Any] = self.__dict__.setdefault("_derived", {})
        try:
            value: T = memo[key]
        except KeyError:
            value = memo.setdefault(key, make(self))
        return value


@dataclass(frozen=True)
class ToolChoice:
    """``auto`` (default), ``none`` (no tools, no discovery), ``any`` (some tool), or ``tool``
    (exactly ``name``, which is then sent immediately even when deferred)."""

    mode: Literal["auto", "none", "any", "tool"] = "auto"
    name: str | None = None


@dataclass(frozen=True)
class Usage:
    """Tokens that provider responses reported, and how many responses reported none.

    Usage adds up across an adapter's rounds, a run's model calls and runs. A response that
    said nothing about its usage is counted in ``unreported`` rather than read as 0 tokens: the
    counts are then a lower bound, and whatever shows them says so (a genuine 0 is a reported
    count). ``Usage()`` is the sum of no responses.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    #: Responses summed here whose usage the provider did not report (their tokens are not in
    #: the counts above).
    unreported: int = field(default=0, metadata=ADDED)

    @classmethod
    def not_reported(cls) -> Usage:
        """The usage of one response that reported none."""
        return cls(unreported=1)

    @property
    def complete(self) -> bool:
        """Whether every response summed here reported its usage."""
        return self.unreported == 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.unreported + other.unreported,
        )


@dataclass(frozen=True)
class ModelRequest:
    model: str
    messages: Sequence[Message]
    tools: Sequence[ToolDefinition] = ()
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    max_tokens: int | None = None
    system: str | None = None


@dataclass(frozen=True)
class ModelResponse:
    """The assistant message (its metadata holds any native search records) and usage.

    A response built without ``usage`` reported none (:meth:`Usage.not_reported`), so that a
    client that cannot tell what a reply cost is never taken for one that cost nothing.
    """

    message: Message
    usage: Usage = field(default_factory=Usage.not_reported)
    stop_reason: str | None = None


class ModelClient(Protocol):
    async def complete(self, request: ModelRequest) -> ModelResponse: ...


class ModelError(Exception):
    """A model adapter failed; the message names the provider and what to do.

    ``status`` is the HTTP status of the provider's error answer, when it gave one.
    ``transient`` says whether the same request may pass when sent again: a rate limit, an
    overloaded or unavailable provider, a connection that broke, a reply that came back broken
    as output (one the provider could not parse, text that is not valid Unicode). Durable
    engines retry those and nothing else (a request the provider refused as invalid, an
    account out of quota, a client that is not configured, a well-formed reply the adapter
    refuses as no answer fail the same way every time).

    ``usage`` is what the responses the failed call had already received cost (an adapter's
    search rounds before a later one failed, or a reply refused once it was generated): they
    were billed, so the run counts them. ``None`` when no response arrived, or the client does
    not say.
    """

    usage: Usage | None = None

    def __init__(
        self, message: str = "", *, status: int | None = None, transient: bool = False
    ) -> None:
        super().__init__(message)
        self.status = status
        self.transient = transient


class ToolSearchUnsupportedError(ModelError):
    """The adapter cannot load deferred tools by search; it refuses rather than loading them
    eagerly (which would change what the model sees without anyone deciding it)."""


class IncompleteAnswerError(ModelError):
    """A final answer (a reply without tool calls) stopped before it was finished: cut at
    ``max_tokens`` or by the context window, refused, or blocked by a content filter or
    guardrail. It is not passed off as the run's answer; the message names the agent, the run,
    the model and the stop reason, and what to do."""


class ModelRefusalError(ModelError):
    """The provider refused or filtered the model's reply: Claude's ``stop_reason`` ``refusal``,
    an OpenAI message with a ``refusal`` content part or a response the content filter cut,
    Converse's ``content_filtered`` or ``guardrail_intervened``. Raised for a reply that held
    tool calls or tool search work (none of it is run) or nothing at all
    (:class:`~agentgen.runtime.adapters.EmptyRefusalError`); a reply of text alone is passed on
    with its stop reason, and the planner refuses it as the run's answer with
    :class:`RefusedAnswerError`, also a subclass.

    A subclass of :class:`ModelError`, so that callers can tell
    "the provider would not answer this conversation" from the other permanent failures without
    reading the message; like them it is permanent (the same conversation is refused the same
    way), and it carries the ``usage`` of the refused reply, which was billed.
    """


class RefusedAnswerError(IncompleteAnswerError, ModelRefusalError):
    """A final answer of text alone that the provider refused or filtered (stop reason
    ``refusal``, ``content_filter`` or ``guardrail_intervened``): the planner does not pass it
    off as the run's answer. Both an :class:`IncompleteAnswerError`, as before, and a
    :class:`ModelRefusalError`, so that one ``except ModelRefusalError`` catches every refusal,
    whether the reply held calls, nothing, or text. ``usage`` is the refused reply's."""
