"""The client side of durable runs: the engine an application gives its ``Runtime``.

``Runtime(engine=TemporalEngine(...))`` is the only change an application makes: ``run``
starts the run as a workflow on the task queue, decides its confirmations with the runtime's
own confirmer, and returns the same ``RunOutcome`` (or raises the same error) the in-memory
engine would. Workers (``agentgen worker``) run the workflow and its activities.

Spans link across the client, the workflow and its activities through the SDK's
``TracingInterceptor``, which the engine adds to its client (and workers to theirs) unless
the client already traces: ``run`` is the run's ``invoke_agent`` span, the steps' spans (planning,
model calls, tool executions, registry requests) hang under the activities that ran them, and
a confirmation's span is where it was decided.

For runs that outlive the process that started them, the engine also starts a run without
waiting (:meth:`TemporalEngine.start`), waits for one (:meth:`~TemporalEngine.result`), lists
and decides its pending confirmations (:meth:`~TemporalEngine.pending_confirmations`,
:meth:`~TemporalEngine.confirm`), and cancels it (:meth:`~TemporalEngine.cancel`). A run's ID
is its workflow ID; a child run's is its child workflow's.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.contrib.opentelemetry import (
    OpenTelemetryInterceptor,
    OpenTelemetryPlugin,
    TracingInterceptor,
)
from temporalio.exceptions import (
    ApplicationError,
    CancelledError,
    TemporalError,
    WorkflowAlreadyStartedError,
)
from temporalio.service import RPCError, RPCStatusCode

from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.engines.temporal.converter import AgentgenPayloadConverter, data_converter
from agentgen.runtime.engines.temporal.errors import RunCancelledError, run_failure
from agentgen.runtime.engines.temporal.namespaces import require_namespace
from agentgen.runtime.engines.temporal.poll_pacing import PollPacing
from agentgen.runtime.engines.temporal.settings import TemporalSettings
from agentgen.runtime.engines.temporal.usage_details import failure_usage, usage_in
from agentgen.runtime.engines.temporal.wire import Decide, RunInput, RunStatus, WorkflowResult
from agentgen.runtime.engines.temporal.workflow import DECIDE_UPDATE, STATUS_QUERY, WORKFLOW_NAME
from agentgen.runtime.failures import message_of
from agentgen.runtime.model_client import Usage
from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.runs.execution import decide
from agentgen.runtime.runs.host import RunHost
from agentgen.runtime.runs.loop import outcome
from agentgen.runtime.runs.model_calls import check_model_timeout
from agentgen.runtime.runs.policy import merge
from agentgen.runtime.runs.registry_calls import check_admission_timeout
from agentgen.runtime.runs.requests import (
    RunError,
    RunOutcome,
    RunRequest,
    at_call_depth,
    record_run_usage,
    run_usage,
)
from agentgen.runtime.runs.steps import ConfirmationRequest, Confirmer
from agentgen.runtime.tasks import is_number, stop_task
from agentgen.runtime.telemetry.config import activated, active
from agentgen.runtime.telemetry.exceptions import described
from agentgen.runtime.telemetry.spans import Confirmation, Run

__all__ = [
    "CANCEL_WAIT",
    "DEFAULT_ADDRESS",
    "DEFAULT_MAX_POLL_INTERVAL",
    "START_WAIT",
    "USAGE_WAIT",
    "RunCancelledError",
    "TemporalEngine",
    "agentgen_client",
]

DEFAULT_ADDRESS = "127.0.0.1:7233"
#: Where a run whose caller was cancelled says that the run could not be cancelled with it.
_LOG = logging.getLogger("agentgen.run")
#: How long one status query may take before the watcher tries again.
_QUERY_TIMEOUT = timedelta(seconds=5)
#: How long a cancelled caller waits for its cancelled run to end and record what it cost (a
#: workflow task: milliseconds while a worker polls) before its cancellation goes on without.
USAGE_WAIT = 2.0
#: How long a call about one run (``result``, ``pending_confirmations``, ``confirm``,
#: ``cancel``) waits for that run's start request, when this engine has one in flight, to be
#: answered (milliseconds while the server answers; its own retries give up within 10 s).
START_WAIT = 30.0
#: How long a request to cancel a run (``cancel``, or a cancelled caller withdrawing its run)
#: waits for the server's answer (milliseconds while it answers; its own retries give up
#: within 10 s): a server that does not answer must not hold the caller as long.
CANCEL_WAIT = 30.0
#: The longest the confirmation watcher waits between two looks while none waits.
DEFAULT_MAX_POLL_INTERVAL = 1.0
#: A run's start request, in flight or answered.
_Start = asyncio.Future[WorkflowHandle[object, WorkflowResult]]


def _traces(interceptor: object) -> bool:
    return isinstance(interceptor, TracingInterceptor | OpenTelemetryInterceptor)


def agentgen_client(client: Client) -> Client:
    """``client`` with agentgen's data converter and OpenTelemetry context propagation (the
    SDK's ``TracingInterceptor``, unless the client already traces), on the same connection,
    namespace, plugins and interceptors."""
    config = client.config()
    changed = False
    if client.data_converter.payload_converter_class is not AgentgenPayloadConverter:
        config["data_converter"] = data_converter()
        changed = True
    interceptors = list(config.get("interceptors") or ())
    plugins = config.get("plugins") or ()
    traced = any(_traces(i) for i in interceptors) or any(
        isinstance(p, OpenTelemetryPlugin) for p in plugins
    )
    if not traced:
        config["interceptors"] = [*interceptors, TracingInterceptor()]
        changed = True
    return Client(**config) if changed else client


def _untraced(client: Client) -> Client:
    """The same client without tracing: for the status polls that wait for confirmations,
    which would otherwise add a span to the run's trace every poll interval."""
    config = client.config()
    interceptors = list(config.get("interceptors") or ())
    config["interceptors"] = [i for i in interceptors if not isinstance(i, TracingInterceptor)]
    return Client(**config)


