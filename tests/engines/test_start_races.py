"""Calls about one run made while this engine's start of that run is still in flight.

``engine.result``, ``engine.pending_confirmations`` and ``engine.confirm`` asked the server at
once: before the start request was answered it knows no such run, and they raised "no run ... on
Temporal: check the run ID" for a run that was starting (and then ran). They now wait for the
start this engine has in flight, as ``engine.cancel`` does (tests/engines/test_cancel_races.py):
bounded by ``START_WAIT``, and a start that failed is named in their ``LookupError``.

The start request is held with the SDK's client interceptor, as in the cancel races: it goes
out once any request about the run (a describe, a query, a history fetch) reached the server
first, or else after a moment (the engine then waits for it; the outcome is the same however
long the moment).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from temporalio.client import (
    DescribeWorkflowInput,
    FetchWorkflowHistoryEventsInput,
    OutboundInterceptor,
    QueryWorkflowInput,
    StartWorkflowInput,
    WorkflowHandle,
)
from temporalio.service import RPCError, RPCStatusCode

from agentgen.runtime.engines.temporal import TemporalEngine
from agentgen.runtime.engines.temporal import client as client_module
from agentgen.runtime.messages import Message
from agentgen.runtime.runs.requests import RunRequest
from tests.engines.conftest import Harness
from tests.engines.test_cancel_races import (
    OVERTAKE,
    _cancel_requested,
    _HeldStarts,
    _Holding,
    _runtime,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")


class _HeldRunStarts(_HeldStarts):
    """Holds the start request until a request about the run reached the server (or the
    test releases it); with ``fail``, the start fails with it once released."""

    def __init__(self, fail: Exception | None = None) -> None:
        super().__init__()
        self.fail = fail
        self.looked = asyncio.Event()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Looking(next, self)


class _Looking(_Holding):
    held: _HeldRunStarts

    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        fail = self.held.fail
        if fail is None:
            return await super().start_workflow(input)

        async def fly() -> WorkflowHandle[Any, Any]:
            await self.held.release.wait()
            raise fail

        self.held.started = asyncio.ensure_future(fly())
        self.held.in_flight.set()
        return await asyncio.shield(self.held.started)

    def _looked(self) -> None:
        self.held.looked.set()
        self.held.release.set()  # the start, overtaken, reaches the server now

    async def describe_workflow(self, input: DescribeWorkflowInput) -> Any:
        try:
            return await super().describe_workflow(input)
        finally:
            self._looked()

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        try:
            return await super().query_workflow(input)
        finally:
            self._looked()

    def fetch_workflow_history_events(self, input: FetchWorkflowHistoryEventsInput) -> Any:
        return _Releasing(super().fetch_workflow_history_events(input), self._looked)


class _Releasing:
    """A history fetch that releases the held start once its first page was answered."""

    def __init__(self, events: Any, looked: Callable[[], None]) -> None:
        self.events = events
        self.looked = looked

    def __aiter__(self) -> _Releasing:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.events.__anext__()
        finally:
            self.looked()


async def _released_once_looked_or_later(held: _HeldRunStarts, call: asyncio.Task[Any]) -> None:
    looked = asyncio.ensure_future(held.looked.wait())
    await asyncio.wait({looked, call}, timeout=OVERTAKE)
    looked.cancel()
    held.release.set()


def _request(run_id: str) -> RunRequest:
    return RunRequest("test.agent", (Message.user("go"),), run_id=run_id)


async def test_result_while_the_start_is_in_flight_waits_for_the_run(durable: Harness) -> None:
    held = _HeldRunStarts()
    rt, engine = _runtime(durable, held)
    request = _request(f"early-{uuid.uuid4().hex}")
    async with durable.serving(rt):
        starting = asyncio.create_task(engine.start(rt, request))
        await held.in_flight.wait()
        waiting = asyncio.create_task(engine.result(rt, request.run_id))
        await _released_once_looked_or_later(held, waiting)
        assert await starting == request.run_id
        outcome = await waiting  # it used to raise: no run on Temporal
    assert (outcome.run_id, outcome.final_text) == (request.run_id, "ran")


async def test_pending_confirmations_while_the_start_is_in_flight_reads_the_run(
    durable: Harness,
) -> None:
    held = _HeldRunStarts()
    rt, engine = _runtime(durable, held)
    request = _request(f"early-{uuid.uuid4().hex}")
    async with durable.serving(rt):
        starting = asyncio.create_task(engine.start(rt, request))
        await held.in_flight.wait()
        asking = asyncio.create_task(engine.pending_confirmations(request.run_id))
        await _released_once_looked_or_later(held, asking)
        await starting
        assert await asking == []  # the run asks for none; it used to raise: no run
        await engine.result(rt, request.run_id)


async def test_confirm_while_the_start_is_in_flight_answers_about_the_run(
    durable: Harness,
) -> None:
    held = _HeldRunStarts()
    rt, engine = _runtime(durable, held)
    request = _request(f"early-{uuid.uuid4().hex}")
    async with durable.serving(rt):
        starting = asyncio.create_task(engine.start(rt, request))
        await held.in_flight.wait()
        deciding = asyncio.create_task(engine.confirm(request.run_id, "c0_x", approved=True))
        await _released_once_looked_or_later(held, deciding)
        await starting
        # The run exists and waits on no such call: not "no run ... check the run ID".
        with pytest.raises(LookupError, match=r"has no confirmation pending for 'c0_x'"):
            await deciding
        await engine.result(rt, request.run_id)


_CALLS: dict[str, Callable[[TemporalEngine, Any, str], Awaitable[object]]] = {
    "result": lambda engine, rt, run_id: engine.result(rt, run_id),
    "pending_confirmations": lambda engine, rt, run_id: engine.pending_confirmations(run_id),
    "confirm": lambda engine, rt, run_id: engine.confirm(run_id, "c0_x", approved=True),
}

#: engine.cancel waits for a start in flight too (test_cancel_races.py), within the same bound.
_BOUNDED = {**_CALLS, "cancel": lambda engine, rt, run_id: engine.cancel(run_id)}


@pytest.mark.parametrize("call", sorted(_BOUNDED))
async def test_a_call_while_the_start_fails_names_the_start_s_error(
    durable: Harness, call: str
) -> None:
    failure = RPCError("the server is going away", RPCStatusCode.UNAVAILABLE, b"")
    held = _HeldRunStarts(fail=failure)
    rt, engine = _runtime(durable, held)
    run_id = f"failed-{uuid.uuid4().hex}"
    starting = asyncio.create_task(engine.start(rt, _request(run_id)))
    await held.in_flight.wait()
    asking = asyncio.create_task(_BOUNDED[call](engine, rt, run_id))
    await _released_once_looked_or_later(held, asking)
    with pytest.raises(RPCError, match="going away"):
        await starting
    with pytest.raises(LookupError) as raised:
        await asking
    assert str(raised.value) == (
        f"no run {run_id!r}: its start, in flight when engine.{call} was called, failed "
        "(RPCError: the server is going away), so no such run exists; engine.start (or run) "
        "raised that error"
    )


@pytest.mark.parametrize("call", sorted(_BOUNDED))
async def test_the_wait_for_a_start_the_server_does_not_answer_is_bounded(
    durable: Harness, call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "START_WAIT", 0.1)
    held = _HeldRunStarts()
    rt, engine = _runtime(durable, held)
    run_id = f"unanswered-{uuid.uuid4().hex}"
    starting = asyncio.create_task(engine.start(rt, _request(run_id)))
    await held.in_flight.wait()
    assert durable.env is not None
    try:
        with pytest.raises(TimeoutError) as raised:
            await _BOUNDED[call](engine, rt, run_id)
        assert str(raised.value).startswith(
            f"run {run_id!r}: engine.{call} waited 0.1 s for the run's start request (engine.start"
            " or run, in flight on this engine) to be answered, and it was not: the Temporal"
            f" server at {durable.env.client.service_client.config.target_host!r} does not"
            " answer"
        )
        assert not held.looked.is_set()  # nothing was asked of the server meanwhile
    finally:
        held.release.set()
        await starting
        with contextlib.suppress(Exception):
            await durable.env.client.get_workflow_handle(run_id).terminate("test over")


async def test_another_process_asking_about_a_run_still_starting_is_told_to_ask_again(
    durable: Harness,
) -> None:
    """A documented limit: only the engine that starts a run knows its start is in flight.
    Another process (another engine on the same server) asking meanwhile hears that the
    server knows no such run, as for a mistyped ID; the error now says that a start still in
    flight elsewhere reads the same, and to ask again once it returned (it did not: it said to
    check the run ID). Once the start returned, the other process reaches the run."""
    held = _HeldStarts()  # held until the test releases it
    rt, engine = _runtime(durable, held)
    assert durable.env is not None
    other = TemporalEngine(client=durable.env.client, task_queue=engine.task_queue)
    request = RunRequest("test.agent", (Message.user("go"),), run_id=f"elsewhere-{uuid.uuid4()}")
    starting = asyncio.create_task(engine.start(rt, request))
    await held.in_flight.wait()
    hint = (
        "a run whose start is still in flight in another process (its engine.start has not "
        "returned) is not known to the server either: ask again once it returned"
    )
    for call in (lambda: other.result(rt, request.run_id), lambda: other.cancel(request.run_id)):
        with pytest.raises(LookupError, match=f"^no run {request.run_id!r} on Temporal") as e:
            await call()
        assert hint in str(e.value)
    held.release.set()
    assert await starting == request.run_id
    await other.cancel(request.run_id)  # the run exists now (no worker runs it)
    assert await _cancel_requested(durable, request.run_id)
