"""A run cancelled while its start request is still in flight (sent, not yet answered).

The server may take the cancellation before the start: it then finds no run, and the run
starts after it and goes on, unseen. The engine now cancels such a run once its start was
answered, whoever cancels it: ``engine.cancel``, or a caller of ``run``/``start`` that gave up.

The start request's flight is held by the SDK's own client interceptor seam: it goes out once
released, whatever became of its caller (as a request that already left), and is released when
the cancellation reached the server first, or else after a moment (the engine then waits for
it: the order of what reaches the server, which the assertions read from the run's history, is
the same however long the moment).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    CancelWorkflowInput,
    Client,
    Interceptor,
    OutboundInterceptor,
    StartWorkflowInput,
    WorkflowHandle,
)

from agentgen.runtime.app import Runtime
from agentgen.runtime.engines.temporal import TemporalEngine
from agentgen.runtime.engines.temporal import client as client_module
from agentgen.runtime.messages import Message
from agentgen.runtime.runs.requests import RunRequest
from agentgen.runtime.telemetry import Telemetry
from agentgen.runtime.testing import record_telemetry
from tests.engines.conftest import FAST, Harness
from tests.runtime.agents import ScriptedPlanner, answer, register

pytestmark = pytest.mark.asyncio(loop_scope="session")

#: How long a held start waits for a cancellation to overtake it before it goes out.
OVERTAKE = 1.0


class _HeldStarts(Interceptor):
    def __init__(self) -> None:
        self.in_flight = asyncio.Event()
        self.cancel_sent = asyncio.Event()
        self.release = asyncio.Event()
        self.started: asyncio.Future[Any] | None = None

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Holding(next, self)


class _Holding(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, held: _HeldStarts) -> None:
        super().__init__(next)
        self.held = held

    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        async def fly() -> WorkflowHandle[Any, Any]:
            await self.held.release.wait()
            return await super(_Holding, self).start_workflow(input)

        # The request left: it reaches the server whatever its caller does meanwhile.
        self.held.started = asyncio.ensure_future(fly())
        self.held.in_flight.set()
        return await asyncio.shield(self.held.started)

    async def cancel_workflow(self, input: CancelWorkflowInput) -> None:
        self.held.cancel_sent.set()
        try:
            await super().cancel_workflow(input)
        finally:
            self.held.release.set()  # the start, overtaken, reaches the server now


def _runtime(
    durable: Harness, held: _HeldStarts, telemetry: Telemetry | None = None
) -> tuple[Runtime, TemporalEngine]:
    assert durable.env is not None
    config = durable.env.client.config()
    config["interceptors"] = [*config.get("interceptors", ()), held]
    engine = TemporalEngine(
        client=Client(**config), task_queue=f"test-{uuid.uuid4().hex}", settings=FAST
    )
    rt = Runtime(engine=engine, telemetry=telemetry or Telemetry())
    register(rt, ScriptedPlanner([answer("ran")]))
    return rt, engine


async def _overtaken_or_later(held: _HeldStarts, pending: asyncio.Future[Any]) -> None:
    """Let the cancellation overtake the held start if it goes out without waiting for it."""
    cancel_sent = asyncio.ensure_future(held.cancel_sent.wait())
    await asyncio.wait({cancel_sent, pending}, timeout=OVERTAKE)
    cancel_sent.cancel()
    held.release.set()


async def _cancel_requested(durable: Harness, run_id: str) -> bool:
    """Whether the server holds the run, cancelled (no worker ever ran it: nothing else could
    have ended it). The run is ended either way."""
    assert durable.env is not None
    handle = durable.env.client.get_workflow_handle(run_id)
    events = [event.event_type async for event in handle.fetch_history_events()]
    with contextlib.suppress(Exception):
        await handle.terminate("test over")
    assert events[0] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED  # the start reached it
    return EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED in events


async def test_cancel_while_the_start_is_in_flight_cancels_the_run_once_started(
    durable: Harness,
) -> None:
    held = _HeldStarts()
    rt, engine = _runtime(durable, held)
    request = RunRequest("test.agent", (Message.user("go"),), run_id=f"raced-{uuid.uuid4().hex}")
    starting = asyncio.create_task(engine.start(rt, request))
    await held.in_flight.wait()
    cancelling = asyncio.create_task(engine.cancel(request.run_id))
    await _overtaken_or_later(held, cancelling)
    assert await starting == request.run_id
    await cancelling  # it said the run was cancelled: it was
    assert await _cancel_requested(durable, request.run_id)


async def test_a_caller_cancelled_while_the_start_is_in_flight_cancels_the_run(
    durable: Harness,
) -> None:
    held = _HeldStarts()
    rt, _ = _runtime(durable, held)
    run_id = f"given-up-{uuid.uuid4().hex}"
    running = asyncio.create_task(rt.client("test.agent").run("go", run_id=run_id))
    await held.in_flight.wait()
    running.cancel()
    await _overtaken_or_later(held, running)
    with pytest.raises(asyncio.CancelledError):
        await running
    assert held.started is not None
    await held.started  # the start reached the server
    assert await _cancel_requested(durable, run_id)


async def test_a_starter_cancelled_while_the_start_is_in_flight_cancels_the_run(
    durable: Harness,
) -> None:
    held = _HeldStarts()
    rt, engine = _runtime(durable, held)
    request = RunRequest("test.agent", (Message.user("go"),), run_id=f"left-{uuid.uuid4().hex}")
    starting = asyncio.create_task(engine.start(rt, request))
    await held.in_flight.wait()
    starting.cancel()
    await _overtaken_or_later(held, starting)
    with pytest.raises(asyncio.CancelledError):
        await starting
    assert held.started is not None
    await held.started
    assert await _cancel_requested(durable, request.run_id)


async def test_a_caller_cancelled_while_its_start_fails_leaves_the_run_of_that_id_alone(
    durable: Harness,
) -> None:
    """The run ID is another run's (started elsewhere): the cancelled caller's start fails, and
    its withdrawal used to cancel that other run, whose ID it shared."""
    held = _HeldStarts()
    rt, engine = _runtime(durable, held)
    run_id = f"taken-{uuid.uuid4().hex}"
    assert durable.env is not None
    other = await durable.env.client.start_workflow(
        "agentgen.run", id=run_id, task_queue=engine.task_queue
    )
    running = asyncio.create_task(rt.client("test.agent").run("go", run_id=run_id))
    await held.in_flight.wait()
    running.cancel()
    await _overtaken_or_later(held, running)
    with pytest.raises(asyncio.CancelledError):
        await running
    assert held.started is not None
    with pytest.raises(Exception, match="already"):
        await held.started  # the server refused the second start
    events = [event.event_type async for event in other.fetch_history_events()]
    await other.terminate("test over")
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED not in events


#: Far past the start wait the tests set, and never reached unless the wait is unbounded.
_GUARD = 60.0


@pytest.mark.parametrize("caller", ["run", "start"])
async def test_a_caller_cancelled_while_the_server_does_not_answer_its_start_is_not_held(
    durable: Harness, caller: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The withdrawal waited for the start request to be answered without bound: a caller
    cancelled (an ``asyncio.timeout`` around ``run``) while the server did not answer was held
    as long as it did not. The caller now waits at most ``START_WAIT``; the run is still
    cancelled once its start is answered."""
    monkeypatch.setattr(client_module, "START_WAIT", 0.1)
    record_telemetry().clear()
    held = _HeldStarts()
    rt, engine = _runtime(durable, held)
    request = RunRequest("test.agent", (Message.user("go"),), run_id=f"mute-{uuid.uuid4().hex}")
    calls = {"run": lambda: rt.run(request), "start": lambda: engine.start(rt, request)}
    calling = asyncio.ensure_future(calls[caller]())
    await held.in_flight.wait()
    calling.cancel()
    await asyncio.wait({calling}, timeout=_GUARD)
    assert calling.done()  # it was held until the start was answered, which it never was
    with pytest.raises(asyncio.CancelledError):
        await calling
    assert not held.cancel_sent.is_set()  # not sent ahead of the start: it would find no run
    # Whether the run will be cancelled is not known: its span says it was not (yet).
    span = _run_span(request.run_id)
    assert span.status.description == "withdrawal_failed (TimeoutError)"
    held.release.set()  # the server answers at last
    assert held.started is not None
    await held.started
    await asyncio.gather(*engine._withdrawing)  # the cancellation follows the start
    assert await _cancel_requested(durable, request.run_id)


