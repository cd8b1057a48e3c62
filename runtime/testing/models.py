"""Model clients for tests: scripted turns, or a function that answers each request.

They stand where a provider adapter stands (``rt.register_model(id, model)``) and behave like a
provider with tool search: the model sees the request's immediate tools, plus the deferred ones
it loaded by searching (the BM25 search the OpenAI Responses adapter runs, over the same search
documents). Calling a tool it cannot see, or one the request does not offer at all (hidden by
a run policy, say), fails the test with :class:`ScriptError`, so a test passes only when deferred
tools really are found by search and permitted tools really are offered.
"""

from __future__ import annotations

import difflib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgen.runtime.messages import Message, Part, TextPart, ToolCallPart
from agentgen.runtime.model_client import ModelRequest, ModelResponse, ToolDefinition, Usage
from agentgen.runtime.search.index import DEFAULT_RANKING, SearchEntry, SearchIndex
from agentgen.runtime.telemetry.spans import SearchRound
from agentgen.runtime.trace.events import TESTING_SEARCH_KEY

__all__ = [
    "METADATA_KEY",
    "Answer",
    "Call",
    "FunctionModel",
    "ScriptError",
    "ScriptedModel",
    "Search",
    "Step",
    "Turn",
]

#: Where a response's searches are recorded in the assistant message's metadata: a list of
#: ``{"query": ..., "loaded": [tool IDs]}``.
METADATA_KEY = TESTING_SEARCH_KEY


class ScriptError(AssertionError):
    """The model was asked for something its script cannot answer: a call to a tool it cannot
    see, or a turn after the script ran out. An ``AssertionError``, so tests report it as a
    failure with the message."""


@dataclass(frozen=True)
class Search:
    """A tool search before the next turn: loads the deferred tools BM25 ranks for ``query``
    (at most ``limit``), as the OpenAI Responses adapter's client-side search does."""

    query: str
    limit: int = 5

    def __post_init__(self) -> None:
        # Checked when the script is written: a wrong value failed deep inside a run, or (a
        # limit of 0) silently loaded nothing, so the test failed for another reason.
        if not isinstance(self.query, str):
            raise TypeError(f"Search(query) takes the words to search with, got {self.query!r}")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            # A whole number below 1 is a wrong value; anything else ("5", 2.5) a wrong type.
            raise (ValueError if type(self.limit) is int else TypeError)(
                f"Search({self.query!r}, limit={self.limit!r}): the limit is how many tools the "
                "search loads at most, a whole number of at least 1"
            )


@dataclass(frozen=True)
class Call:
    """A call of ``tool_id`` with ``arguments`` (a JSON object, or its JSON text)."""

    tool_id: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    call_id: str = ""

    def __post_init__(self) -> None:
        # Checked when the script is written, naming the call: a bare TypeError from json
        # in the middle of a run named neither.
        if not isinstance(self.tool_id, str) or not self.tool_id:
            raise (ValueError if isinstance(self.tool_id, str) else TypeError)(
                f"Call(tool_id) takes a tool ID such as 'records.lookup', got {self.tool_id!r}"
            )
        if not isinstance(self.arguments, str | Mapping):
            raise TypeError(
                f"Call({self.tool_id!r}): arguments are a JSON object (a dict) or its JSON text, "
                f"not {type(self.arguments).__name__}"
            )
        try:
            self.json()
        except (TypeError, ValueError) as exc:  # a value JSON has no type for; a cycle
            raise type(exc)(f"Call({self.tool_id!r}): arguments are not JSON: {exc}") from None

    def json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments))


@dataclass(frozen=True)
class Answer:
    """A turn that answers with ``text`` and calls no tool."""

    text: str


@dataclass(frozen=True)
class Turn:
    """One model response: searches first, then ``text`` and ``calls`` (parallel calls when
    there are several). A turn without calls is a final answer."""

    text: str = ""
    calls: Sequence[Call] = ()
    searches: Sequence[str] = ()

    def __post_init__(self) -> None:
        # A string is a sequence too: Turn(searches="weather") ran a search for each letter,
        # and Turn(calls=Call(...)) failed mid-run with "'Call' object is not iterable".
        if not isinstance(self.text, str):
            raise TypeError(f"Turn(text=...) takes a str, got {type(self.text).__name__}")
        if isinstance(self.calls, Call | str | Mapping) or not isinstance(self.calls, Sequence):
            raise TypeError(
                f"Turn(calls=...) takes a list of Call(...), got {self.calls!r}; write "
                "calls=[Call(...)]"
            )
        for call in self.calls:
            if not isinstance(call, Call):
                raise TypeError(f"Turn(calls=...) holds Call(...) values, got {call!r}")
        if isinstance(self.searches, str) or not isinstance(self.searches, Sequence):
            raise TypeError(
                f"Turn(searches=...) takes a list of queries, got {self.searches!r}; write "
                f"searches=[{self.searches!r}] for one search"
            )
        for query in self.searches:
            if not isinstance(query, str):
                raise TypeError(f"Turn(searches=...) holds queries (str), got {query!r}")


