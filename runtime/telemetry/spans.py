"""What the runtime reports as a run goes: one small handle per kind of operation.

Each handle is a context manager around one operation (a run, a planning activity, a model
call, a tool search round, a tool execution, a confirmation, a registry request): it opens the
span, records the metrics when the operation ends, and logs through ``logging`` under
``agentgen.*``. Call sites stay one ``with`` and one call that says how the operation ended.

With telemetry disabled (``Telemetry(enabled=False)``) a handle does nothing at all. Without
a recording provider (no OpenTelemetry SDK installed: the API's defaults) it starts no span
and records no metric, only logs; attributes that take work to compute (search hits, catalog
counts, payloads) are computed only for a recording span.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from dataclasses import KW_ONLY, dataclass, field
from types import TracebackType
from typing import Any, ClassVar

import opentelemetry.metrics._internal as _metrics_api
import opentelemetry.trace as _trace_api
from opentelemetry.environment_variables import (
    OTEL_PYTHON_METER_PROVIDER,
    OTEL_PYTHON_TRACER_PROVIDER,
)
from opentelemetry.metrics import NoOpMeterProvider, get_meter_provider
from opentelemetry.trace import (
    NoOpTracerProvider,
    ProxyTracerProvider,
    Span,
    SpanKind,
    Status,
    StatusCode,
    get_tracer_provider,
)
from opentelemetry.util.types import AttributeValue

from agentgen.runtime.cuts import cut
from agentgen.runtime.telemetry import instruments, names
from agentgen.runtime.telemetry.config import active, first_attempt
from agentgen.runtime.telemetry.exceptions import (
    CANCELLED,
    cancelled,
    described,
    error_type,
    exception_event,
)

__all__ = [
    "MAX_MODEL_TEXT_CHARS",
    "WITHDRAWAL_FAILED",
    "ChatCall",
    "Confirmation",
    "Planning",
    "RegistryRequest",
    "Run",
    "SearchRound",
    "ToolExecution",
    "model_response",
    "registry_retry",
    "searched",
]

# A library's loggers stay silent until the application configures logging (Python's advice:
# a NullHandler on the library's top logger keeps the last-resort handler from printing).
logging.getLogger("agentgen").addHandler(logging.NullHandler())
RUN_LOG = logging.getLogger("agentgen.run")
PLAN_LOG = logging.getLogger("agentgen.plan")
MODEL_LOG = logging.getLogger("agentgen.model")
SEARCH_LOG = logging.getLogger("agentgen.search")
TOOL_LOG = logging.getLogger("agentgen.tool")
CONFIRM_LOG = logging.getLogger("agentgen.confirm")
REGISTRY_LOG = logging.getLogger("agentgen.registry")

Attributes = dict[str, AttributeValue]


#: Characters of text a model wrote that telemetry records whatever it holds: a search query
#: (``agentgen.search.query`` and its log line) and the name of a tool the model called (a
#: ``agentgen.tool.result`` event's ``gen_ai.tool.name``, which a model may make up). Longer
#: text is cut there, ending in ``[cut: N characters]``: a model may write its whole output
#: (hundreds of KB) as a query or a tool's name, which every trace backend would store. Tool
#: IDs are far shorter, and ranking reads only a query's first
#: :data:`~agentgen.runtime.search.analysis.MAX_QUERY_WORDS` distinct words, which fit well
#: within this.
MAX_MODEL_TEXT_CHARS = 2000


def _cut(text: str) -> str:
    """Text a model wrote (a query, a tool name), within :data:`MAX_MODEL_TEXT_CHARS`."""
    return cut(text, MAX_MODEL_TEXT_CHARS)


#: Providers that record nothing: the API's defaults before an SDK is installed.
_SILENT_TRACERS = (ProxyTracerProvider, NoOpTracerProvider)
#: A provider named by the environment is loaded on first use (read once: start-up config).
_FROM_ENVIRONMENT = {
    name: name in os.environ for name in (OTEL_PYTHON_TRACER_PROVIDER, OTEL_PYTHON_METER_PROVIDER)
}


class _Seen:
    """Whether a recording provider was seen: the API takes one once per process, for good."""

    tracing = False
    metering = False


def _unset(module: object, attribute: str, variable: str) -> bool:
    """Whether the API's global provider is certainly not set yet. The public getters consult
    the environment on every call (a microsecond each, a dozen times per run); the API's own
    module attribute says the same for nothing. Should that private attribute go, the public
    getter decides."""
    return getattr(module, attribute, False) is None and not _FROM_ENVIRONMENT[variable]


def _tracing() -> bool:
    """Whether spans can be recorded: an SDK (or another implementation) is the global tracer
    provider. Without one, no span is started at all: a non-recording span would cost
    microseconds for nothing (the current context, and any trace context propagated from
    upstream with it, stays as it is)."""
    if _Seen.tracing:
        return True
    if _unset(_trace_api, "_TRACER_PROVIDER", OTEL_PYTHON_TRACER_PROVIDER):
        return False
    _Seen.tracing = not isinstance(get_tracer_provider(), _SILENT_TRACERS)
    return _Seen.tracing


def _metering() -> bool:
    """Whether metrics can be recorded: a meter provider other than the API's defaults (the
    proxy handed out before one is set, whose class is private to the API, and the no-op
    one)."""
    if _Seen.metering:
        return True
    if _unset(_metrics_api, "_METER_PROVIDER", OTEL_PYTHON_METER_PROVIDER):
        return False
    provider = get_meter_provider()
    _Seen.metering = not (
        isinstance(provider, NoOpMeterProvider) or type(provider).__name__ == "_ProxyMeterProvider"
    )
    return _Seen.metering


def _ended(exc: BaseException | None, attributes: Attributes) -> Attributes:
    """A duration metric's attributes for an operation that ended with ``exc``: a failure's
    ``error.type``, a cancellation's ``agentgen.outcome``, nothing more for a success."""
    if exc is not None:
        if cancelled(exc):
            attributes[names.OUTCOME] = CANCELLED
        else:
            attributes[names.ERROR_TYPE] = error_type(exc)
    return attributes