class TemporalEngine:
    """Runs agents as Temporal workflows on ``task_queue``.

    Give it a connected ``client``, or an ``address`` and ``namespace`` to connect to on first
    use. ``settings`` (timeouts, retries, continue-as-new) travel with every run it starts.
    While :meth:`run` or :meth:`result` waits and the runtime has a confirmer, the run tree's
    confirmations are polled every ``poll_interval`` seconds, backing off to
    ``max_poll_interval`` (1 s, or ``poll_interval`` if longer) while none waits
    (:mod:`.poll_pacing`).
    """

    def __init__(
        self,
        *,
        task_queue: str = "agentgen",
        client: Client | None = None,
        address: str = DEFAULT_ADDRESS,
        namespace: str = "default",
        settings: TemporalSettings | None = None,
        poll_interval: float = 0.1,
        max_poll_interval: float | None = None,
    ) -> None:
        if not isinstance(task_queue, str):
            raise TypeError(f"TemporalEngine's task queue is a name (str), not {task_queue!r}")
        if not task_queue:
            raise ValueError("TemporalEngine needs a task queue")
        for name, value in (
            ("poll_interval", poll_interval),
            ("max_poll_interval", max_poll_interval),
        ):
            if value is not None and not is_number(value):  # "1" failed comparing with 0
                raise TypeError(f"TemporalEngine.{name} must be seconds (a number), not {value!r}")
        if not 0 < poll_interval < math.inf:  # NaN too
            raise ValueError(
                f"TemporalEngine.poll_interval must be positive seconds, not {poll_interval!r}"
            )
        if max_poll_interval is None:
            max_poll_interval = max(DEFAULT_MAX_POLL_INTERVAL, poll_interval)
        elif not poll_interval <= max_poll_interval < math.inf:
            raise ValueError(
                f"TemporalEngine.max_poll_interval must be seconds at least poll_interval "
                f"({poll_interval!r}), not {max_poll_interval!r}"
            )
        self.task_queue = task_queue
        self.address = address
        self.namespace = client.namespace if client is not None else namespace
        self.settings = settings or TemporalSettings()
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval
        self._client = agentgen_client(client) if client is not None else None
        self._quiet: Client | None = None
        self._connecting: asyncio.Lock | None = None
        #: Cancellations of runs whose caller was cancelled, until the server has them.
        self._withdrawing: set[asyncio.Future[Exception | None]] = set()
        #: Start requests in flight, by run ID: a cancellation of the run waits for its start
        #: to be answered (sent first, it would find no run, and the run would start after it).
        self._starting: dict[str, _Start] = {}

    async def client(self) -> Client:
        """The client (connected on first use, with agentgen's data converter)."""
        if self._client is None:
            if self._connecting is None:
                self._connecting = asyncio.Lock()
            async with self._connecting:
                if self._client is None:
                    self._client = await self._connect()
        return self._client

    async def _connect(self) -> Client:
        try:
            return await Client.connect(
                self.address,
                namespace=self.namespace,
                data_converter=data_converter(),
                interceptors=[TracingInterceptor()],
            )
        except (RuntimeError, ValueError) as exc:  # the SDK's connection and address errors
            raise RuntimeError(
                f"TemporalEngine cannot connect to Temporal at {self.address!r} (namespace "
                f"{self.namespace!r}): {exc}; start the server (locally: temporal server "
                "start-dev) or give TemporalEngine(address='host:port') the one to use"
            ) from None

    async def _polling_client(self) -> Client:
        if self._quiet is None:
            self._quiet = _untraced(await self.client())
        return self._quiet

    # ------------------------------------------------------------------ the Engine seam

    async def run(self, host: RunHost, request: RunRequest) -> RunOutcome:
        request = replace(request, run_id=request.run_id or uuid.uuid4().hex)
        with (
            activated(host.telemetry),
            Run(
                request.agent_id,
                request.run_id,
                engine="temporal",
                parent_run_id=request.parent_run_id,
                parent_tool_call_id=request.parent_tool_call_id,
                call_depth=request.call_depth,
            ) as span,
        ):
            handle: WorkflowHandle[object, WorkflowResult] | None = None
            start = self._begin_start(host, request)
            try:
                handle = await asyncio.shield(start)
                result = await self._wait(host, handle, decide=True)
            except asyncio.CancelledError as cancelled:
                # The caller gave up (cancelled, or a deadline around it): so does the run,
                # as in memory, and its cancellation says what the run cost (run_usage), once
                # the workflow recorded it. Waiting for a run started with start() detaches.
                failure = await self._withdraw(request.run_id, start)
                if failure is not None:
                    span.not_withdrawn(failure, _words(failure))
                # When the cancellation did not reach the server, the run goes on: no usage
                # comes, and waiting for it would only hold the caller's cancellation.
                usage = (
                    await _usage_once_ended(handle)
                    if handle is not None and failure is None
                    else None
                )
                if usage is not None:
                    record_run_usage(cancelled, usage)
                raise
            span.finished(tool_calls=result.tool_calls, child_runs=len(result.child_runs))
        return result

    async def _withdraw(self, run_id: str, start: _Start) -> Exception | None:
        """Cancel the run whose caller was cancelled, once its ``start`` was answered (the
        caller may have been cancelled while it was in flight). The request goes out even if
        the caller is cancelled again meanwhile; a run that already ended has nothing to
        cancel, and a start that failed (``run_id`` may then be another caller's run) leaves
        nothing to cancel. The error when the request failed (logged): the run goes on.

        The caller waits for the start at most :data:`START_WAIT`, as every other call about
        a starting run does, and for the answer to the cancellation at most
        :data:`CANCEL_WAIT`: a server that does not answer held a cancelled caller as long as
        it did not. The cancellation then goes on without it (once the start is answered); a
        ``TimeoutError`` (logged): the caller cannot learn whether the run goes on, nor what
        it cost."""
        request = asyncio.ensure_future(self._cancel_quietly(run_id, start))
        self._withdrawing.add(request)
        request.add_done_callback(self._withdrawing.discard)
        await asyncio.wait({start}, timeout=START_WAIT)
        if not start.done():
            _LOG.warning(
                "run %r: its caller was cancelled while its start request was in flight, and "
                "the Temporal server at %r did not answer that request within %g s; the "
                "caller's cancellation goes on, and the run is cancelled once the server "
                "answers that it started it; if this process ends first, cancel it with "
                "engine.cancel(%r)",
                run_id,
                self._target(),
                START_WAIT,
                run_id,
            )
            return TimeoutError(
                f"run {run_id!r}: the Temporal server did not answer its start request within "
                f"{START_WAIT:g} s, so the run could not be cancelled with its caller"
            )
        await asyncio.wait({request}, timeout=CANCEL_WAIT)
        if not request.done():
            _LOG.warning(
                "run %r: its caller was cancelled, and the Temporal server at %r did not answer "
                "the request to cancel the run within %g s; the caller's cancellation goes on, "
                "and the request with it; if the run goes on, cancel it with engine.cancel(%r)",
                run_id,
                self._target(),
                CANCEL_WAIT,
                run_id,
            )
            return TimeoutError(
                f"run {run_id!r}: the Temporal server did not answer the request to cancel the "
                f"run within {CANCEL_WAIT:g} s"
            )
        return request.result()

    async def _cancel_quietly(self, run_id: str, start: _Start) -> Exception | None:
        """Cancel the run once ``start`` was answered; the error (logged) when that failed."""
        try:
            if await _failure_of(start) is not None:
                return None  # not started: no run of this caller's to cancel
            client = await self.client()
            await client.get_workflow_handle(run_id).cancel()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                _warn_not_withdrawn(run_id, exc)
                return exc
        except Exception as exc:  # the caller's cancellation is what it raises, not this
            _warn_not_withdrawn(run_id, exc)
            return exc
        return None

    # ------------------------------------------------------------------ durable runs

    async def start(self, host: RunHost, request: RunRequest) -> str:
        """Start a run without waiting for it; returns its run ID (``request.run_id``, or a
        new one). The agent must be registered on the host (and on the workers). The run's
        ``invoke_agent`` span ends once the run started; the workflow's spans hang under it.
        Like the first run, it seals the host: what the agents need is checked before a
        workflow exists."""
        host.seal()
        request = at_call_depth(replace(request, run_id=request.run_id or uuid.uuid4().hex))
        with (
            activated(host.telemetry),
            Run(
                request.agent_id, request.run_id, engine="temporal", call_depth=request.call_depth
            ) as span,
        ):
            start = self._begin_start(host, request)
            try:
                handle = await asyncio.shield(start)
            except asyncio.CancelledError:
                # The start request may have left: a run its caller gave up on while it was
                # being started is cancelled once started, rather than left running unseen.
                failure = await self._withdraw(request.run_id, start)
                if failure is not None:
                    span.not_withdrawn(failure, _words(failure))
                raise
        return handle.id

    def _begin_start(self, host: RunHost, request: RunRequest) -> _Start:
        """Check the run (raising what refuses it), then start it: the request runs on its
        own, tracked by run ID until answered, so that a caller cancelled while it is in
        flight does not make its answer unknown (the run may exist all the same), and a
        cancellation of the run can wait for it."""
        registration = host.agent(request.agent_id)
        run_id = request.run_id or uuid.uuid4().hex
        self._check_model_timeout(host, registration.definition.policy, request, run_id)
        self._check_admission_timeouts(host, request.agent_id, run_id)
        run_input = RunInput(
            request=replace(request, run_id=run_id),
            settings=self.settings,
            confirmable=host.confirmer is not None,
        )
        start = asyncio.ensure_future(self._start_workflow(run_input, run_id))
        self._starting[run_id] = start
        start.add_done_callback(functools.partial(self._answered, run_id))
        return start

    def _answered(self, run_id: str, start: _Start) -> None:
        if self._starting.get(run_id) is start:
            del self._starting[run_id]
        if not start.cancelled():
            start.exception()  # retrieved: a caller cancelled meanwhile never reads it

    async def _start_workflow(
        self, run_input: RunInput, run_id: str
    ) -> WorkflowHandle[object, WorkflowResult]:
        client = await self.client()
        try:
            return await client.start_workflow(
                WORKFLOW_NAME,
                run_input,
                id=run_id,
                task_queue=self.task_queue,
                result_type=WorkflowResult,
            )
        except WorkflowAlreadyStartedError:
            raise RunError(
                f"run {run_id!r} is already running on Temporal (namespace "
                f"{client.namespace!r}): wait for it with engine.result(runtime, {run_id!r}), "
                "or give the new run another run_id"
            ) from None
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                await _require_namespace(client)
            raise

    def _check_model_timeout(
        self, host: RunHost, agent_policy: RunPolicy, request: RunRequest, run_id: str
    ) -> None:
        """Refuse, before anything starts, a run whose model timeout the planning activity's
        own timeout would preempt (each planning activity checks it again, for child runs)."""
        try:
            policy = merge(agent_policy, host.policy, request.policy)
        except ValueError:
            return  # the run's first planning activity fails with what is wrong
        limit = ("TemporalSettings.planning_timeout", self.settings.planning_timeout)
        check_model_timeout(policy.model_timeout, limit, request.agent_id, run_id)

    def _check_admission_timeouts(self, host: RunHost, agent_id: str, run_id: str) -> None:
        """Refuse, before anything starts, a run whose agent (or an agent it calls as a tool,
        at any depth) reads a registry whose ``Timeout`` the admission activity's own timeout
        (``tool_timeout``) would preempt. Registries that only hand-written registry tools
        name are checked by the admission activity itself."""
        limit = ("TemporalSettings.tool_timeout", self.settings.tool_timeout)
        seen, queue = {agent_id}, [agent_id]
        while queue:
            try:
                definition = host.agent(queue.pop()).definition
            except LookupError:
                continue  # the run's first step reports an agent that is not registered
            for name in definition.registries:
                try:
                    registration = host.registry(name)
                except LookupError:
                    continue  # sealing the runtime names it
                check_admission_timeout(registration, limit, definition.id, run_id)
            for child in definition.agent_executors:
                if child not in seen:
                    seen.add(child)
                    queue.append(child)

    async def result(self, host: RunHost, run_id: str, *, decide: bool = True) -> RunOutcome:
        """Wait for a run's outcome; raises the run's error if it failed. Meanwhile, with
        ``decide``, the host's confirmer (if it has one) decides the run's confirmations;
        without, they wait for :meth:`confirm` (from this process or any other)."""
        failure = await self._start_answered(run_id, "result")
        client = await self.client()
        handle = client.get_workflow_handle(run_id, result_type=WorkflowResult)
        with activated(host.telemetry):
            return await self._wait(host, handle, decide=decide, start=(failure, "result"))

    async def _wait(
        self,
        host: RunHost,
        handle: WorkflowHandle[Any, WorkflowResult],
        *,
        decide: bool,
        start: tuple[BaseException | None, str] = (None, ""),
    ) -> RunOutcome:
        run_id = handle.id
        confirmer = host.confirmer if decide else None
        watcher = asyncio.create_task(self._watch(run_id, confirmer)) if confirmer else None
        try:
            result = await handle.result()
        except WorkflowFailureError as exc:
            failure = _failed(exc, run_id)
            if isinstance(failure, RunCancelledError):
                usage = await _cancelled_usage(handle)
                if usage is not None:
                    record_run_usage(failure, usage)
            raise failure from None
        except RPCError as exc:
            unknown = await _unknown(exc, run_id, await self.client())
            raise _not_started(unknown, run_id, *start) from None
        finally:
            if watcher is not None:
                await stop_task(watcher)
        definition = host.agent(result.agent_id).definition
        accepted = [AcceptedCall.from_json(c, definition.spec) for c in result.accepted]
        return outcome(result, accepted)

    async def pending_confirmations(self, run_id: str) -> list[ConfirmationRequest]:
        """The confirmations a run and its running child runs wait for. A run ID the server
        does not know is a ``LookupError``, and a run whose status no worker gives (none polls
        its task queue) a ``RuntimeError``: either used to read as nothing pending."""
        status = await self._status_once_started(run_id, "pending_confirmations")
        return [request for _, request in await self._pending(run_id, status, strict=True)]

    async def confirm(
        self, run_id: str, tool_call_id: str, approved: bool, *, by: str | None = None
    ) -> None:
        """Decide a pending confirmation of a run (or, when the run itself does not wait on
        ``tool_call_id``, of one of its child runs, which must be the only one waiting on it);
        ``by`` (who decided) is recorded on the confirmation's span. ``approved`` is ``True``
        or ``False`` (an answer such as ``"no"`` is refused, not taken for a truthy approval)."""
        if type(approved) is not bool:
            raise TypeError(
                f"TemporalEngine.confirm: approved must be True or False, not {approved!r} "
                f"(run {run_id!r}, tool call {tool_call_id!r}); convert the answer first"
            )
        status = await self._status_once_started(run_id, "confirm")
        # Call IDs are the model's: a parent and its child runs may all use one. The run named
        # wins (its caller was shown its ConfirmationRequest.run_id); only a call it does not
        # wait on is looked for in its child runs, where deciding the first one found could
        # approve the call a person did not mean.
        matches = [(run_id, r) for r in status.pending if r.tool_call_id == tool_call_id]
        if not matches:
            matches = [
                (workflow_id, request)
                for workflow_id, request in await self._pending_below(status.children, strict=True)
                if request.tool_call_id == tool_call_id
            ]
        if not matches:
            raise LookupError(f"run {run_id!r} has no confirmation pending for {tool_call_id!r}")
        if len(matches) > 1:
            runs = ", ".join(repr(request.run_id) for _, request in matches)
            raise LookupError(
                f"run {run_id!r} does not wait on tool call {tool_call_id!r}, but several of "
                f"its child runs do ({runs}); decide it with the ID of the run that holds it "
                "(ConfirmationRequest.run_id): engine.confirm(run_id, ...)"
            )
        ((workflow_id, request),) = matches
        with Confirmation(
            request.tool_id,
            tool_call_id,
            agent_id=request.agent_id,
            run_id=request.run_id,
            prompt=request.prompt,
        ) as span:
            try:
                await self._decide(workflow_id, Decide(tool_call_id, approved))
            except WorkflowUpdateFailedError as exc:
                # Another client decided it between the look above and this decision (two
                # people answering at once): the SDK's error says only "Workflow update
                # failed", and is no LookupError, which the documentation promises.
                raise LookupError(
                    f"run {request.run_id!r} has no confirmation pending for {tool_call_id!r} "
                    f"any more: it was decided meanwhile, by another client ({exc.cause})"
                ) from None
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise
                raise LookupError(
                    f"run {request.run_id!r} ended before the decision on {tool_call_id!r} "
                    "reached it (cancelled, or failed, meanwhile): nothing was decided"
                ) from None
            span.decided("approved" if approved else "denied", by)

    async def cancel(self, run_id: str) -> None:
        """Cancel a run (its child runs with it); waiting for it raises RunCancelledError.

        A run this engine is still starting (``start`` or ``run`` has not heard back from the
        server yet) is cancelled once its start was answered: sent first, the cancellation
        would find no run, and the run would start after it and go on. The server's answer to
        the cancellation is awaited at most :data:`CANCEL_WAIT`: one it does not give is a
        ``TimeoutError`` naming the run and the server, not a call that never returns."""
        failure = await self._start_answered(run_id, "cancel")
        client = await self.client()
        try:
            await asyncio.wait_for(client.get_workflow_handle(run_id).cancel(), CANCEL_WAIT)
        except TimeoutError:
            raise TimeoutError(
                f"run {run_id!r}: engine.cancel waited {CANCEL_WAIT:g} s for the Temporal server "
                f"at {self._target()!r} to answer the request to cancel the run, and it did not: "
                "the run may not be cancelled; check the server, then call engine.cancel again"
            ) from None
        except RPCError as exc:
            raise _not_started(
                await _unknown(exc, run_id, client), run_id, failure, "cancel"
            ) from None

    async def _start_answered(self, run_id: str, call: str) -> BaseException | None:
        """Once the start request this engine has in flight for ``run_id`` (if any) was
        answered: how it failed, or None. Asked before it was, the server knows no such run
        yet, and a call about the run (engine.``call``) would answer that none exists. The
        wait is bounded by :data:`START_WAIT`: a start the server does not answer is an
        error naming the run, not a call that never returns."""
        start = self._starting.get(run_id)
        if start is None:
            return None
        try:
            return await asyncio.wait_for(_failure_of(start), START_WAIT)
        except TimeoutError:
            raise TimeoutError(
                f"run {run_id!r}: engine.{call} waited {START_WAIT:g} s for the run's start "
                "request (engine.start or run, in flight on this engine) to be answered, and it "
                f"was not: the Temporal server at {self._target()!r} does not answer; check it, "
                f"then call engine.{call} again (the run may have started meanwhile)"
            ) from None

    def _target(self) -> str:
        """The server this engine talks to: its client's, when it was given one."""
        if self._client is not None:
            return self._client.service_client.config.target_host
        return self.address

    async def _status_once_started(self, run_id: str, call: str) -> RunStatus:
        """The run's status, read strictly (see :meth:`_status`) once a start of it in flight
        on this engine was answered; a run that start failed to create is a ``LookupError``
        naming the start's error."""
        failure = await self._start_answered(run_id, call)
        try:
            status = await self._status(run_id, strict=True)
        except LookupError as exc:
            raise _not_started(exc, run_id, failure, call) from None
        assert status is not None  # strict: an unread status is an error
        return status

    # ------------------------------------------------------------------ confirmations

    async def _status(self, workflow_id: str, *, strict: bool = False) -> RunStatus | None:
        """The run's pending confirmations and running child runs; None when no worker
        answered (yet) or the run is gone (the watcher asks again later), or, ``strict``, the
        error that says so (an operator asking must not read that as nothing pending)."""
        client = await self._polling_client()
        handle: WorkflowHandle[object, object] = client.get_workflow_handle(workflow_id)
        if strict and await self._ended(handle):
            # An ended run waits for nothing. Asked, a worker would replay its whole history
            # to say so, and with none polling (the release that ran it retired) the query
            # failed as if a running run's confirmations could not be read.
            return RunStatus()
        try:
            status: RunStatus = await handle.query(
                STATUS_QUERY, result_type=RunStatus, rpc_timeout=_QUERY_TIMEOUT
            )
        except TemporalError as exc:
            if not strict:
                return None
            if isinstance(exc, RPCError) and exc.status == RPCStatusCode.NOT_FOUND:
                raise await _unknown(exc, workflow_id, client) from None
            # An unanswered query looks the same whether no worker polls the queue or every
            # one is too busy to take the query's workflow task in time: name both.
            raise RuntimeError(
                f"run {workflow_id!r}: its pending confirmations could not be read "
                f"({type(exc).__name__}: {exc}); a worker answers that query, and none did "
                f"within {_QUERY_TIMEOUT.total_seconds():g} s: either no worker polls the run's "
                f"task queue (this engine's is {self.task_queue!r}: check that one runs for it, "
                "agentgen worker --task-queue ...), or every worker polling it was busy past "
                "that time (check the workers' load: a worker stuck in a long workflow task, "
                "or too few workers for the runs); then ask again"
            ) from None
        return status

    async def _ended(self, handle: WorkflowHandle[object, object]) -> bool:
        """Whether the run ended (its latest execution, after any continue-as-new); a run ID
        the server does not know is a ``LookupError`` naming it."""
        try:
            description = await handle.describe(rpc_timeout=_QUERY_TIMEOUT)
        except RPCError as exc:
            raise await _unknown(exc, handle.id, await self._polling_client()) from None
        return description.status != WorkflowExecutionStatus.RUNNING

    async def _pending(
        self, run_id: str, status: RunStatus, *, strict: bool = False
    ) -> list[tuple[str, ConfirmationRequest]]:
        """What the run tree waits for, by workflow, given its root's ``status`` (read as the
        caller needs: the watcher's, or an operator's once the run's start was answered);
        ``strict``: every status of a run still running must be read (an operator asking must
        not read a status that could not be read as nothing pending); child runs may end while
        the tree is walked."""
        own = [(run_id, request) for request in status.pending]
        return own + await self._pending_below(status.children, strict=strict)

    async def _pending_below(
        self, children: tuple[str, ...], *, strict: bool = False
    ) -> list[tuple[str, ConfirmationRequest]]:
        """What ``children`` and their own child runs wait for, by workflow (a child run that
        ended, or is gone, meanwhile waits for nothing)."""
        found: list[tuple[str, ConfirmationRequest]] = []
        queue = list(children)
        while queue:
            workflow_id = queue.pop(0)
            try:
                status = await self._status(workflow_id, strict=strict)
            except LookupError:
                continue  # gone from the server (the namespace was checked with the root)
            if status is None:
                continue
            found.extend((workflow_id, request) for request in status.pending)
            queue.extend(status.children)
        return found

    async def _decide(self, workflow_id: str, decision: Decide) -> None:
        client = await self.client()
        await client.get_workflow_handle(workflow_id).execute_update(DECIDE_UPDATE, decision)

    async def _watch(self, run_id: str, confirmer: Confirmer) -> None:
        """Decide every confirmation the run tree waits for, each once, with ``confirmer``."""
        seen: set[tuple[str, str]] = set()
        deciding: set[asyncio.Task[None]] = set()

        #: Set when a decision reached its run (which goes on: it may ask again at once).
        delivered = asyncio.Event()

        async def deliver(workflow_id: str, request: ConfirmationRequest) -> None:
            decided = await decide(confirmer, request)  # the confirmation's span
            decision = Decide(request.tool_call_id, decided.approved, decided.error)
            while True:  # the same decision until it is delivered (the confirmer decided once)
                try:
                    await self._decide(workflow_id, decision)
                except WorkflowUpdateFailedError:
                    break  # decided meanwhile (by another client)
                except RPCError as exc:
                    if exc.status == RPCStatusCode.NOT_FOUND:
                        # Its run ended meanwhile (a child run cancelled or failed while the
                        # confirmer decided): sent again, it was refused every poll_interval
                        # for as long as the rest of the tree ran.
                        break
                    await asyncio.sleep(self.poll_interval)
                except TemporalError:
                    await asyncio.sleep(self.poll_interval)  # no worker answered yet
                else:
                    break
            delivered.set()

        pacing = PollPacing(self.poll_interval, self.max_poll_interval)
        try:
            while True:
                found = False
                status = await self._status(run_id)
                pending = [] if status is None else await self._pending(run_id, status)
                for workflow_id, request in pending:
                    key = (workflow_id, request.tool_call_id)
                    if key not in seen:
                        seen.add(key)
                        found = True
                        task = asyncio.create_task(deliver(workflow_id, request))
                        deciding.add(task)
                        task.add_done_callback(deciding.discard)
                try:  # backing off while nothing is new, until a decision is delivered
                    await asyncio.wait_for(delivered.wait(), pacing.after(found=found))
                except TimeoutError:
                    continue
                delivered.clear()
                await asyncio.sleep(pacing.decided())
        finally:
            for task in deciding:
                task.cancel()