#: What a script holds: turns, or their short forms (a :class:`Search` joins the next turn, a
#: :class:`Call` or a list of them is a turn of calls, an :class:`Answer` or a ``str`` a turn of
#: text).
Step = Turn | Search | Call | Answer | str | Sequence[Call]
Reply = Turn | Call | Answer | str | Sequence[Call]


#: What a turn may be, for the messages that refuse something else.
REPLIES = "a Turn(...), a Call(...), a list of Call(...), an Answer(...) or a str"


def _turn(
    reply: Reply, searches: Sequence[Search] = (), where: str = "a turn"
) -> tuple[Turn, list[Search]]:
    """The turn ``reply`` stands for; ``where`` names it in the ``TypeError`` that refuses a
    reply of another type (``ScriptedModel: step 3``)."""
    extra = list(searches)
    if isinstance(reply, Turn):
        return reply, [*extra, *(Search(q) for q in reply.searches)]
    if isinstance(reply, str):
        return Turn(text=reply), extra
    if isinstance(reply, Answer):
        return Turn(text=reply.text), extra
    if isinstance(reply, Call):
        return Turn(calls=(reply,)), extra
    if isinstance(reply, Search):
        raise TypeError(
            f"{where} is a Search(...) alone: a search runs before a turn; return "
            "Turn(searches=[...], calls=[...]) to search and then call"
        )
    if isinstance(reply, Mapping) or not isinstance(reply, Sequence):
        raise TypeError(f"{where} is {reply!r}, not {REPLIES}")
    calls = tuple(reply)
    if not calls:
        raise TypeError(
            f"{where} is an empty list of calls; a final answer is a str or Answer(...)"
        )
    checked: list[Call] = []
    for call in calls:
        if not isinstance(call, Call):
            raise TypeError(
                f"{where}: a turn of calls holds Call(...) values, got {type(call).__name__}"
            )
        checked.append(call)
    return Turn(calls=checked), extra


class _SearchingModel:
    """What both test models share: what the model has loaded, and turning a turn into the
    response a provider adapter would return."""

    def __init__(self, usage: Usage | None) -> None:
        self.usage = usage or Usage(10, 5)
        #: Every request received, in order.
        self.requests: list[ModelRequest] = []
        #: Every search: (query, the tool IDs it loaded).
        self.searches: list[tuple[str, list[str]]] = []
        #: Deferred tool IDs the model loaded by searching, over all its requests. What one
        #: request can call is what the searches of its own conversation loaded (recorded in
        #: its messages), as with a provider: another conversation's searches load nothing.
        self.loaded: set[str] = set()
        self._calls = 0

    def visible(self, tools: Sequence[ToolDefinition], loaded: set[str]) -> set[str]:
        """The tools of a request the model can call: immediate ones and ``loaded`` ones."""
        offered = {t.id for t in tools}
        return {t.id for t in tools if not t.deferred} | (loaded & offered)

    def respond(
        self, request: ModelRequest, turn: Turn, searches: Sequence[Search], number: int
    ) -> ModelResponse:
        model = type(self).__name__
        if request.tool_choice.mode == "none" and (turn.calls or searches):
            asked = f"calls {turn.calls[0].tool_id!r}" if turn.calls else "searches for tools"
            raise ScriptError(
                f"{model}: turn {number} {asked}, but the request's tool choice is 'none' (a "
                "final-answer-only activity: the run's tool-call budget or failure limit is "
                "spent), which a provider answers with text only; script an answer for it"
            )
        records = [self._search(request, s) for s in searches]
        loaded = _loaded_by(request.messages)
        for record in records:
            loaded.update(record["loaded"])
        visible = self.visible(request.tools, loaded)
        offered = {t.id for t in request.tools}
        parts: list[Part] = [TextPart(turn.text)] if turn.text or not turn.calls else []
        for call in turn.calls:
            if call.tool_id not in offered:
                close = difflib.get_close_matches(call.tool_id, sorted(offered), n=1)
                guess = f"did you mean {close[0]!r}? Or is" if close else "is"
                raise ScriptError(
                    f"{model}: turn {number} calls {call.tool_id!r}, which this request does "
                    f"not offer (its tools: {', '.join(sorted(offered)) or 'none'}); {guess} "
                    "it hidden by a run policy, or not used by the agent?"
                )
            if call.tool_id not in visible:
                searched = "; ".join(
                    f"{q!r} → {', '.join(ids) or 'nothing'}" for q, ids in self.searches
                )
                raise ScriptError(
                    f"{model}: turn {number} calls {call.tool_id!r}, which the model cannot see: "
                    "it is deferred and no search loaded it in this conversation (the model's "
                    f"searches: {searched or 'none'})"
                    "; add a Search(...) that finds it before the call"
                )
            self._calls += 1
            parts.append(
                ToolCallPart(call.call_id or f"call_{self._calls}", call.tool_id, call.json())
            )
        metadata = {METADATA_KEY: records} if records else {}
        stop = "tool_use" if turn.calls else "end_turn"
        return ModelResponse(Message("assistant", tuple(parts), metadata), self.usage, stop)

    def _search(self, request: ModelRequest, search: Search) -> dict[str, Any]:
        deferred = [t for t in request.tools if t.deferred]
        with SearchRound(search.query, executed_by="client", ranking=DEFAULT_RANKING) as span:
            index = SearchIndex([SearchEntry(t.id, t.search) for t in deferred])
            ranked = index.search(search.query, search.limit)
            hits = [hit.tool_id for hit in ranked]
            span.found(hits, [(hit.tool_id, hit.score) for hit in ranked])
        self.loaded.update(hits)
        self.searches.append((search.query, hits))
        return {"query": search.query, "loaded": hits}