class _Operation:
    """One span, made current while the operation runs (subclasses are dataclasses of what
    the operation is about)."""

    name: ClassVar[str]
    kind: ClassVar[SpanKind] = SpanKind.INTERNAL
    _cm: AbstractContextManager[Span]
    _started: float

    def __post_init__(self) -> None:
        on = self.on = active().enabled
        self.tracing = on and (_Seen.tracing or _tracing())
        self.metering = on and (_Seen.metering or _metering())
        self.recording = False
        self.span: Span | None = None

    def attributes(self) -> Attributes:
        return {}

    def __enter__(self) -> Any:
        if self.on:
            self._started = time.perf_counter()
        if self.tracing:
            self._cm = instruments.TRACER.start_as_current_span(
                self.span_name(),
                kind=self.kind,
                attributes=self.attributes(),
                record_exception=False,
                set_status_on_exception=False,
            )
            self.span = self._cm.__enter__()
            self.recording = self.span.is_recording()
        return self

    def span_name(self) -> str:
        return self.name

    def set(self, key: str, value: AttributeValue | None) -> None:
        if self.recording and value is not None:
            assert self.span is not None
            self.span.set_attribute(key, value)

    def fail(self, kind: str, detail: str | None = None) -> None:
        """Mark the operation as failed (an outcome, not an exception): ``kind`` is its
        ``error.type`` and, without ``capture_payloads``, its status description; ``detail``,
        which may quote values, replaces it there only with ``capture_payloads``."""
        if self.recording:
            assert self.span is not None
            self.span.set_attribute(names.ERROR_TYPE, kind)
            shown = detail if detail and active().capture_payloads else kind
            self.span.set_status(Status(StatusCode.ERROR, shown))

    def elapsed(self) -> float:
        return time.perf_counter() - self._started

    def closing(self, exc: BaseException | None) -> None:
        """Called when the operation ends (before its span does)."""

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.on:
            return
        try:
            if exc is not None and self.recording:
                assert self.span is not None
                if cancelled(exc):  # withdrawn by the caller: not an error (status unset)
                    self.span.set_attribute(names.OUTCOME, CANCELLED)
                else:
                    capture = active().capture_payloads
                    self.span.add_event("exception", exception_event(exc, capture))
                    self.span.set_attribute(names.ERROR_TYPE, error_type(exc))
                    self.span.set_status(Status(StatusCode.ERROR, described(exc, capture)))
            self.closing(exc)
        finally:
            if self.tracing:
                self._cm.__exit__(exc_type, exc, tb)


