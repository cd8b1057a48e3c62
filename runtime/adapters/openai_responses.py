"""OpenAI Responses adapter with client-executed tool search, direct or on Amazon Bedrock.

Deferred definitions never appear in the first request: it carries the eager tools and one
``tool_search`` tool whose only argument is a query, and nothing that lists the deferred tools.
When the model searches, the adapter ranks the request's deferred tools with the runtime's
BM25 index and answers with the best few, each in a namespace named after it; the model then
calls them with that namespace. All of it happens inside one :meth:`complete` call: planners
see an ordinary assistant message whose tool calls name canonical tool IDs, and the search
records ride along in its metadata (see :mod:`.openai_search`) for replay, as do the reply's
reasoning items, replayed to the same model only (see :mod:`.openai_reasoning`).

Search rounds share the invocation's output budget: each round may produce at most what the
previous rounds left of ``max_tokens``. Without a positive ``max_tokens`` a request that may
search is refused, since nothing would bound how many rounds the model could take.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal, cast

import openai
import openai.providers
from openai import AsyncOpenAI

from agentgen.runtime.adapters.anchors import Anchored
from agentgen.runtime.adapters.errors import (
    LATER_ATTEMPT,
    REFUSED_STOPS,
    OutputBudgetError,
    ToolIdentityError,
    call_under_no_tool_choice,
    refuse_empty_reply,
    refused_reply,
    request_failure,
)
from agentgen.runtime.adapters.history import check_system, claim_call_id, require_unicode
from agentgen.runtime.adapters.names import BEDROCK_RESERVED_NAMESPACES, NameMap, shared_table
from agentgen.runtime.adapters.openai_reasoning import (
    REASONING_KEY,
    REASONING_MODEL_KEY,
    Reasoning,
    keepable,
)
from agentgen.runtime.adapters.openai_replay import (
    Platform,
    Replay,
    encode_history,
)
from agentgen.runtime.adapters.openai_search import (
    METADATA_KEY,
    SEARCH_TOOL,
    SearchCall,
    SearchMetadata,
    function_tool,
    namespace_tool,
    parse_search_call,
    search_output,
)
from agentgen.runtime.adapters.selection import ToolSelection, select_tools
from agentgen.runtime.adapters.usage import reported_usage
from agentgen.runtime.messages import PHASES, Message, Part, Phase, TextPart, ToolCallPart
from agentgen.runtime.model_client import ModelError, ModelRequest, ModelResponse, Usage
from agentgen.runtime.search.document import search_text
from agentgen.runtime.search.index import (
    DEFAULT_LIMIT,
    DEFAULT_RANKING,
    RANKINGS,
    Ranking,
    SearchEntry,
    SearchIndex,
)
from agentgen.runtime.telemetry.spans import SearchRound, model_response
from agentgen.runtime.visible import quoted

__all__ = ["OpenAIResponsesModel"]

#: The least ``max_output_tokens`` the Responses API takes (it answers 400 below it).
MIN_OUTPUT_TOKENS = 16

#: The DNS labels of Bedrock's endpoints; a VPC interface endpoint puts its own label first
#: (``vpce-0a1b.bedrock-runtime.us-east-1.vpce.amazonaws.com``).
_BEDROCK_LABELS = frozenset({"bedrock-runtime", "bedrock-runtime-fips", "bedrock-mantle"})


def _is_bedrock_host(host: str) -> bool:
    """Whether a base URL's host is one of Bedrock's endpoints (public, FIPS, China or VPC
    interface endpoint): their transcripts need Bedrock's stricter replay checks."""
    labels = host.lower().rstrip(".").split(".")
    return len(labels) > 2 and not _BEDROCK_LABELS.isdisjoint(labels[:2])