def _loaded_by(messages: Sequence[Message]) -> set[str]:
    """The deferred tools the searches recorded in ``messages`` loaded: what the conversation
    the request continues has found (a compacted one, only what its kept messages found)."""
    loaded: set[str] = set()
    for message in messages:
        records = message.metadata.get(METADATA_KEY)
        if not isinstance(records, list):
            continue
        for record in records:
            hits = record.get("loaded") if isinstance(record, Mapping) else None
            if isinstance(hits, list):
                loaded.update(hit for hit in hits if isinstance(hit, str))
    return loaded


class ScriptedModel(_SearchingModel):
    """A model client that plays ``script`` one turn per request.

    ``ScriptedModel([Search("weather"), Call("weather.forecast", {"city": "Tokyo"}),
    "It is sunny."])`` searches, calls the forecast, then answers. :attr:`requests` keeps what
    each request offered; :attr:`finished` says whether every step was played.
    """

    def __init__(self, script: Sequence[Step], *, usage: Usage | None = None) -> None:
        super().__init__(usage)
        if isinstance(script, str | Mapping) or not isinstance(script, Sequence):
            # A str is a sequence too: ScriptedModel("done") played one letter per turn.
            raise TypeError(
                f"ScriptedModel(script) takes a list of steps, got {script!r}; write "
                f"ScriptedModel([{script!r}]) for a script of one step"
            )
        for index, step in enumerate(script):
            if not isinstance(step, Search):
                _turn(step, where=f"ScriptedModel: step {index} of the script")
        self._steps: list[Step] = list(script)

    @property
    def finished(self) -> bool:
        """True when every step of the script was played."""
        return not self._steps

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        number = len(self.requests)
        searches: list[Search] = []
        while self._steps and isinstance(self._steps[0], Search):
            step = self._steps.pop(0)
            assert isinstance(step, Search)
            searches.append(step)
        if not self._steps:
            raise ScriptError(
                f"ScriptedModel: request {number} arrived after the script ran out (the run "
                "asked the model once more than scripted: did a tool call fail, or does the "
                "script miss the final answer?)"
            )
        step = self._steps.pop(0)
        turn, searches = _turn(step, searches)  # type: ignore[arg-type]
        return self.respond(request, turn, searches, number)


Function = Callable[[ModelRequest], Reply | Awaitable[Reply]]


class FunctionModel(_SearchingModel):
    """A model client that asks ``function`` for each turn.

    ``function(request)`` (plain or ``async``) returns a :class:`Turn`, a :class:`Call`, a list
    of calls, an :class:`Answer` or a ``str``; it sees everything the request carries (messages,
    tools with their ``deferred`` flags, tool choice). Turns obey the same visibility rules as
    :class:`ScriptedModel`: a deferred tool must be searched for (``Turn(searches=[...])``)
    before it is called.
    """

    def __init__(self, function: Function, *, usage: Usage | None = None) -> None:
        super().__init__(usage)
        if not callable(function):
            # Refused here: it failed at the run's first request ('str' object is not callable).
            raise TypeError(
                f"FunctionModel(function) takes a function of the request, got {function!r}; "
                "for replies scripted in advance use ScriptedModel([...])"
            )
        self.function = function

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        reply = self.function(request)
        if inspect.isawaitable(reply):
            reply = await reply
        number = len(self.requests)
        turn, searches = _turn(reply, where=f"FunctionModel: the reply to request {number}")
        return self.respond(request, turn, searches, number)