# --- runs ------------------------------------------------------------------------------------

#: The ``error.type`` of a run whose cancelled caller could not cancel it (it goes on).
WITHDRAWAL_FAILED = "withdrawal_failed"


@dataclass(eq=False)
class Run(_Operation):
    """A run of one agent (``invoke_agent {agent}``), child runs included."""

    agent_id: str
    run_id: str
    _: KW_ONLY
    engine: str
    parent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    #: How many registry calls the run is nested in (``RunRequest.call_depth``): recorded
    #: when not 0, so that an operator chasing agents that call each other through registries
    #: sees how deep each run of the chain is.
    call_depth: int = 0
    #: Why its cancelled caller could not cancel the run (:meth:`not_withdrawn`), in words.
    _not_withdrawn: str | None = field(default=None, init=False)

    def span_name(self) -> str:
        return f"invoke_agent {self.agent_id}"

    def attributes(self) -> Attributes:
        found: Attributes = {
            names.OPERATION: "invoke_agent",
            names.AGENT_ID: self.agent_id,
            names.AGENT_NAME: self.agent_id,
            names.CONVERSATION_ID: self.run_id,
            names.RUN_ID: self.run_id,
            names.ENGINE: self.engine,
        }
        if self.parent_run_id:
            found[names.PARENT_RUN_ID] = self.parent_run_id
        if self.parent_tool_call_id:
            found[names.PARENT_TOOL_CALL_ID] = self.parent_tool_call_id
        if self.call_depth:
            found[names.RUN_CALL_DEPTH] = self.call_depth
        return found

    def __enter__(self) -> Run:
        super().__enter__()
        if self.on:
            RUN_LOG.info(
                "run %s: agent %s started%s%s",
                self.run_id,
                self.agent_id,
                f" (child of run {self.parent_run_id})" if self.parent_run_id else "",
                f" nested in {self.call_depth} registry call(s)" if self.call_depth else "",
            )
        return self

    def finished(self, *, tool_calls: int, child_runs: int) -> None:
        if not self.on:
            return
        self.set(names.RUN_TOOL_CALLS, tool_calls)
        self.set(names.RUN_CHILD_RUNS, child_runs)
        RUN_LOG.info(
            "run %s: agent %s answered after %d tool call(s) in %.3f s",
            self.run_id,
            self.agent_id,
            tool_calls,
            self.elapsed(),
        )

    def not_withdrawn(self, exc: BaseException, what: str) -> None:
        """Its caller was cancelled, but cancelling the run failed with ``exc`` (``what``:
        its words as the engine's warning gives them, which hold a value only with
        ``capture_payloads``), so the run goes on. The span still says ``cancelled`` (the
        caller withdrew it), and ends in error (``error.type`` :data:`WITHDRAWAL_FAILED`,
        ``exception`` event: ``exc``): a run that goes on, unseen and costing, must not read
        as one cancelled, as an operation whose cleanup failed reports that failure."""
        if not self.on:
            return
        self._not_withdrawn = what
        if self.recording:
            assert self.span is not None
            capture = active().capture_payloads
            self.span.add_event("exception", exception_event(exc, capture))
            self.span.set_attribute(names.ERROR_TYPE, WITHDRAWAL_FAILED)
            self.span.set_status(Status(StatusCode.ERROR, f"{WITHDRAWAL_FAILED} ({what})"))

    def closing(self, exc: BaseException | None) -> None:
        if exc is not None and cancelled(exc) and self._not_withdrawn is not None:
            # The engine warned, with what to do; this line must not read as a cancelled run.
            RUN_LOG.info(
                "run %s: agent %s: its caller was cancelled after %.3f s, but cancelling the "
                "run failed (%s): it goes on",
                self.run_id,
                self.agent_id,
                self.elapsed(),
                self._not_withdrawn,
            )
        elif exc is not None and cancelled(exc):  # withdrawn by its caller: not a failure
            RUN_LOG.info(
                "run %s: agent %s cancelled after %.3f s",
                self.run_id,
                self.agent_id,
                self.elapsed(),
            )
        elif isinstance(exc, Exception):
            RUN_LOG.warning(
                "run %s: agent %s failed: %s",
                self.run_id,
                self.agent_id,
                described(exc, active().capture_payloads),
            )


