"""The provider SDK when things go wrong: results too large for the registry, outages shorter
than the lease, a stop racing a renewal, options the API cannot carry, and clocks that do not
agree with the registry's. Each against a live registry on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
import types
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

import agentgen.runtime.registry.http_client as http_client_module
import agentgen.runtime.registry.provider as provider_module
from agentgen.runtime import OutcomeUnknownError, ToolContext
from agentgen.runtime.contracts.wire import fingerprint
from agentgen.runtime.registry import api
from agentgen.runtime.registry.client import CallOutcome, CallRef, RegistryError, ToolCallMeta
from agentgen.runtime.registry.http_client import HttpRegistryClient, HttpResultStream
from agentgen.runtime.registry.provider import (
    ProviderSetupError,
    ServeOptions,
    ServeReport,
    serve_toolset,
)
from agentgen.runtime.registry.service import ServiceConfig
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from tests.registry.conftest import FAST, Running, running_registry
from tests.registry.helpers import echo_toolset

OPTIONS = ServeOptions(
    provider_id="p1",
    lease_seconds=5,
    claim_wait_seconds=0.3,
    drain_seconds=5,
    handle_signals=False,
)


class Echo:
    """Answers ``{"said": text}``; ``big:N`` answers N characters of ``x`` (``quotes:N``, of
    ``"``), ``fail:N`` raises with a message of N characters, ``lost`` cannot tell whether it
    ran, ``wait`` waits for ``release``, ``nap`` a moment."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.release = asyncio.Event()

    async def execute(self, tool_id: str, payload: Any, context: ToolContext) -> Any:
        text: str = payload["text"]
        self.ran.append(text)
        kind, _, size = text.partition(":")
        if kind == "wait":
            await self.release.wait()
        if kind == "nap":
            await asyncio.sleep(0.05)  # a tool that takes a moment
        if kind == "fail":
            raise RuntimeError("y" * int(size))
        if kind == "lost":
            raise OutcomeUnknownError("MCP tool 'say': the session lost the answer to the call")
        if kind == "big":
            return {"said": "x" * int(size)}
        if kind == "quotes":
            return {"said": '"' * int(size)}
        return {"said": text}


@asynccontextmanager
async def serving(
    url: str, impl: Echo, client: Any = None, options: ServeOptions = OPTIONS
) -> AsyncIterator[tuple[asyncio.Task[ServeReport], asyncio.Event]]:
    client = client or HttpRegistryClient(url)
    stop, registered = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        serve_toolset(
            client,
            echo_toolset(),
            impl,
            revision="r1",
            options=options,
            stop=stop,
            on_registered=lambda token: registered.set(),
        )
    )
    await asyncio.wait_for(registered.wait(), 10)
    try:
        yield task, stop
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), 30)
        await client.aclose()


async def call(
    url: str, text: str, *, poll_ms: int = 1_000, client: HttpRegistryClient | None = None
) -> CallOutcome:
    consumer = client or HttpRegistryClient(url, call_wait_ms=0)
    try:
        ref = await admit(consumer, text)
        return await HttpResultStream(consumer, poll_ms=poll_ms).await_result(ref)
    finally:
        if client is None:
            await consumer.aclose()


async def admit(client: HttpRegistryClient, text: str) -> CallRef:
    """A call of echo.say with ``text``, admitted through ``client`` (its outcome not awaited)."""
    resolved = await client.resolve_toolset("echo")
    return await client.call_resolved_tool(
        toolset="echo",
        tool="echo.say",
        payload_json=json.dumps({"text": text}),
        meta=ToolCallMeta(run_id=uuid.uuid4().hex, tool_call_id="c1"),
        expected_registration_token=resolved.registration_token,
    )


async def until(condition: Callable[[], bool]) -> None:
    """Wait until ``condition`` holds (failing, rather than hanging, after a generous bound)."""

    async def holds() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(holds(), 30)