async def _failure_of(start: _Start) -> BaseException | None:
    """Once ``start`` was answered: how it failed, or None when it started the run."""
    await asyncio.wait({start})
    if start.cancelled():
        return asyncio.CancelledError("the start was cancelled")
    return start.exception()


def _not_started(
    unknown: Exception, run_id: str, failure: BaseException | None, call: str
) -> Exception:
    """``unknown`` (the server knows no run ``run_id``), or, when this engine's start of that
    run was in flight when engine.``call`` was called and failed, the error that says so."""
    if failure is None or type(unknown) is not LookupError:  # a missing namespace stays named
        return unknown
    return LookupError(
        f"no run {run_id!r}: its start, in flight when engine.{call} was called, failed "
        f"({type(failure).__name__}: {message_of(failure)}), so no such run exists; "
        "engine.start (or run) raised that error"
    )


def _words(exc: Exception) -> str:
    """A failure to cancel a run, as telemetry names it: the error's words (a server's or a
    client's message, which may quote values) only with ``capture_payloads``, as every
    ``agentgen.*`` span and log record says a failure; a server's error is named by its gRPC
    status either way (``RPCError (UNAVAILABLE)``), which holds none."""
    capture = active().capture_payloads
    what = described(exc, capture)
    if not capture and isinstance(exc, RPCError):
        what = f"{what} ({exc.status.name})"
    return what