# --- planning --------------------------------------------------------------------------------

_PLANNING: ContextVar[Planning | None] = ContextVar("agentgen_planning", default=None)

#: A round's results as telemetry reads them: (tool ID, call ID, outcome).
_Results = tuple[tuple[str, str, str], ...]
#: Whether a result's tool, by (tool ID, outcome), is one of the agent's.
_Known = Callable[[str, str], bool]

#: ``gen_ai.tool.name`` on the tool-call metric for a tool the agent does not have (a name the
#: model made up): the metric stays one series per real tool whatever the model writes.
_UNKNOWN_TOOL = "_unknown"


@dataclass(eq=False)
class Planning(_Operation):
    """One planning activity (``plan {agent}``): its catalog, its model calls and their search
    rounds, and what it decided."""

    agent_id: str
    run_id: str
    activity: int
    #: start, resume or final.
    plan_kind: str
    search_rounds: int = field(default=0, init=False)
    #: The previous round's results not counted yet, and who knows their tools meanwhile.
    _uncounted: tuple[_Results, _Known] | None = field(default=None, init=False)

    def span_name(self) -> str:
        return f"plan {self.agent_id}"

    def attributes(self) -> Attributes:
        return {
            names.OPERATION: "plan",
            names.AGENT_ID: self.agent_id,
            names.AGENT_NAME: self.agent_id,
            names.RUN_ID: self.run_id,
            names.PLAN_ACTIVITY: self.activity,
            names.PLAN_KIND: self.plan_kind,
        }

    def __enter__(self) -> Planning:
        super().__enter__()
        if self.on:
            self._reset: Token[Planning | None] = _PLANNING.set(self)
        return self

    def final_answer_only(self) -> None:
        """The activity turned out final-answer-only once the run's policy was merged (a
        budget of 0 makes the first one so): labelled ``final`` like every other, not
        ``start``."""
        self.plan_kind = "final"
        self.set(names.PLAN_KIND, self.plan_kind)

    def results(self, results: Sequence[tuple[str, str, str]], known: _Known) -> None:
        """The previous round's results the planner reads now, as (tool ID, call ID, outcome):
        one event each, and the tool-call counter (once, on a step's first attempt).

        The counter names a tool only when ``known(tool ID, outcome)``: a model may call any
        name it likes, and a metric keyed by its free text would grow a series per invented
        name. The activity says so again once its catalog is built (:meth:`tools_known`);
        ``known`` decides should it fail before."""
        if not self.on or not results:
            return
        if self.recording:
            assert self.span is not None
            for tool_id, call_id, outcome in results:
                self.span.add_event(
                    "agentgen.tool.result",
                    {
                        names.TOOL_NAME: tool_id,
                        names.TOOL_CALL_ID: call_id,
                        names.TOOL_OUTCOME: outcome,
                    },
                )
        if self.metering and first_attempt():
            self._uncounted = (tuple(results), known)

    def tools_known(self, known: _Known) -> None:
        """The activity's catalog is built: count the previous round's results, naming the
        tools ``known`` recognises."""
        pending = self._uncounted
        if pending is None:
            return
        self._uncounted = None
        for tool_id, _, outcome in pending[0]:
            instruments.TOOL_CALLS.add(
                1,
                {
                    names.AGENT_ID: self.agent_id,
                    names.TOOL_NAME: tool_id if known(tool_id, outcome) else _UNKNOWN_TOOL,
                    names.TOOL_OUTCOME: outcome,
                },
            )

    def catalog(self, seconds: float, tools: Callable[[], tuple[int, int]]) -> None:
        """The activity's catalog was built in ``seconds``; ``tools()`` counts its advertised
        tools and the deferred ones (asked only for a recording span)."""
        if self.metering:
            instruments.CATALOG_BUILD.record(seconds, {names.AGENT_ID: self.agent_id})
        if self.recording:
            advertised, deferred = tools()
            self.set(names.PLAN_TOOLS, advertised)
            self.set(names.PLAN_DEFERRED_TOOLS, deferred)

    def decided(self, calls: int, accepted: int) -> None:
        self.set(names.PLAN_CALLS, calls)
        self.set(names.PLAN_ACCEPTED, accepted)
        if self.on:
            PLAN_LOG.debug(
                "run %s: planning activity %d of agent %s: %d call(s), %d accepted",
                self.run_id,
                self.activity,
                self.agent_id,
                calls,
                accepted,
            )

    def answered(self, tools_loaded: Callable[[], int | None]) -> None:
        """The planner answered without calls: the run ends with this activity.
        ``tools_loaded()`` counts the tools the run's searches loaded (None: it cannot tell)."""
        if self.metering:
            loaded = tools_loaded()
            if loaded is not None:
                instruments.TOOLS_LOADED.record(loaded, {names.AGENT_ID: self.agent_id})

    def closing(self, exc: BaseException | None) -> None:
        _PLANNING.reset(self._reset)
        if self._uncounted is not None:  # ended before its catalog: counted all the same
            self.tools_known(self._uncounted[1])
        self.set(names.PLAN_SEARCH_ROUNDS, self.search_rounds)
        if exc is None and self.metering:
            instruments.SEARCH_ROUNDS.record(self.search_rounds, {names.AGENT_ID: self.agent_id})