class OpenAIResponsesModel:
    """A :class:`~agentgen.runtime.model_client.ModelClient` over ``client.responses.create``.

    ``client`` is an ``openai.AsyncOpenAI``, direct or built with the SDK's Bedrock provider
    (see :meth:`bedrock`). ``platform`` says which: Bedrock transcripts need stricter replay
    checks. Left out, it is read from the client's base URL (``bedrock-runtime``,
    ``bedrock-runtime-fips`` and ``bedrock-mantle`` hosts are Bedrock, VPC interface endpoints
    such as ``vpce-….bedrock-runtime.<region>.vpce.amazonaws.com`` too); pass it when a proxy
    hides the host.
    ``search_limit`` caps the tools one search returns; ``search_ranking`` is ``"fields"``
    (BM25F over the documents' fields, the default) or ``"classic"`` (the spec's plain BM25).
    """

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        platform: Platform | None = None,
        search_limit: int = DEFAULT_LIMIT,
        search_ranking: Ranking = DEFAULT_RANKING,
    ) -> None:
        if search_limit < 1:
            raise ValueError(f"openai: search_limit must be at least 1, got {search_limit}")
        if search_ranking not in RANKINGS:
            raise ValueError(
                f"openai: unknown search_ranking {search_ranking!r}; choose one of "
                f"{', '.join(RANKINGS)}"
            )
        self.search_ranking: Ranking = search_ranking
        self._client = client
        host = client.base_url.host or ""
        self.platform: Platform = platform or ("bedrock" if _is_bedrock_host(host) else "openai")
        self.search_limit = search_limit
        self._provider = "openai on bedrock" if self.platform == "bedrock" else "openai"
        #: The GenAI conventions' name of the provider (``gen_ai.provider.name``).
        self.provider_name = "aws.bedrock" if self.platform == "bedrock" else "openai"

    @classmethod
    def bedrock(
        cls,
        *,
        region: str,
        endpoint: Literal["runtime", "mantle"] = "runtime",
        search_limit: int = DEFAULT_LIMIT,
        search_ranking: Ranking = DEFAULT_RANKING,
        **credentials: Any,
    ) -> OpenAIResponsesModel:
        """An adapter for OpenAI models on Bedrock; ``credentials`` go to the SDK's Bedrock
        provider (``access_key_id``/``secret_access_key``, ``profile``, ``api_key``, ...)."""
        provider = openai.providers.bedrock(endpoint=endpoint, region=region, **credentials)
        return cls(
            AsyncOpenAI(provider=provider),
            platform="bedrock",
            search_limit=search_limit,
            search_ranking=search_ranking,
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        invocation = _Invocation(self, request)
        try:
            return await invocation.run()
        except ModelError as exc:
            # The rounds answered before the failure were billed all the same.
            if invocation.rounds and exc.usage is None:
                exc.usage = invocation.usage
            raise

    async def _create(self, body: Mapping[str, Any], model: str) -> dict[str, Any]:
        try:
            response = await self._client.responses.create(**body)
        except openai.OpenAIError as exc:
            raise request_failure(self._provider, model, exc) from exc
        raw: dict[str, Any] = cast(Any, response).to_dict(mode="json", warnings=False)
        model_response(
            self.provider_name, response_id=raw.get("id"), response_model=raw.get("model")
        )
        return raw


class _Invocation:
    """One :meth:`OpenAIResponsesModel.complete`: the request, its rounds and what they made."""

    def __init__(self, adapter: OpenAIResponsesModel, request: ModelRequest) -> None:
        self.adapter = adapter
        self.request = request
        self.provider = adapter._provider
        self.selection: ToolSelection = select_tools(self.provider, request)
        check_system(self.provider, request.model, request.system)
        self.names = NameMap(
            self.provider,
            (tool.id for tool in request.tools),
            table=shared_table(request.tools),
        )
        deferred = _DeferredIds(self.selection)
        for name, reason in BEDROCK_RESERVED_NAMESPACES.items():
            # Deferred tools become namespaces of their own name when loaded.
            self.names.reject(name, reason, among=deferred)
        self.current = _Loadable(self.names, self.selection)
        self.eager_ids = {tool.id for tool in self.selection.eager}
        self.permitted_ids = self.selection.by_id
        self.replay: Replay = encode_history(
            self.provider,
            request.messages,
            self.names,
            self.current,
            adapter.platform,
            eager=self.eager_ids,
            model=request.model,
        )
        #: Tool-call IDs of this invocation's replies so far (across search rounds).
        self.call_ids: set[str] = set()
        self.parts: list[Part] = []
        self.records: list[Anchored] = []
        #: Reasoning items as received, anchored among the parts and records before them.
        self.reasoning: list[Anchored] = []
        #: The output-item ID of each part (the API pairs reasoning items with them).
        self.ids: list[str | None] = []
        self.namespaces: dict[str, str] = {}
        self.usage = Usage()
        #: Responses received so far (their usage is in ``usage``, even when one fails).
        self.rounds = 0
        #: Whether a message of the reply holds a refusal (reported as stop reason "refusal").
        self.refused = False
        self._index: SearchIndex | None = None

    def body(self) -> dict[str, Any]:
        request, selection = self.request, self.selection
        loaded = self.replay.namespaces
        if selection.forced is not None and self.names.name(selection.forced.id) in loaded:
            name = self.names.name(selection.forced.id)
            raise ModelError(
                f"{self.provider}: the request for model {request.model!r} forces tool "
                f"{selection.forced.id!r}, which a search of this conversation loaded into its "
                f"namespace {name!r}: tool_choice can only name a top-level function, and a call "
                "made without the namespace could not be replayed once the tool is offered "
                "only in it again; let the model call it (tool choice 'auto' or 'any'), or "
                "start a new conversation"
            )
        # A tool a search loaded stays in its namespace (the replayed output declares it): it is
        # not declared again at the top level, so every call to it carries the namespace.
        tools = [
            function_tool(tool, name)
            for tool in selection.eager
            if (name := self.names.name(tool.id)) not in loaded
        ]
        if selection.discovery:
            tools.append(dict(SEARCH_TOOL))
        budget = request.max_tokens
        if budget is not None and 0 < budget < MIN_OUTPUT_TOKENS:
            raise OutputBudgetError(
                f"{self.provider}: the request for model {request.model!r} sets max_tokens to "
                f"{budget}, but the Responses API takes no max_output_tokens below "
                f"{MIN_OUTPUT_TOKENS} (it answers 400 integer_below_min_value); set max_tokens "
                f"(the planner's, e.g. ModelPlanner(max_tokens=...)) to {MIN_OUTPUT_TOKENS} or more"
            )
        if (budget is not None and budget <= 0) or (selection.discovery and budget is None):
            raise OutputBudgetError(
                f"{self.provider}: model {request.model!r} was given deferred tools "
                f"{sorted(tool.id for tool in selection.deferred)} but max_tokens is "
                f"{budget!r}; client-side tool search needs a positive max_tokens, which the "
                "search rounds of one invocation share"
                if selection.discovery
                else f"{self.provider}: max_tokens must be positive, got {budget!r}"
            )
        body: dict[str, Any] = {"model": request.model, "input": list(self.replay.input)}
        if request.system:
            body["instructions"] = request.system
        if tools:
            body["tools"] = tools
        if tools or loaded or self.replay.bare:
            # The choice covers what the replayed search outputs loaded too: with every tool
            # deferred, a final-answer-only request has no top-level tool but loaded ones.
            choice = selection.choice
            if choice.mode == "none":
                body["tool_choice"] = "none"
            elif choice.mode == "any":
                body["tool_choice"] = "required"
            elif selection.forced is not None:
                name = self.names.name(selection.forced.id)
                body["tool_choice"] = {"type": "function", "name": name}
        if budget is not None:
            body["max_output_tokens"] = budget
        return body

    async def run(self) -> ModelResponse:
        body = self.body()
        budget = self.request.max_tokens
        while True:
            raw = await self.adapter._create(body, self.request.model)
            self.rounds += 1
            round_usage = reported_usage(raw)
            self.usage += round_usage
            _check_status(raw, self.provider, self.request.model)
            _refuse_filtered(raw, self.provider, self.request.model)
            _refuse_refused(raw, self.provider, self.request.model)
            said_before = len(self.parts)
            searches, calls, continuation = self._read_output(raw, body)
            outputs = [self._answer(search) for search in searches]
            for output in outputs:
                self.records.append((len(self.parts), output))
            if not searches or calls:
                return self._response(raw, bool(calls), said_before)
            # Only searches: answer them and ask again with what is left of the budget.
            assert budget is not None  # discovery requires it (checked in body())
            what = f"{self.provider}: model {self.request.model!r}"
            if raw.get("status") == "incomplete":
                reason = _incomplete_reason(raw)
                if reason == "max_output_tokens":
                    raise OutputBudgetError(
                        f"{what} hit the output limit while searching for tools; raise "
                        f"max_tokens (now {budget})"
                    )
                cause = "no reason given"
                if reason:
                    cause = f"incomplete: {reason!r}, not the output limit"
                raise ModelError(
                    f"{what}: response {raw.get('id')!r} was cut short while searching for "
                    f"tools ({cause}); the search round holds no complete answer, so the reply "
                    "is refused"
                )
            if not round_usage.complete or round_usage.output_tokens <= 0:
                said = "no usage" if not round_usage.complete else "no output tokens"
                raise ModelError(
                    f"{what} reported {said} for a search round, so the rounds' shared output "
                    "budget cannot be enforced"
                )
            remaining = budget - self.usage.output_tokens
            if remaining < MIN_OUTPUT_TOKENS:
                left = "the whole" if remaining <= 0 else f"all but {remaining} tokens of the"
                raise OutputBudgetError(
                    f"{what}: tool search used {left} output budget of {budget} tokens "
                    "before the model called a tool or answered (the API takes no "
                    f"max_output_tokens below {MIN_OUTPUT_TOKENS}); raise max_tokens"
                )
            for output in outputs:
                self.replay.namespaces.update(tool["name"] for tool in output["tools"])
            body["input"] = [*body["input"], *continuation, *outputs]
            body["max_output_tokens"] = remaining

    def _read_output(
        self, raw: Mapping[str, Any], body: Mapping[str, Any]
    ) -> tuple[list[SearchCall], list[ToolCallPart], list[dict[str, Any]]]:
        """Turn a response's output items into parts and records, in their order.

        Returns the search calls, the business calls and the items to send back if another
        round follows: reasoning items and messages go back as received (the API pairs a
        reasoning item with the item that followed it by that item's ID, and refuses a
        reasoning item "provided without its required following item" otherwise), search
        calls as their checked records, with their IDs too.
        """
        what = f"{self.provider}: response {raw.get('id')!r} of model {self.request.model!r}"
        searches: list[SearchCall] = []
        calls: list[ToolCallPart] = []
        continuation: list[dict[str, Any]] = []
        output = raw.get("output")
        for position, item in enumerate(output if isinstance(output, list) else []):
            require_unicode(item, f"{what}: output[{position}]")
            kind = item.get("type")
            if kind == "tool_search_call":
                _require_complete_call(raw, item, what, body.get("max_output_tokens"))
                search = self._search_call(item, what)
                searches.append(search)
                self.records.append((len(self.parts), search.record))
                continuation.append(search.record)
            elif kind == "function_call":
                _require_complete_call(raw, item, what, body.get("max_output_tokens"))
                part, namespace = self._call(item, what)
                calls.append(part)
                self.parts.append(part)
                self.ids.append(_item_id(item))
                encoded = {
                    "type": "function_call",
                    "call_id": part.call_id,
                    "name": item["name"],
                    "arguments": part.arguments,
                }
                if namespace is not None:
                    self.namespaces[part.call_id] = namespace
                    encoded["namespace"] = namespace
                continuation.append(encoded)
            elif kind == "message":
                text = "".join(_message_text(item, what))
                said = TextPart(text, phase=_phase(item, what))
                self.parts.append(said)
                self.ids.append(_item_id(item))
                self.refused |= _holds_refusal(item)
                continuation.append(dict(item))
            elif kind == "reasoning":
                self.reasoning.append((len(self.parts) + len(self.records), dict(item)))
                continuation.append(item)
            else:
                raise ModelError(
                    f"{what} holds an output item of type {kind!r}, which this adapter does not "
                    "handle (it only offers function tools and client tool search)"
                )
        # Reasoning items the response ended on (cut at the output limit while reasoning)
        # have no following item to be paired with: kept, they would go back to every later
        # request of the model, which refuses a reasoning item "provided without its required
        # following item". They produced nothing of the reply, so they are not kept with it.
        trailing = 0
        for item in reversed(output if isinstance(output, list) else []):
            if item.get("type") != "reasoning":
                break
            trailing += 1
        if trailing:
            del self.reasoning[-trailing:]
        return searches, calls, continuation

    def _search_call(self, item: Mapping[str, Any], what: str) -> SearchCall:
        if not self.selection.discovery:
            raise ToolIdentityError(f"{what} called tool search, which this request did not offer")
        search = parse_search_call(item, what, stored=False)
        if search.call_id in self.replay.search_call_ids:
            raise ModelError(
                f"{what} reuses tool search call ID {search.call_id!r}, which this conversation "
                "already used; call IDs must be unique"
            )
        self.replay.search_call_ids.add(search.call_id)
        return search

    def _call(self, item: Mapping[str, Any], what: str) -> tuple[ToolCallPart, str | None]:
        name, call_id, arguments = item.get("name"), item.get("call_id"), item.get("arguments")
        if not all(isinstance(value, str) for value in (name, call_id, arguments)):
            raise ModelError(f"{what} holds a function_call without name, call_id or arguments")
        assert isinstance(name, str) and isinstance(call_id, str) and isinstance(arguments, str)
        if self.selection.choice.mode == "none":
            raise call_under_no_tool_choice(what, name)
        taken = (self.replay.call_ids, self.call_ids)
        self.call_ids.add(claim_call_id(what, name, call_id, "call ID", *taken))
        tool_id = self.names.tool_id(name)
        if tool_id is None or tool_id not in self.permitted_ids:
            raise ToolIdentityError(
                f"{what} called {quoted(name)}, which is not a tool this request permits"
            )
        namespace = item.get("namespace") or None
        if namespace is not None:
            if namespace != name or name not in self.replay.namespaces:
                raise ToolIdentityError(
                    f"{what} called {tool_id!r} in namespace {quoted(namespace)}, but no search "
                    f"loaded it there (loaded tools are called in the namespace {name!r} their "
                    "search output declared)"
                )
        elif name in self.replay.namespaces or (
            tool_id not in self.eager_ids and name not in self.replay.bare
        ):
            raise ToolIdentityError(
                f"{what} called deferred tool {tool_id!r} without the namespace {name!r} it "
                "was loaded in"
            )
        return ToolCallPart(call_id, tool_id, arguments), namespace

    def _answer(self, search: SearchCall) -> dict[str, Any]:
        if self._index is None:
            self._index = SearchIndex(
                [
                    SearchEntry(
                        tool.id,
                        tool.search,
                        aliases=(self.names.name(tool.id),),
                        text=search_text(tool.id, tool.title, tool.description),
                    )
                    for tool in self.selection.deferred
                ],
                self.adapter.search_ranking,
            )
        ranking = self.adapter.search_ranking
        with SearchRound(search.query, executed_by="client", ranking=ranking) as span:
            hits = self._index.search(search.query, self.adapter.search_limit)
            span.found([hit.tool_id for hit in hits], [(hit.tool_id, hit.score) for hit in hits])
        return search_output(
            search.call_id, [self.current[self.names.name(hit.tool_id)] for hit in hits]
        )

    def _response(self, raw: Mapping[str, Any], called: bool, said_before: int) -> ModelResponse:
        """The reply of the invocation, once ``raw`` (the last round, whose parts follow the
        first ``said_before``) did not only search."""
        metadata: dict[str, Any] = {}
        if self.records or self.namespaces or called:
            # Messages with calls always carry their (sealed) records, even without a search:
            # a message whose records were lost is then recognised on replay.
            what = f"{self.provider}: response {raw.get('id')!r} of model {self.request.model!r}"
            records = SearchMetadata(tuple(self.records), self.namespaces)
            metadata[METADATA_KEY] = records.to_json(self.parts, what)
        thoughts = [item for _, item in self.reasoning]
        if keepable(thoughts):
            what = f"{self.provider}: response {raw.get('id')!r} of model {self.request.model!r}"
            kept = Reasoning(tuple(self.reasoning), tuple(self.ids))
            metadata[REASONING_KEY] = kept.to_json(self.parts, what)
            metadata[REASONING_MODEL_KEY] = self.request.model
        message = Message("assistant", tuple(self.parts), metadata)
        stop_reason = _stop_reason(raw, called)
        if self.refused and stop_reason == "end_turn":
            # Anthropic's name for it: the refusal text is not an answer to the request.
            stop_reason = "refusal"
        # Only reasoning, or nothing: no answer, and a message no other adapter could replay.
        # Only the last round counts: what earlier rounds said came before their searches (on
        # the way), and would otherwise pass for the answer of a round that gave none.
        what = f"{self.provider}: response {raw.get('id')!r} of model {self.request.model!r}"
        refuse_empty_reply(what, self.parts[said_before:], stop_reason)
        return ModelResponse(message, self.usage, stop_reason)


class _DeferredIds:
    """The IDs of the tools left to search, without listing them."""

    def __init__(self, selection: ToolSelection) -> None:
        self._selection = selection

    def __contains__(self, tool_id: object) -> bool:
        return isinstance(tool_id, str) and self._selection.is_deferred(tool_id)


class _Loadable(Mapping[str, dict[str, Any]]):
    """The namespace entry a search would load for each permitted tool, by provider name.

    The first request sends none of them, and a search loads a few: entries are made when
    asked for (by a search answer, or to compare a definition the history loaded), so a
    request's cost does not grow with its deferred tools.
    """

    def __init__(self, names: NameMap, selection: ToolSelection) -> None:
        self._names = names
        self._tools = selection.by_id
        self._made: dict[str, dict[str, Any]] = {}

    def __getitem__(self, name: str) -> dict[str, Any]:
        made = self._made.get(name)
        if made is None:
            tool_id = self._names.tool_id(name)
            tool = self._tools.get(tool_id) if tool_id is not None else None
            if tool is None:
                raise KeyError(name)
            made = self._made[name] = namespace_tool(tool, name)
        return made

    def __iter__(self) -> Iterator[str]:
        return (self._names.name(tool_id) for tool_id in self._tools)

    def __len__(self) -> int:
        return len(self._tools)


#: ``error.code`` of a failed response that a later attempt may get past: the failures the
#: API answers with HTTP 500 and 429 when it reports them before generating.
_TRANSIENT_FAILURES = frozenset({"server_error", "rate_limit_exceeded", "vector_store_timeout"})


def _check_status(raw: Mapping[str, Any], provider: str, model: str) -> None:
    """Refuse a response that did not finish: its output is not an answer of the model. A
    failure on the provider's side (a server error, a rate limit) is transient, as it is when
    answered with an HTTP error; any other (a prompt or image the API refused) is not."""
    status = raw.get("status")
    if status in (None, "completed", "incomplete"):
        return
    error = raw.get("error") or {}
    code = error.get("code")
    detail = f": {code}: {error.get('message')}" if error else ""
    transient = code in _TRANSIENT_FAILURES
    if transient:
        remedy = LATER_ATTEMPT
    elif error:
        remedy = "the provider refused this request: fix what it names"
    else:
        remedy = "the provider gave no error saying why"
    raise ModelError(
        f"{provider}: response {raw.get('id')!r} of model {model!r} has status {status!r}"
        f"{detail}; it holds no answer: {remedy}",
        transient=transient,
    )


def _refuse_filtered(raw: Mapping[str, Any], provider: str, model: str) -> None:
    """Refuse a response the content filter cut (``incomplete_details.reason:
    "content_filter"``) while it held function calls or tool searches, before reading them: a
    call the provider did not let through must not run (nor a search be answered for it), and
    its arguments may be cut short. One without either goes on with its stop reason, which the
    planner does not take for a finished answer."""
    reason = _incomplete_reason(raw) if raw.get("status") == "incomplete" else None
    if reason not in REFUSED_STOPS:
        return
    assert reason is not None
    _refuse_held_work(raw, provider, model, f"incomplete_details.reason {reason!r}", reason)


def _refuse_refused(raw: Mapping[str, Any], provider: str, model: str) -> None:
    """Refuse a response whose message holds a ``refusal`` content part while it also holds
    function calls or tool searches, before reading them, as a Claude reply stopped by
    ``refusal`` is: the model declined the request, so nothing it asked for in the same
    response may run (nor a search be answered for it). One without either goes on with the
    stop reason ``refusal``, which the planner does not take for a finished answer."""
    refusing = [
        item.get("id")
        for item in _output_items(raw)
        if item.get("type") == "message" and _holds_refusal(item)
    ]
    if refusing:
        _refuse_held_work(
            raw,
            provider,
            model,
            f"a refusal content part in message {', '.join(map(quoted, refusing))}",
            "refusal",
            cause="the model declined the request, so what it asked for in the same response "
            "is not its answer",
        )


def _output_items(raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The response's output items (what is not an object is left to the reading to refuse)."""
    output = raw.get("output")
    return (
        [item for item in output if isinstance(item, Mapping)] if isinstance(output, list) else []
    )


def _holds_refusal(item: Mapping[str, Any]) -> bool:
    """Whether an output message holds a ``refusal`` content part."""
    return any(
        isinstance(content, Mapping) and content.get("type") == "refusal"
        for content in item.get("content") or ()
    )


def _refuse_held_work(
    raw: Mapping[str, Any], provider: str, model: str, stop: str, reason: str, cause: str = ""
) -> None:
    """Raise :func:`refused_reply` for a refused or filtered response (``stop`` shows why,
    ``reason`` is one of :data:`REFUSED_STOPS`) when it holds function calls or tool searches,
    none of which may run; one without either goes on."""
    kinds = [item.get("type") for item in _output_items(raw)]
    calls, searches = kinds.count("function_call"), kinds.count("tool_search_call")
    if not (calls or searches):
        return
    unfinished = f"{searches} tool search{'' if searches == 1 else 'es'}" if searches else ""
    raise refused_reply(
        f"{provider}: response {raw.get('id')!r} of model {model!r}",
        stop,
        reason,
        calls,
        unfinished,
        cause=cause,
    )


def _message_text(item: Mapping[str, Any], what: str) -> Iterator[str]:
    """The text of an output message; content of a kind not known here is refused, not
    dropped (the answer would silently lose it)."""
    for content in item.get("content") or []:
        kind = content.get("type")
        if kind == "output_text":
            yield content.get("text") or ""
        elif kind == "refusal":
            yield content.get("refusal") or ""
        else:
            raise ModelError(
                f"{what} holds message {item.get('id')!r} with content of type {kind!r}, which "
                "this adapter does not handle (only output_text and refusal)"
            )


def _item_id(item: Mapping[str, Any]) -> str | None:
    """An output item's ID, which a reasoning item before it is paired with."""
    item_id = item.get("id")
    return item_id if isinstance(item_id, str) and item_id else None


def _incomplete_reason(raw: Mapping[str, Any]) -> str | None:
    reason = (raw.get("incomplete_details") or {}).get("reason")
    return reason if isinstance(reason, str) else None


def _require_complete_call(
    raw: Mapping[str, Any], item: Mapping[str, Any], what: str, budget: object
) -> None:
    """Refuse a function or tool search call the response cut short: its arguments are not
    what the model meant to send (a truncated JSON text), so it can be neither run nor
    replayed; cut by the output limit, the remedy is a larger budget, as for any other cut."""
    status, function = item.get("status"), item.get("type") == "function_call"
    if status == "completed" or (function and status is None):
        return
    if not function and status != "incomplete":
        return  # the search call's parser refuses any other status, naming it
    call = (
        f"a call to {quoted(item.get('name'))}"
        if function
        else f"tool search call {quoted(item.get('call_id'))}"
    )
    reason = _incomplete_reason(raw)
    if reason == "max_output_tokens":
        raise OutputBudgetError(
            f"{what} was cut off by the output limit while writing {call} "
            f"(status {status!r}, its arguments are incomplete); raise max_tokens (this "
            f"round could produce {budget} tokens)"
        )
    status_of = raw.get("status")
    cause = f"incomplete: {reason!r}" if reason else f"the response has status {status_of!r}"
    raise ModelError(
        f"{what} holds {call} with status {status!r} ({cause}): its arguments are "
        "incomplete, so the reply is refused"
    )


def _phase(item: Mapping[str, Any], what: str) -> Phase | None:
    """The message's ``phase`` label, kept so that replay can send it back as the API asks."""
    phase = item.get("phase")
    if phase is None or phase in PHASES:
        return cast(Phase | None, phase)
    raise ModelError(
        f"{what} holds message {item.get('id')!r} with phase {phase!r}, which this adapter "
        f"does not know (only {', '.join(PHASES)})"
    )


def _stop_reason(raw: Mapping[str, Any], called: bool) -> str:
    if raw.get("status") == "incomplete":
        reason = _incomplete_reason(raw)
        return "max_tokens" if reason == "max_output_tokens" else str(reason or "incomplete")
    return "tool_use" if called else "end_turn"