def _warn_not_withdrawn(run_id: str, exc: Exception) -> None:
    _LOG.warning(
        "run %r: its caller was cancelled, but cancelling the run on Temporal failed (%s); "
        "it goes on until it ends: cancel it with engine.cancel(%r)",
        run_id,
        _words(exc),
        run_id,
    )


async def _require_namespace(client: Client) -> None:
    """The server says ``NOT_FOUND`` for a namespace it lacks as for a run it does not know:
    the namespace is named first, with what to do."""
    await require_namespace(client, "TemporalEngine(namespace=...)")


async def _unknown(exc: RPCError, run_id: str, client: Client) -> Exception:
    """A run ID the server does not know, named (the server says "workflow not found"), once
    the namespace is known to exist. A start of that run in flight on this engine was waited
    for (:meth:`TemporalEngine._start_answered`); one in flight in another process cannot be,
    and reads the same (a bounded retry would slow every mistyped or expired ID down and still
    not tell "not yet" from "never"): the error says so, and what to do."""
    if exc.status != RPCStatusCode.NOT_FOUND:
        return exc
    await _require_namespace(client)
    return LookupError(
        f"no run {run_id!r} on Temporal (namespace {client.namespace!r}): check the run ID "
        "(the one engine.start returned) and that the engine uses the run's namespace; a run "
        "whose start is still in flight in another process (its engine.start has not "
        "returned) is not known to the server either: ask again once it returned"
    )