# --- model calls -----------------------------------------------------------------------------

_CHAT: ContextVar[ChatCall | None] = ContextVar("agentgen_chat", default=None)


@dataclass(eq=False)
class ChatCall(_Operation):
    """One model call (``chat {model}``). The model client says which provider answered
    (:func:`model_response`); an adapter's search rounds are its children."""

    kind = SpanKind.CLIENT

    model: str
    _: KW_ONLY
    agent_id: str | None
    run_id: str | None
    max_tokens: int | None
    #: Said by the model client (:func:`model_response`).
    provider: str | None = field(default=None, init=False)

    def span_name(self) -> str:
        return f"chat {self.model}"

    def attributes(self) -> Attributes:
        found: Attributes = {names.OPERATION: "chat", names.REQUEST_MODEL: self.model}
        if self.max_tokens is not None:
            found[names.REQUEST_MAX_TOKENS] = self.max_tokens
        if self.agent_id:
            found[names.AGENT_ID] = self.agent_id
        if self.run_id:
            found[names.CONVERSATION_ID] = self.run_id
            found[names.RUN_ID] = self.run_id
        return found

    def __enter__(self) -> ChatCall:
        super().__enter__()
        if self.on:
            self._reset: Token[ChatCall | None] = _CHAT.set(self)
        return self

    def _metric_attributes(self) -> Attributes:
        found: Attributes = {names.OPERATION: "chat", names.REQUEST_MODEL: self.model}
        if self.provider:
            found[names.PROVIDER] = self.provider
        if self.agent_id:
            found[names.AGENT_ID] = self.agent_id
        return found

    def finished(
        self,
        input_tokens: int,
        output_tokens: int,
        finish_reason: str | None,
        *,
        unreported: int = 0,
    ) -> None:
        """The call's usage: ``unreported`` of its responses reported none, and the counts are
        what the others reported. Such a call's total is not known, so it records no token
        attributes nor token data points (a 0, or a part, would read as what it cost): the
        span says how many responses were silent, and a counter adds them up."""
        if not self.on:
            return
        if unreported:
            self.set(names.USAGE_UNREPORTED, unreported)
        else:
            self.set(names.INPUT_TOKENS, input_tokens)
            self.set(names.OUTPUT_TOKENS, output_tokens)
        if finish_reason:
            self.set(names.FINISH_REASONS, [finish_reason])
        if self.metering:
            attributes = self._metric_attributes()
            if unreported:
                instruments.UNREPORTED_USAGE.add(unreported, attributes)
            else:
                input_attributes = {**attributes, names.TOKEN_TYPE: "input"}
                instruments.TOKEN_USAGE.record(input_tokens, input_attributes)
                output_attributes = {**attributes, names.TOKEN_TYPE: "output"}
                instruments.TOKEN_USAGE.record(output_tokens, output_attributes)
        provider = self.provider or "provider not reported"
        if unreported:
            MODEL_LOG.debug(
                "run %s: model %s (%s): %d response(s) reported no usage (the others: %d input "
                "+ %d output tokens)",
                self.run_id,
                self.model,
                provider,
                unreported,
                input_tokens,
                output_tokens,
            )
            return
        MODEL_LOG.debug(
            "run %s: model %s (%s) used %d input + %d output tokens",
            self.run_id,
            self.model,
            provider,
            input_tokens,
            output_tokens,
        )

    def closing(self, exc: BaseException | None) -> None:
        _CHAT.reset(self._reset)
        if self.metering:
            attributes = _ended(exc, self._metric_attributes())
            instruments.OPERATION_DURATION.record(self.elapsed(), attributes)