async def register_next_revision(url: str) -> None:
    """Register revision r2 of the echo toolset without waiting: refused
    (``admission_blocked``) while a lease of r1 is live."""
    toolset = echo_toolset()
    async with HttpRegistryClient(url) as other:
        await other.register(
            toolset,
            schema_fingerprint=fingerprint(toolset),
            revision="r2",
            provider_id="p2",
            incarnation_id="i2",
            lease_ms=1_000,
        )


@pytest.fixture
async def registry() -> AsyncIterator[Running]:
    async with running_registry(SQLiteStore(":memory:")) as running:
        yield running


# --- results too large ---------------------------------------------------------------------


class HeldBatches(HttpRegistryClient):
    """Records the encoded size of every batch of completions; the first waits until the
    executor ran every call, so that the others finish while it is on its way."""

    def __init__(self, url: str, impl: Echo, calls: int) -> None:
        super().__init__(url)
        self.impl, self.calls = impl, calls
        self.batches: list[tuple[int, int]] = []

    async def complete_many(self, toolset: str, provider_id: str, incarnation_id: str,
                            completions: Any) -> Any:  # fmt: skip
        size = sum(len(c.model_dump_json()) for c in completions)
        self.batches.append((len(completions), size))
        while len(self.batches) == 1 and len(self.impl.ran) < self.calls:
            await asyncio.sleep(0.01)
        for _ in range(20):
            await asyncio.sleep(0)  # the calls that ran queue their completions
        return await super().complete_many(toolset, provider_id, incarnation_id, completions)


async def test_results_that_each_fit_are_never_sent_together_past_the_body_limit(
    registry: Running,
) -> None:
    """Four 600 kB results finishing together used to go in one /complete_many: refused
    whole (413 body_too_large), counted lost, and their consumers waited for the call's
    deadline to get outcome_unknown."""
    impl = Echo()
    provider = HeldBatches(registry.url, impl, 4)
    async with serving(registry.url, impl, provider) as (task, stop):
        outcomes = await asyncio.gather(*(call(registry.url, "big:600000") for _ in range(4)))
        stop.set()
        report = await asyncio.shield(task)
    assert [o.status for o in outcomes] == ["completed"] * 4
    assert all(len(json.loads(o.payload_json)["said"]) == 600_000 for o in outcomes)
    assert (report.completed, report.lost) == (4, 0)
    assert sum(count for count, _ in provider.batches) == 4
    assert all(size <= 1 << 20 for _, size in provider.batches), provider.batches


async def test_a_batch_refused_for_its_size_is_sent_again_one_result_at_a_time() -> None:
    """A registry with a smaller body limit refuses a batch whose results fit it one by one:
    each is sent again alone, instead of all being lost."""
    config = ServiceConfig(max_body_bytes=300_000)
    async with running_registry(SQLiteStore(":memory:"), config=config) as small:
        impl = Echo()
        provider = HeldBatches(small.url, impl, 3)
        async with serving(small.url, impl, provider) as (task, stop):
            outcomes = await asyncio.gather(*(call(small.url, "big:200000") for _ in range(3)))
            stop.set()
            report = await asyncio.shield(task)
    assert [o.status for o in outcomes] == ["completed"] * 3
    assert (report.completed, report.lost) == (3, 0)
    assert (2, pytest.approx(400_000, rel=0.01)) in provider.batches  # the batch refused
    assert [count for count, _ in provider.batches].count(1) == 3  # then one at a time


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("big:1100000", len(json.dumps({"said": "x" * 1_100_000}, separators=(",", ":")))),
        # Under the registry's 1,000,000 characters, but twice that once escaped into the
        # request's JSON, past its body limit (1 MiB):
        ("quotes:300000", len(json.dumps({"said": '"' * 300_000}, separators=(",", ":")))),
    ],
)
@pytest.mark.parametrize("batching", [True, False])
async def test_a_result_too_large_for_the_registry_fails_its_call_saying_why(
    registry: Running, text: str, size: int, batching: bool
) -> None:
    """Such a result raised a pydantic ValidationError inside the worker task ("Task exception
    was never retrieved"), or was refused; either way the call stayed claimed until its
    deadline, and its consumer got outcome_unknown."""
    inner = HttpRegistryClient(registry.url)
    client: Any = inner if batching else OneByOne(inner)
    async with serving(registry.url, Echo(), client) as (task, stop):
        outcome = await call(registry.url, text)
        stop.set()
        report = await asyncio.shield(task)
    assert outcome.status == "failed"
    result = json.loads(outcome.payload_json)
    assert (result["code"], result["size"]) == ("result_too_large", size)
    assert outcome.message.startswith(
        "result_too_large: tool echo.say of toolset 'echo' answered call "
    )
    assert f"with a result of {size} characters, too large for the registry" in outcome.message
    assert (report.failed, report.lost) == (1, 0)