async def _usage_once_ended(handle: WorkflowHandle[Any, WorkflowResult]) -> Usage | None:
    """What a run whose caller cancelled it cost, once it ended (cancelled, or finished or
    failed before the cancellation reached it); None when it has not ended within
    :data:`USAGE_WAIT` (no worker took the cancellation) or the server cannot say."""

    async def ended() -> Usage | None:
        try:
            result = await handle.result()
        except WorkflowFailureError as exc:
            failure = _failed(exc, handle.id)
            if isinstance(failure, RunCancelledError):
                return await _cancelled_usage(handle)
            return run_usage(failure)
        except TemporalError:
            return None
        return result.usage

    try:
        return await asyncio.wait_for(ended(), USAGE_WAIT)
    except TimeoutError:
        return None


async def _cancelled_usage(handle: WorkflowHandle[Any, Any]) -> Usage | None:
    """What a cancelled run cost, as its workflow recorded it in its memo when it was
    cancelled (None: a worker of an older release ran it, or the server could not say)."""
    try:
        description = await handle.describe()
        return usage_in(await description.memo())
    except TemporalError:
        return None


def _failed(exc: WorkflowFailureError, run_id: str) -> Exception:
    """The run's failure as its client raises it, with what the run cost until then when its
    failure says (a run that failed while running; not one the server timed out or
    terminated)."""
    cause = exc.cause
    if isinstance(cause, CancelledError):
        return RunCancelledError(f"run {run_id!r} was cancelled")
    if isinstance(cause, ApplicationError):
        failure = run_failure(cause.type, cause.message, run_id)
        usage = failure_usage(cause.details)
        if usage is not None:
            record_run_usage(failure, usage)
        return failure
    return run_failure(type(cause).__name__ if cause else None, str(cause or exc), run_id)