def model_response(
    provider: str, *, response_id: str | None = None, response_model: str | None = None
) -> None:
    """Called by a model client (an adapter) for each provider response it reads: which
    provider answered (a GenAI ``gen_ai.provider.name`` value) and the response's ID and model,
    recorded on the model call under way, if any."""
    call = _CHAT.get()
    if call is None or not call.on:
        return
    call.provider = provider
    call.set(names.PROVIDER, provider)
    call.set(names.RESPONSE_ID, response_id or None)
    call.set(names.RESPONSE_MODEL, response_model or None)


# --- tool search -----------------------------------------------------------------------------


@dataclass(eq=False)
class SearchRound(_Operation):
    """One round of tool search (``agentgen.tool_search``): the query, the tools it ranked
    (with their scores, when the client ranked them) and the tools it loaded."""

    name = "agentgen.tool_search"

    query: str
    _: KW_ONLY
    #: client (the adapter ranked the tools) or provider (the provider searched).
    executed_by: str
    ranking: str | None = None

    def attributes(self) -> Attributes:
        found: Attributes = {
            names.SEARCH_QUERY: _cut(self.query),
            names.SEARCH_EXECUTED_BY: self.executed_by,
        }
        if self.ranking:
            found[names.SEARCH_RANKING] = self.ranking
        return found

    def __enter__(self) -> SearchRound:
        super().__enter__()
        planning = _PLANNING.get()
        if planning is not None:
            planning.search_rounds += 1
        return self

    def found(self, loaded: Sequence[str], hits: Sequence[tuple[str, float]] | None = None) -> None:
        if not self.on:
            return
        if self.recording:
            if hits is not None:
                self.set(names.SEARCH_HITS, [tool for tool, _ in hits])
                self.set(names.SEARCH_SCORES, [round(score, 6) for _, score in hits])
            self.set(names.SEARCH_LOADED, list(loaded))
        if SEARCH_LOG.isEnabledFor(logging.DEBUG):
            query = _cut(self.query)
            SEARCH_LOG.debug("search %r loaded %s", query, ", ".join(loaded) or "nothing")