class _HeldCancels(_HeldStarts):
    """Lets the start go out at once, and holds each request to cancel the run until the test
    lets the server ``answer`` it (a server that takes the request and does not answer)."""

    def __init__(self) -> None:
        super().__init__()
        self.release.set()
        self.answer = asyncio.Event()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _HoldingCancels(next, self)


class _HoldingCancels(_Holding):
    held: _HeldCancels

    async def cancel_workflow(self, input: CancelWorkflowInput) -> None:
        self.held.cancel_sent.set()
        await self.held.answer.wait()
        await self.next.cancel_workflow(input)


async def test_a_caller_cancelled_while_the_server_does_not_answer_the_cancellation_is_not_held(
    durable: Harness, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Once the start was answered, the withdrawal waited for the answer to its cancellation
    without bound: a server that did not answer held the cancelled caller as long. The caller
    now waits at most ``CANCEL_WAIT``, a warning names the run and the server, and the request
    goes on (the run is cancelled once the server answers)."""
    monkeypatch.setattr(client_module, "CANCEL_WAIT", 0.1)
    held = _HeldCancels()
    rt, engine = _runtime(durable, held)
    run_id = f"unheard-{uuid.uuid4().hex}"
    running = asyncio.create_task(rt.client("test.agent").run("go", run_id=run_id))
    await held.in_flight.wait()
    assert held.started is not None
    await held.started  # the run exists (no worker runs it: it waits)
    with caplog.at_level(logging.WARNING, logger="agentgen.run"):
        running.cancel()
        await asyncio.wait({running}, timeout=_GUARD)
        assert running.done()  # it was held for as long as the server did not answer
    with pytest.raises(asyncio.CancelledError):
        await running
    assert held.cancel_sent.is_set()
    assert durable.env is not None
    target = durable.env.client.service_client.config.target_host
    assert (
        f"run {run_id!r}: its caller was cancelled, and the Temporal server at {target!r} did "
        "not answer the request to cancel the run within 0.1 s; the caller's cancellation goes "
        f"on, and the request with it; if the run goes on, cancel it with engine.cancel({run_id!r})"
    ) in caplog.text
    held.answer.set()  # the server answers at last
    await asyncio.gather(*engine._withdrawing)
    assert await _cancel_requested(durable, run_id)


async def test_cancel_the_server_does_not_answer_is_a_timeout_naming_the_run(
    durable: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """engine.cancel waited for the server's answer to the cancellation without bound. It now
    waits at most ``CANCEL_WAIT`` and raises a ``TimeoutError`` naming the run and the server;
    called again once the server answers, it cancels the run."""
    monkeypatch.setattr(client_module, "CANCEL_WAIT", 0.1)
    held = _HeldCancels()
    rt, engine = _runtime(durable, held)
    request = RunRequest("test.agent", (Message.user("go"),), run_id=f"mute-{uuid.uuid4().hex}")
    assert await engine.start(rt, request) == request.run_id
    cancelling = asyncio.ensure_future(engine.cancel(request.run_id))
    await asyncio.wait({cancelling}, timeout=_GUARD)
    assert cancelling.done()  # it was held for as long as the server did not answer
    assert held.cancel_sent.is_set()
    assert durable.env is not None
    target = durable.env.client.service_client.config.target_host
    with pytest.raises(TimeoutError) as raised:
        await cancelling
    assert str(raised.value) == (
        f"run {request.run_id!r}: engine.cancel waited 0.1 s for the Temporal server at "
        f"{target!r} to answer the request to cancel the run, and it did not: the run may not "
        "be cancelled; check the server, then call engine.cancel again"
    )
    held.answer.set()  # the server answers again
    await engine.cancel(request.run_id)
    assert await _cancel_requested(durable, request.run_id)


class _FailingCancels(_HeldStarts):
    """Lets the start go out at once, and fails each request to cancel the run with an error
    whose message quotes a value (as a server's or a client's may)."""

    def __init__(self) -> None:
        super().__init__()
        self.release.set()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _FailingCancel(next, self)


class _FailingCancel(_Holding):
    async def cancel_workflow(self, input: CancelWorkflowInput) -> None:
        self.held.cancel_sent.set()
        raise RuntimeError(f"refused for {SECRET}")


#: Found only in the message of the error the request to cancel failed with.
SECRET = "customer-4411"


async def test_a_failed_withdrawal_is_warned_without_the_error_s_words(
    durable: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """The ``agentgen.run`` warning that a cancelled caller's run could not be cancelled
    quoted the error's message whatever the application's telemetry said; like the other
    ``agentgen.*`` log records it names the error's type, its words only with
    ``capture_payloads``."""
    held = _FailingCancels()
    rt, _ = _runtime(durable, held)
    run_id = f"unwithdrawn-{uuid.uuid4().hex}"
    running = asyncio.create_task(rt.client("test.agent").run("go", run_id=run_id))
    await held.in_flight.wait()
    assert held.started is not None
    await held.started  # the run exists (no worker runs it: it waits)
    with caplog.at_level(logging.WARNING, logger="agentgen.run"):
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    assert held.cancel_sent.is_set()
    assert (
        f"run {run_id!r}: its caller was cancelled, but cancelling the run on Temporal failed "
        f"(RuntimeError); it goes on until it ends: cancel it with engine.cancel({run_id!r})"
    ) in caplog.text
    assert SECRET not in caplog.text
    assert durable.env is not None
    with contextlib.suppress(Exception):
        await durable.env.client.get_workflow_handle(run_id).terminate("test over")


def _run_span(run_id: str) -> ReadableSpan:
    (span,) = [
        s
        for s in record_telemetry().spans("agentgen")
        if (s.attributes or {}).get("agentgen.run.id") == run_id
    ]
    return span


@pytest.mark.parametrize("capture", [False, True])
@pytest.mark.parametrize("caller", ["run", "start"])
async def test_a_failed_withdrawal_shows_on_the_run_s_span(
    durable: Harness, caller: str, capture: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """The caller's run span said only ``cancelled`` when the request to cancel the run failed:
    an operator reading traces could not tell a run that went on, unseen, from one that was
    cancelled. The span keeps ``agentgen.outcome`` = ``cancelled`` (its caller withdrew) and
    ends in error (``error.type`` ``withdrawal_failed``), with the withdrawal's error as its
    ``exception`` event (its words only with ``capture_payloads``)."""
    record_telemetry().clear()
    words = f"RuntimeError: refused for {SECRET}" if capture else "RuntimeError"
    held = _FailingCancels()
    rt, engine = _runtime(durable, held, Telemetry(capture_payloads=capture))
    run_id = f"unwithdrawn-{uuid.uuid4().hex}"
    request = RunRequest("test.agent", (Message.user("go"),), run_id=run_id)
    calls = {"run": lambda: rt.run(request), "start": lambda: engine.start(rt, request)}
    held.release.clear()  # the start is answered once its caller was cancelled
    calling = asyncio.ensure_future(calls[caller]())
    await held.in_flight.wait()
    with caplog.at_level(logging.INFO, logger="agentgen.run"):
        calling.cancel()
        held.release.set()
        with pytest.raises(asyncio.CancelledError):
            await calling
    assert held.cancel_sent.is_set()
    # The run's last line says so too (the engine's warning says what to do).
    assert "its caller was cancelled after" in caplog.text
    assert f"but cancelling the run failed ({words}): it goes on" in caplog.text
    assert f"run {run_id}: agent test.agent cancelled after" not in caplog.text
    span = _run_span(run_id)
    attributes = dict(span.attributes or {})
    assert attributes["agentgen.outcome"] == "cancelled"
    assert attributes["error.type"] == "withdrawal_failed"
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == f"withdrawal_failed ({words})"
    (event,) = [e for e in span.events if e.name == "exception"]
    assert dict(event.attributes or {})["exception.type"] == "RuntimeError"
    assert (SECRET in str(dict(event.attributes or {}))) is capture
    assert durable.env is not None
    with contextlib.suppress(Exception):
        await durable.env.client.get_workflow_handle(run_id).terminate("test over")


async def test_a_withdrawal_the_server_does_not_answer_shows_on_the_run_s_span(
    durable: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancellation the server did not answer within ``CANCEL_WAIT`` is a failed withdrawal
    too, as far as the caller knows (``TimeoutError``)."""
    monkeypatch.setattr(client_module, "CANCEL_WAIT", 0.1)
    record_telemetry().clear()
    held = _HeldCancels()
    rt, engine = _runtime(durable, held)
    run_id = f"unheard-{uuid.uuid4().hex}"
    running = asyncio.create_task(rt.client("test.agent").run("go", run_id=run_id))
    await held.in_flight.wait()
    assert held.started is not None
    await held.started
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    span = _run_span(run_id)
    assert dict(span.attributes or {})["error.type"] == "withdrawal_failed"
    assert span.status.description == "withdrawal_failed (TimeoutError)"
    held.answer.set()  # the server answers at last
    await asyncio.gather(*engine._withdrawing)
    assert await _cancel_requested(durable, run_id)


async def test_a_withdrawn_run_s_span_says_only_cancelled(durable: Harness) -> None:
    """A cancellation that reached the server leaves the span's status unset, as before."""
    record_telemetry().clear()
    held = _HeldCancels()
    held.answer.set()
    rt, _ = _runtime(durable, held)
    run_id = f"withdrawn-{uuid.uuid4().hex}"
    running = asyncio.create_task(rt.client("test.agent").run("go", run_id=run_id))
    await held.in_flight.wait()
    assert held.started is not None
    await held.started
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    span = _run_span(run_id)
    assert dict(span.attributes or {})["agentgen.outcome"] == "cancelled"
    assert "error.type" not in (span.attributes or {})
    assert span.status.status_code == StatusCode.UNSET
    assert await _cancel_requested(durable, run_id)