class OneByOne:
    """A provider client without ``complete_many``."""

    def __init__(self, inner: HttpRegistryClient) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "complete_many":
            raise AttributeError(name)
        return getattr(self.inner, name)


async def test_a_huge_error_message_is_cut_to_what_the_registry_takes(registry: Running) -> None:
    async with serving(registry.url, Echo()) as (task, stop):
        outcome = await call(registry.url, "fail:2000000")
        stop.set()
        report = await asyncio.shield(task)
    assert outcome.status == "failed"
    assert len(outcome.message) == 4096
    lead = "execution_failed: echo.say failed: RuntimeError: "
    assert outcome.message.startswith(f"{lead}yyy")
    assert outcome.message.endswith(f"y [cut: {len(lead) + 2_000_000} characters]")
    assert json.loads(outcome.payload_json)["message"] == outcome.message
    assert (report.failed, report.lost) == (1, 0)


async def test_an_executor_that_cannot_tell_whether_it_ran_says_so_to_the_consumer(
    registry: Running,
) -> None:
    # Was execution_failed: the consumer's model read tool_failed and ran the call again.
    async with serving(registry.url, Echo()) as (task, stop):
        outcome = await call(registry.url, "lost")
        stop.set()
        report = await asyncio.shield(task)
    assert outcome.status == "failed"
    assert json.loads(outcome.payload_json)["code"] == "outcome_unknown"
    assert outcome.message == (
        "outcome_unknown: echo.say: MCP tool 'say': the session lost the answer to the call"
    )
    assert (report.failed, report.lost) == (1, 0)