def searched(
    query: str, loaded: Sequence[str], *, executed_by: str, error: str | None = None
) -> None:
    """A search round that already happened (on the provider's side): reported as a span of
    its own under the model call that returned it."""
    with SearchRound(query, executed_by=executed_by) as search:
        search.found(loaded)
        if error:
            search.fail(error)


# --- tool execution --------------------------------------------------------------------------


@dataclass(eq=False)
class ToolExecution(_Operation):
    """One tool's execution (``execute_tool {tool}``): a compiled executor, or a registry
    provider's answer to an admitted call."""

    tool_id: str
    call_id: str
    _: KW_ONLY
    agent_id: str
    run_id: str
    route: str
    toolset: str
    #: The model's arguments (JSON text): recorded only with ``capture_payloads``.
    arguments: str

    def span_name(self) -> str:
        return f"execute_tool {self.tool_id}"

    def attributes(self) -> Attributes:
        found: Attributes = {
            names.OPERATION: "execute_tool",
            names.TOOL_NAME: self.tool_id,
            names.TOOL_CALL_ID: self.call_id,
            names.TOOL_TYPE: "function",
            names.AGENT_ID: self.agent_id,
            names.RUN_ID: self.run_id,
            names.TOOL_ROUTE: self.route,
            names.TOOL_TOOLSET: self.toolset,
        }
        if active().capture_payloads:
            found[names.CALL_ARGUMENTS] = self.arguments
        return found

    def __enter__(self) -> ToolExecution:
        super().__enter__()
        return self

    def finished(self, outcome: str, result: str) -> None:
        if not self.on:
            return
        self.set(names.TOOL_OUTCOME, outcome)
        capture = active().capture_payloads
        if capture:
            self.set(names.CALL_RESULT, result)
        if outcome != "ok":
            self.fail(outcome)
        TOOL_LOG.info(
            "run %s: tool %s (call %s) %s in %.1f ms",
            self.run_id,
            self.tool_id,
            self.call_id,
            outcome,
            self.elapsed() * 1000,
        )
        if capture:
            TOOL_LOG.debug(
                "run %s: tool %s (call %s) arguments %s result %s",
                self.run_id,
                self.tool_id,
                self.call_id,
                self.arguments,
                result,
            )


# --- confirmations ---------------------------------------------------------------------------


@dataclass(eq=False)
class Confirmation(_Operation):
    """A person's (or policy's) decision on a call that asks for confirmation
    (``agentgen.confirm {tool}``), made where the decision is made."""

    tool_id: str
    call_id: str
    _: KW_ONLY
    agent_id: str
    run_id: str
    #: Rendered from the call's arguments: recorded only with ``capture_payloads``.
    prompt: str | None = None

    def span_name(self) -> str:
        return f"agentgen.confirm {self.tool_id}"

    def attributes(self) -> Attributes:
        found: Attributes = {
            names.TOOL_NAME: self.tool_id,
            names.TOOL_CALL_ID: self.call_id,
            names.AGENT_ID: self.agent_id,
            names.RUN_ID: self.run_id,
        }
        if self.prompt is not None and active().capture_payloads:
            found[names.CONFIRMATION_PROMPT] = self.prompt
        return found

    def __enter__(self) -> Confirmation:
        super().__enter__()
        return self

    def decided(self, outcome: str, by: str | None = None, error: str | None = None) -> None:
        """``outcome``: approved, denied, or failed (no decision: ``error`` says why, in words
        that may quote the confirmer's answer: the status only with ``capture_payloads``)."""
        if not self.on:
            return
        self.set(names.CONFIRMATION_OUTCOME, outcome)
        self.set(names.CONFIRMATION_DECIDED_BY, by or None)
        if error is not None:
            self.fail("confirmation_failed", error)
        CONFIRM_LOG.info(
            "run %s: %s (call %s) %s%s",
            self.run_id,
            self.tool_id,
            self.call_id,
            outcome,
            f" by {by}" if by else "",
        )