async def test_a_fault_completing_a_call_is_logged_naming_it(
    registry: Running, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that fails in an unexpected way used to end the worker task with "Task
    exception was never retrieved", naming no toolset or call."""

    class Broken(OneByOne):
        async def complete(self, *args: Any, **kwargs: Any) -> None:
            raise ValueError("the client broke")

    caplog.set_level(logging.ERROR, "agentgen.registry.provider")
    consumer = HttpRegistryClient(registry.url, call_wait_ms=0)
    async with serving(registry.url, Echo(), Broken(HttpRegistryClient(registry.url))) as (
        task,
        stop,
    ):
        resolved = await consumer.resolve_toolset("echo")
        ref = await consumer.call_resolved_tool(
            toolset="echo",
            tool="echo.say",
            payload_json='{"text": "hi"}',
            meta=ToolCallMeta(run_id="r", tool_call_id="c"),
            expected_registration_token=resolved.registration_token,
        )
        await until(lambda: bool(caplog.records))
        stop.set()
        report = await asyncio.shield(task)
    await consumer.aclose()
    [record] = [r for r in caplog.records if r.name == "agentgen.registry.provider"]
    assert record.getMessage() == (
        f"provider 'p1' of toolset 'echo': call {ref.tool_use_id} of tool echo.say could not be "
        "completed; the registry ends it when its deadline passes"
    )
    assert record.exc_info is not None and str(record.exc_info[1]) == "the client broke"
    assert report.lost == 1


# --- the lease -----------------------------------------------------------------------------


class FlakyRenewals:
    """A provider client whose first ``failures`` renewals fail as an unreachable registry
    would (its own retries spent); ``renewed`` is set by the first that succeeds."""

    def __init__(self, inner: HttpRegistryClient, failures: int) -> None:
        self.inner = inner
        self.failures = failures
        self.attempts = 0
        self.renewed = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def renew(self, *args: Any) -> int:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise RegistryError("service_unavailable", "registry unreachable (test)")
        expires: int = await self.inner.renew(*args)
        self.renewed.set()
        return expires


async def test_an_outage_shorter_than_the_lease_keeps_the_provider_serving(
    registry: Running,
) -> None:
    """After a failed renewal the SDK waited a whole third of the lease before trying again:
    four failures in a row took it past the lease's expiry, and the provider stopped for good
    (lease_lost) although the registry was back long before."""
    client = FlakyRenewals(HttpRegistryClient(registry.url), failures=4)
    options = dataclasses.replace(OPTIONS, lease_seconds=6)
    async with serving(registry.url, Echo(), client, options) as (task, stop):
        await asyncio.wait_for(client.renewed.wait(), 30)
        assert not task.done()
        outcome = await call(registry.url, "still there")
        stop.set()
        report = await asyncio.shield(task)
    assert outcome.status == "completed"
    assert (report.reason, client.attempts > 4) == ("stopped", True)


async def test_a_lease_no_renewal_reaches_in_time_is_lost_with_a_warning(
    registry: Running, caplog: pytest.LogCaptureFixture
) -> None:
    """Each renewal is bounded by the time left on the lease; a lost lease is said on the
    ``agentgen.registry`` logger (it used to stop the provider without a word)."""

    class Unanswered(FlakyRenewals):
        async def renew(self, *args: Any) -> int:
            self.attempts += 1
            await asyncio.Event().wait()  # the request is never answered
            raise AssertionError("unreachable")

    caplog.set_level(logging.WARNING, "agentgen.registry.provider")
    client = Unanswered(HttpRegistryClient(registry.url), failures=0)
    options = dataclasses.replace(OPTIONS, lease_seconds=1)
    async with serving(registry.url, Echo(), client, options) as (task, _):
        report = await asyncio.wait_for(asyncio.shield(task), 30)
    assert report.reason == "lease_lost"
    lost = [r.getMessage() for r in caplog.records if "lost its lease" in r.getMessage()]
    assert len(lost) == 1, caplog.records
    assert lost[0].startswith(
        f"provider 'p1' (incarnation {report.incarnation_id}) of toolset 'echo' lost its lease: "
    )
    assert lost[0].endswith(
        "it stops serving and does not register again (calls it held end outcome_unknown); "
        "start a new provider process to serve the toolset again"
    )


async def test_a_renewal_on_its_way_when_stopping_does_not_turn_the_drain_into_a_lost_lease(
    registry: Running,
) -> None:
    """The registry refuses to renew a draining lease (provider_lease_lost): a renewal that
    reached it after the drain made a clean stop report lease_lost and skip the release, so
    the next revision waited (admission_blocked) for the whole drain period."""
    renewing, drained, settled = asyncio.Event(), asyncio.Event(), asyncio.Event()

    class SlowRenewals(FlakyRenewals):
        async def renew(self, *args: Any) -> int:
            renewing.set()
            try:
                await drained.wait()  # on its way until the provider drained
                return await super().renew(*args)
            finally:
                settled.set()

        async def drain(self, *args: Any) -> int:
            expires: int = await self.inner.drain(*args)
            drained.set()
            return expires

    class Held(Echo):
        async def execute(self, tool_id: str, payload: Any, context: ToolContext) -> Any:
            self.ran.append("held")
            await settled.wait()  # in hand until the renewal has its answer, or none
            return {"said": "held"}

    impl = Held()
    client = SlowRenewals(HttpRegistryClient(registry.url), failures=0)
    options = dataclasses.replace(OPTIONS, lease_seconds=3, drain_seconds=30)
    async with serving(registry.url, impl, client, options) as (task, stop):
        held = asyncio.create_task(call(registry.url, "held"))
        await until(lambda: bool(impl.ran))
        await asyncio.wait_for(renewing.wait(), 10)
        stop.set()
        report = await asyncio.shield(task)
        outcome = await held
    assert outcome.status == "completed"
    assert report.reason == "stopped"
    await register_next_revision(registry.url)  # released: a new revision is admitted at once


class RecordedRetry:
    """Records each backoff it is asked for; waits none."""

    def __init__(self) -> None:
        self.attempts: list[int] = []

    def delay(self, attempt: int) -> float:
        self.attempts.append(attempt)
        return 0.0


async def test_failed_claims_back_off_exponentially_and_start_over_after_one_succeeds(
    registry: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claims were retried every 0.5 s, constant, however long the registry stayed away."""
    recorded = RecordedRetry()
    monkeypatch.setattr(provider_module, "_CLAIM_RETRY", recorded)
    script = ["fail", "fail", "fail", "ok", "fail", "fail", "stop"]

    class Scripted(FlakyRenewals):
        async def claim(self, *args: Any, **kwargs: Any) -> list[api.ClaimedCallBody]:
            step = script.pop(0) if script else "stop"
            if step == "stop":
                stop.set()
            if step == "fail":
                raise RegistryError("service_unavailable", "registry unreachable (test)")
            return []

    client = Scripted(HttpRegistryClient(registry.url), failures=0)
    async with serving(registry.url, Echo(), client) as (task, stop):
        await asyncio.wait_for(asyncio.shield(task), 10)
    assert recorded.attempts == [0, 1, 2, 0, 1]


# --- options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "bounds"),
    [
        ("concurrency", 300, "a whole number from 1 to 256 (the most calls one claim takes)"),
        ("concurrency", 0, "a whole number from 1 to 256 (the most calls one claim takes)"),
        ("claim_wait_seconds", 61.0, "0 to 60 seconds (the longest wait a claim may ask for)"),
        ("lease_seconds", 0, "0.001 to 2.14748e+06 seconds"),
        ("drain_seconds", -1.0, "0 to 600 seconds (the longest drain the registry allows)"),
        # The registry refuses a drain longer than 10 minutes: the provider never drained.
        ("drain_seconds", 900, "0 to 600 seconds (the longest drain the registry allows)"),
        ("provider_id", "web 1", "1 to 128 letters, digits or ._:@+- starting with a letter"),
        ("register_timeout_seconds", float("nan"), "0 seconds or more"),
    ],
)
async def test_options_the_api_cannot_carry_are_refused_before_publishing(
    registry: Running, option: str, value: Any, bounds: str
) -> None:
    """concurrency=300 or claim_wait_seconds=61 published the toolset, then crashed on the
    first claim with a bare pydantic ValidationError (the lease left behind);
    concurrency=0 published and then never claimed anything."""
    client = HttpRegistryClient(registry.url)
    options = dataclasses.replace(OPTIONS, **{option: value})
    with pytest.raises(ProviderSetupError) as refused:
        await asyncio.wait_for(
            serve_toolset(client, echo_toolset(), Echo(), revision="r1", options=options), 10
        )
    await client.aclose()
    assert str(refused.value).startswith(
        f"provider of toolset 'echo': ServeOptions.{option}={value!r} is out of bounds: {bounds}"
    )
    async with HttpRegistryClient(registry.url) as reader:
        assert await reader.list_toolsets() == []  # nothing was published


class RefusingDrains(HttpRegistryClient):
    async def drain(self, *args: Any) -> int:
        raise RegistryError("validation_error", "settle duration must be in [0, 600000]")


async def test_a_drain_the_registry_refuses_is_said(
    registry: Running, caplog: pytest.LogCaptureFixture
) -> None:
    # Refused silently, the provider stopped claiming while the registry kept routing to it.
    caplog.set_level(logging.WARNING, logger="agentgen.registry.provider")
    async with serving(registry.url, Echo(), RefusingDrains(registry.url)) as (task, stop):
        stop.set()
        report = await asyncio.wait_for(asyncio.shield(task), 10)
    assert report.reason == "stopped"
    (warning,) = [r for r in caplog.records if "drain" in r.getMessage()]
    assert "the registry did not take its drain (validation_error: settle duration" in (
        warning.getMessage()
    )


# --- clocks --------------------------------------------------------------------------------


def skewed(seconds: float) -> types.SimpleNamespace:
    """The ``time`` module as a host whose wall clock is ``seconds`` off would see it."""
    return types.SimpleNamespace(
        time=lambda: time.time() + seconds, monotonic=time.monotonic, sleep=time.sleep
    )


async def test_a_provider_whose_clock_is_ahead_runs_calls_to_the_registrys_deadline(
    registry: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider measured the registry's deadline with its own clock: 25 s ahead (the
    call timeout is 20 s), it failed every call at once with ``timeout``."""
    monkeypatch.setattr(provider_module, "time", skewed(25))
    monkeypatch.setattr(http_client_module, "time", skewed(25))
    async with serving(registry.url, Echo()) as (task, stop):
        outcome = await call(registry.url, "nap")
        stop.set()
        await asyncio.shield(task)
    assert (outcome.status, json.loads(outcome.payload_json)) == ("completed", {"said": "nap"})


async def test_a_provider_whose_clock_is_behind_stops_a_tool_at_the_registrys_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """25 s behind, it let a tool run 25 s past the deadline (its result then refused)."""
    limits = dataclasses.replace(FAST, call_timeout_ms=3_000)
    async with running_registry(SQLiteStore(":memory:"), limits=limits) as short:
        monkeypatch.setattr(provider_module, "time", skewed(-25))
        impl = Echo()
        async with serving(short.url, impl) as (task, stop):
            outcome = await call(short.url, "wait")
            stop.set()
            report = await asyncio.shield(task)
    assert outcome.status in ("failed", "outcome_unknown")
    assert outcome.status == "outcome_unknown" or outcome.message.startswith("timeout: ")
    assert report.failed + report.lost == 1  # ended by the SDK, not by the drain


async def test_a_consumer_whose_clock_is_ahead_waits_for_a_running_call(
    registry: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A consumer 6 minutes ahead (past the call timeout and result retention) declared
    outcome_unknown on the first pending answer of a call that was running fine."""
    impl = Echo()
    async with serving(registry.url, impl) as (task, stop):
        monkeypatch.setattr(http_client_module, "time", skewed(360))
        consumer = HttpRegistryClient(registry.url, call_wait_ms=0)
        waiting = asyncio.create_task(call(registry.url, "wait", poll_ms=50, client=consumer))
        await until(lambda: bool(impl.ran))
        for _ in range(3):  # a few pending answers
            await asyncio.sleep(0.1)
        assert not waiting.done()
        impl.release.set()
        outcome = await waiting
        await consumer.aclose()
        stop.set()
        await asyncio.shield(task)
    assert outcome.status == "completed"


def test_before_any_answer_the_registry_clock_is_the_hosts_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A registry too old to send its clock leaves the client measuring with its own, as
    before."""
    monkeypatch.setattr(
        http_client_module,
        "time",
        types.SimpleNamespace(time=lambda: 1_000.0, monotonic=time.monotonic),
    )
    client = HttpRegistryClient("http://127.0.0.1:1")
    assert client.registry_time_ms() == 1_000_000.0