# --- registries ------------------------------------------------------------------------------

_REGISTRY: ContextVar[RegistryRequest | None] = ContextVar("agentgen_registry", default=None)


@dataclass(eq=False)
class RegistryRequest(_Operation):
    """One request to a registry (``agentgen.registry.{operation} {registry}``): resolve, list,
    call, retry. A refusal (``call_not_admitted``, ``admission_conflict``, ...) is its status."""

    kind = SpanKind.CLIENT

    registry: str
    operation: str
    _: KW_ONLY
    toolset: str | None = None
    tool: str | None = None
    #: The registration token a call is admitted under (resolve: the one answered).
    token: str | None = None
    #: The ``meta.call_depth`` a call is sent with: recorded when not 0.
    call_depth: int = 0
    attempts: int = field(default=1, init=False)

    def span_name(self) -> str:
        return f"agentgen.registry.{self.operation} {self.registry}"

    def attributes(self) -> Attributes:
        found: Attributes = {
            names.REGISTRY: self.registry,
            names.REGISTRY_OPERATION: self.operation,
        }
        if self.toolset:
            found[names.REGISTRY_TOOLSET] = self.toolset
        if self.tool:
            found[names.REGISTRY_TOOL] = self.tool
        if self.token:
            found[names.REGISTRY_TOKEN] = self.token
        if self.call_depth:
            found[names.REGISTRY_CALL_DEPTH] = self.call_depth
        return found

    def __enter__(self) -> RegistryRequest:
        super().__enter__()
        if self.on:
            self._reset: Token[RegistryRequest | None] = _REGISTRY.set(self)
        return self

    def resolved(self, version: str | None, token: str) -> None:
        self.set(names.REGISTRY_VERSION, version or "")
        self.set(names.REGISTRY_TOKEN, token)

    def resolved_one(self, toolset: str, version: str | None, token: str) -> None:
        """One toolset of a batch resolve: an ``agentgen.registry.resolved`` event with the
        toolset, version and token the registry answered."""
        if self.recording:
            assert self.span is not None
            self.span.add_event(
                RESOLVED_EVENT,
                {
                    names.REGISTRY_TOOLSET: toolset,
                    names.REGISTRY_VERSION: version or "",
                    names.REGISTRY_TOKEN: token,
                },
            )

    def closing(self, exc: BaseException | None) -> None:
        _REGISTRY.reset(self._reset)
        if self.attempts > 1:
            self.set(names.REGISTRY_ATTEMPTS, self.attempts)
        if self.metering:
            attributes = _ended(
                exc, {names.REGISTRY: self.registry, names.REGISTRY_OPERATION: self.operation}
            )
            instruments.REGISTRY_REQUEST.record(self.elapsed(), attributes)


#: The event a batch resolve adds per toolset it resolved.
RESOLVED_EVENT = "agentgen.registry.resolved"


def registry_retry(
    registry: str, path: str, retry: int, problem: str, delay: float, detail: str | None = None
) -> None:
    """A registry client retries a request that failed in transit (or was answered 5xx):
    ``retry`` is 1 for the first retry. An event on the registry request under way, and a
    warning. ``problem`` names what went wrong (an exception type, an HTTP status);
    ``detail``, the words that came with it (an error's message, the answer's body), replaces
    it only with ``capture_payloads``."""
    if detail and active().capture_payloads:
        problem = detail
    request = _REGISTRY.get()
    if request is not None and request.on:
        request.attempts = retry + 1
        if request.recording:
            assert request.span is not None
            request.span.add_event(
                "agentgen.registry.retry",
                {"agentgen.registry.retry": retry, "agentgen.registry.problem": problem},
            )
    if active().enabled:
        REGISTRY_LOG.warning(
            "registry %r: %s failed (%s); retry %d in %.2f s", registry, path, problem, retry, delay
        )
