"""How the provider SDK claims calls when claims fail or come back empty, and what it leaves
behind when serving ends early: against a live registry on 127.0.0.1."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

import agentgen.runtime.registry.provider as provider_module
from agentgen.runtime.registry import api
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.http_client import HttpRegistryClient, RetryPolicy
from agentgen.runtime.registry.provider import serve_toolset
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from tests.registry.conftest import Running, running_registry
from tests.registry.helpers import echo_toolset
from tests.registry.test_provider_resilience import (
    OPTIONS,
    Echo,
    FlakyRenewals,
    RecordedRetry,
    call,
    register_next_revision,
    serving,
)


@pytest.fixture
async def registry() -> AsyncIterator[Running]:
    async with running_registry(SQLiteStore(":memory:")) as running:
        yield running


# --- a claim whose answers were lost ---------------------------------------------------------


class LoseClaimAnswers(httpx2.AsyncBaseTransport):
    """Forwards every request; the answers to the first ``lose`` claims that took calls are
    lost (the registry took the calls, the reply never came back). Records each claim's
    operation ID."""

    def __init__(self, lose: int) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.lose = lose
        self.operations: list[str] = []
        self.lost: list[str] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path.endswith("/providers/claim"):
            operation = json.loads(request.content)["claim_operation_id"]
            self.operations.append(operation)
            await response.aread()
            if len(self.lost) < self.lose and json.loads(response.content)["calls"]:
                self.lost.append(operation)
                raise httpx2.ReadError("connection reset by peer (test)")
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_claim_whose_answers_were_lost_is_asked_again_under_the_same_operation(
    registry: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK drew a new claim operation ID after a claim that failed: the calls the registry
    had given the first operation (whose every answer was lost) were replayed only to that
    operation, stayed claimed in this live lease's name, and never ran; the consumer waited
    until the call's deadline."""
    monkeypatch.setattr(provider_module, "_CLAIM_RETRY", RecordedRetry())
    transport = LoseClaimAnswers(lose=2)  # both attempts of the client (one retry)
    client = HttpRegistryClient(
        registry.url, transport=transport, retry=RetryPolicy(max_retries=1, backoff_base=0.0)
    )
    impl = Echo()
    async with serving(registry.url, impl, client):
        outcome = await asyncio.wait_for(call(registry.url, "hello"), 30)
    assert (outcome.status, json.loads(outcome.payload_json)) == ("completed", {"said": "hello"})
    assert impl.ran == ["hello"]
    lost = transport.lost[0]
    assert transport.lost == [lost, lost]
    # Asked again under the operation that took the call, which its replay handed over.
    following = transport.operations[transport.operations.index(lost) + 2]
    assert following == lost


# --- empty claims ----------------------------------------------------------------------------


class TimedClaims(FlakyRenewals):
    """Records when each claim was sent; stops serving after ``claims`` of them."""

    def __init__(self, inner: HttpRegistryClient, claims: int, stop: asyncio.Event) -> None:
        super().__init__(inner, failures=0)
        self.claims, self.stop = claims, stop
        self.sent: list[float] = []

    async def claim(self, *args: Any, **kwargs: Any) -> list[api.ClaimedCallBody]:
        self.sent.append(time.monotonic())
        if len(self.sent) >= self.claims:
            self.stop.set()
        calls: list[api.ClaimedCallBody] = await self.inner.claim(*args, **kwargs)
        return calls


async def test_an_idle_provider_that_claims_without_waiting_pauses_between_claims(
    registry: Running,
) -> None:
    """With claim_wait_seconds=0 an idle provider claimed again as soon as each empty answer
    came: 1,609 claims in 2 seconds."""
    stop = asyncio.Event()
    client = TimedClaims(HttpRegistryClient(registry.url), claims=4, stop=stop)
    options = dataclasses.replace(OPTIONS, claim_wait_seconds=0)
    report = await asyncio.wait_for(
        serve_toolset(client, echo_toolset(), Echo(), revision="r1", options=options, stop=stop),
        30,
    )
    await client.inner.aclose()
    assert report.reason == "stopped"
    # The claims while serving (the one that stops it is replayed at once, as a drain does).
    idle = client.sent[:4]
    gaps = [later - earlier for earlier, later in itertools.pairwise(idle)]
    # A lower bound only: the pause may take longer, never shorter.
    assert len(gaps) == 3 and min(gaps) >= provider_module._CLAIM_INTERVAL * 0.95, gaps


async def test_claims_that_take_calls_do_not_pause(registry: Running) -> None:
    """The pause is for empty answers only: calls queued together are all run."""
    impl = Echo()
    options = dataclasses.replace(OPTIONS, claim_wait_seconds=0, concurrency=1)
    async with serving(registry.url, impl, options=options):
        outcomes = await asyncio.wait_for(
            asyncio.gather(*(call(registry.url, f"n{i}") for i in range(3))), 30
        )
    assert [o.status for o in outcomes] == ["completed"] * 3
    assert sorted(impl.ran) == ["n0", "n1", "n2"]


# --- refused claims --------------------------------------------------------------------------


class RefusedClaims(FlakyRenewals):
    """Every claim fails with ``code``; ``stop`` is set after ``claims`` of them."""

    def __init__(
        self, inner: HttpRegistryClient, code: str, claims: int, stop: asyncio.Event
    ) -> None:
        super().__init__(inner, failures=0)
        self.code, self.claims, self.stop = code, claims, stop
        self.asked = 0

    async def claim(self, *args: Any, **kwargs: Any) -> list[api.ClaimedCallBody]:
        self.asked += 1
        if self.asked >= self.claims:
            self.stop.set()
        raise RegistryError(self.code, f"refused ({self.code}, test)")


async def test_each_failed_claim_is_said(
    registry: Running, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A claim that failed was retried with no word: a provider that could not claim looked
    idle."""
    monkeypatch.setattr(provider_module, "_CLAIM_RETRY", RecordedRetry())
    caplog.set_level(logging.WARNING, logger="agentgen.registry.provider")
    stop = asyncio.Event()
    client = RefusedClaims(HttpRegistryClient(registry.url), "service_unavailable", 2, stop)
    report = await asyncio.wait_for(
        serve_toolset(client, echo_toolset(), Echo(), revision="r1", options=OPTIONS, stop=stop),
        30,
    )
    await client.inner.aclose()
    assert report.reason == "stopped"
    said = [r.getMessage() for r in caplog.records if "claiming calls failed" in r.getMessage()]
    assert said == [
        f"provider 'p1' of toolset 'echo': claiming calls failed {n} time(s) in a row "
        "(service_unavailable: refused (service_unavailable, test)); asking again in 0.00 s"
        for n in (1, 2)
    ]


@pytest.mark.parametrize("code", ["forbidden", "validation_error", "unauthenticated"])
async def test_a_claim_refused_for_good_stops_serving_with_an_error_and_releases_the_lease(
    registry: Running, code: str
) -> None:
    """A claim refused as forbidden or invalid was asked again for ever, without a word, while
    the renewals kept the lease (and with it the toolset's calls) alive."""
    stop = asyncio.Event()
    client = RefusedClaims(HttpRegistryClient(registry.url), code, 1_000, stop)
    with pytest.raises(RegistryError) as refused:
        await asyncio.wait_for(
            serve_toolset(
                client, echo_toolset(), Echo(), revision="r1", options=OPTIONS, stop=stop
            ),
            30,
        )
    await client.inner.aclose()
    assert client.asked == 1
    assert refused.value.code == code
    assert refused.value.message == (
        f"provider 'p1' of toolset 'echo': the registry refused its claim for calls ({code}: "
        f"refused ({code}, test)); every claim would be refused the same way, so it stopped "
        "serving (drained, its lease released). Fix what the refusal names (the provider's "
        "token and its role, or a registry of another version than the provider's agentgen), "
        "then start the provider again"
    )
    await register_next_revision(registry.url)  # released: not admission_blocked


class RevokedToken(RefusedClaims):
    """The provider's token revoked after it registered: its claims, drain and release are all
    refused alike."""

    async def drain(self, *args: Any) -> int:
        raise RegistryError(self.code, f"refused ({self.code}, test)")

    async def release(self, *args: Any) -> None:
        raise RegistryError(self.code, f"refused ({self.code}, test)")


async def test_a_refused_claim_says_when_the_lease_could_not_be_released(
    registry: Running,
) -> None:
    """The error said "drained, its lease released" while the registry had refused both: the
    lease stayed live (blocking a new revision's registration) until it expired."""
    stop = asyncio.Event()
    client = RevokedToken(HttpRegistryClient(registry.url), "forbidden", 1_000, stop)
    with pytest.raises(RegistryError) as refused:
        await asyncio.wait_for(
            serve_toolset(
                client, echo_toolset(), Echo(), revision="r1", options=OPTIONS, stop=stop
            ),
            30,
        )
    await client.inner.aclose()
    assert refused.value.message == (
        "provider 'p1' of toolset 'echo': the registry refused its claim for calls (forbidden: "
        "refused (forbidden, test)); every claim would be refused the same way, so it stopped "
        "serving (the registry did not take its release either: its lease ends when it "
        f"expires, within {OPTIONS.lease_seconds:g} s). Fix what the refusal names (the "
        "provider's token and its role, or a registry of another version than the provider's "
        "agentgen), then start the provider again"
    )
    with pytest.raises(RegistryError) as blocked:
        await register_next_revision(registry.url)
    assert blocked.value.code == "admission_blocked"


# --- a failing on_registered -----------------------------------------------------------------


async def test_a_failing_on_registered_releases_the_lease(registry: Running) -> None:
    """serve raised the callback's error with the lease still live: a new revision's
    registration was blocked (admission_blocked) until the lease expired."""

    def broken(token: str) -> None:
        raise RuntimeError("the callback broke (test)")

    options = dataclasses.replace(OPTIONS, lease_seconds=60)
    async with HttpRegistryClient(registry.url) as client:
        with pytest.raises(RuntimeError, match=r"the callback broke \(test\)"):
            await asyncio.wait_for(
                serve_toolset(
                    client,
                    echo_toolset(),
                    Echo(),
                    revision="r1",
                    options=options,
                    on_registered=broken,
                ),
                30,
            )
    await register_next_revision(registry.url)


class StopOnFailedClaim:
    """The backoff after a failed claim: stops serving then (SIGTERM while the provider waits
    to ask again), and waits long."""

    def __init__(self, stop: asyncio.Event) -> None:
        self.stop = stop

    def delay(self, attempt: int) -> float:
        self.stop.set()
        return 60.0


async def test_calls_a_lost_claim_answer_took_run_when_serving_stops_before_it_is_asked_again(
    registry: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped while it waited to ask a failed claim again, the provider drained and released
    its lease without asking: the calls the registry had given that claim (its answers lost)
    were never run, and ended outcome_unknown, "may have run", when the lease was released."""
    stop = asyncio.Event()
    monkeypatch.setattr(provider_module, "_CLAIM_RETRY", StopOnFailedClaim(stop))
    transport = LoseClaimAnswers(lose=2)  # both attempts of the client (one retry)
    client = HttpRegistryClient(
        registry.url, transport=transport, retry=RetryPolicy(max_retries=1, backoff_base=0.0)
    )
    impl, registered = Echo(), asyncio.Event()
    serve = asyncio.create_task(
        serve_toolset(
            client,
            echo_toolset(),
            impl,
            revision="r1",
            options=OPTIONS,
            stop=stop,
            on_registered=lambda token: registered.set(),
        )
    )
    await asyncio.wait_for(registered.wait(), 10)
    outcome = await asyncio.wait_for(call(registry.url, "hello"), 30)
    report = await asyncio.wait_for(serve, 30)
    await client.aclose()
    assert transport.lost != []
    assert (outcome.status, json.loads(outcome.payload_json)) == ("completed", {"said": "hello"})
    assert impl.ran == ["hello"]
    assert (report.reason, report.completed) == ("stopped", 1)


# --- claim answers the SDK cannot read -------------------------------------------------------


class GarbleClaimAnswers(httpx2.AsyncBaseTransport):
    """Forwards every request; the answers to the first ``garble`` claims that took calls come
    back in a shape the client cannot read (as from a registry of another version). Counts
    the claims."""

    def __init__(self, garble: int) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.garble = garble
        self.claims = 0
        self.garbled = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path.endswith("/providers/claim"):
            self.claims += 1
            await response.aread()
            if self.garbled < self.garble and json.loads(response.content)["calls"]:
                self.garbled += 1
                return httpx2.Response(200, json={"calls": "in another shape"})
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _serve_until_refused(
    url: str, transport: GarbleClaimAnswers, impl: Echo
) -> tuple[RegistryError, Any]:
    """Serve through ``transport``; a call is made once registered. The error serving ended
    with, and the call's outcome."""
    client = HttpRegistryClient(url, transport=transport, retry=RetryPolicy(max_retries=0))
    registered = asyncio.Event()
    serve = asyncio.create_task(
        serve_toolset(
            client,
            echo_toolset(),
            impl,
            revision="r1",
            options=OPTIONS,
            on_registered=lambda token: registered.set(),
        )
    )
    await asyncio.wait_for(registered.wait(), 10)
    outcome = asyncio.create_task(call(url, "hello"))
    with pytest.raises(RegistryError) as refused:
        await asyncio.wait_for(serve, 30)
    await client.aclose()
    return refused.value, await asyncio.wait_for(outcome, 30)


_UNREADABLE = (
    "provider 'p1' of toolset 'echo': the answer to its claim for calls could not be read "
    "(registry '{registry}' answered /providers/claim with an unexpected body: calls: Input "
    "should be a valid array); every answer would be read the same way, so it stopped serving "
    "(drained, its lease released{lost}). Check that the URL is that of an agentgen registry of "
    "the provider's version, with nothing between them rewriting its answers, then start the "
    "provider again"
)


async def test_claim_answers_that_cannot_be_read_stop_serving_with_an_error(
    registry: Running,
) -> None:
    """A claim answered protocol_error was asked again for ever (its backoff growing to 5 s)
    while the renewals kept the lease, and the calls the registry had handed to the claim,
    alive and unrun: the consumer waited until the call's deadline. Then the call ended
    outcome_unknown ("may have run: never retry") with the lease, though no answer carrying
    it was ever read, so it never reached the executor: it is given back as not run."""
    transport, impl = GarbleClaimAnswers(garble=1_000), Echo()
    error, outcome = await _serve_until_refused(registry.url, transport, impl)
    assert error.code == "protocol_error"
    registry_name = registry.url.removeprefix("http://")
    assert error.message == _UNREADABLE.format(
        registry=registry_name,
        lost="; the claim's answer could not be read again (protocol_error): the 1 call(s) it "
        "took were given back unrun, and end failed (not_run), safe to call again",
    )
    # Asked once, and replayed once once drained.
    assert (transport.claims, transport.garbled) == (2, 2)
    # The call the unread answer carried ended as not run, not at its deadline.
    assert impl.ran == []
    assert outcome.status == "failed"
    result = json.loads(outcome.payload_json)
    assert result["code"] == "not_run"
    assert outcome.message == result["message"]
    assert outcome.message.startswith("not_run: call ")
    assert "to echo.say of toolset 'echo': the provider that took it could not read" in (
        outcome.message
    )
    assert outcome.message.endswith(
        "the call did not run: it is safe to call again once a provider serves the toolset"
    )
    await register_next_revision(registry.url)  # released: not admission_blocked


class OlderRegistry(GarbleClaimAnswers):
    """As :class:`GarbleClaimAnswers`, in front of a registry older than give_back."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/providers/give_back"):
            error = {"code": "unknown_route", "message": "POST /v1/providers/give_back: no such"}
            return httpx2.Response(404, json={"error": error})
        return await super().handle_async_request(request)


async def test_a_registry_that_does_not_take_the_calls_back_leaves_them_outcome_unknown(
    registry: Running, caplog: pytest.LogCaptureFixture
) -> None:
    transport = OlderRegistry(garble=1_000)
    with caplog.at_level(logging.WARNING, "agentgen.registry.provider"):
        error, outcome = await _serve_until_refused(registry.url, transport, Echo())
    assert error.message == _UNREADABLE.format(
        registry=registry.url.removeprefix("http://"),
        lost="; the claim's answer could not be read again (protocol_error) nor given back "
        "(unknown_route): calls it took end outcome_unknown, unrun",
    )
    assert outcome.status == "outcome_unknown"
    assert "the registry did not take back, unrun, the calls of a claim" in caplog.text


async def test_a_call_in_a_claim_answer_that_could_not_be_read_runs_before_serving_stops(
    registry: Running,
) -> None:
    """The claim the unreadable answer belonged to took the call: replayed once drained, its
    answer read this time, the call runs before the provider stops."""
    transport, impl = GarbleClaimAnswers(garble=1), Echo()
    error, outcome = await _serve_until_refused(registry.url, transport, impl)
    assert error.message == _UNREADABLE.format(
        registry=registry.url.removeprefix("http://"), lost=""
    )
    assert (outcome.status, json.loads(outcome.payload_json)) == ("completed", {"said": "hello"})
    assert impl.ran == ["hello"]


# --- a gateway's pages in front of the registry ----------------------------------------------


class GatewayPages(httpx2.AsyncBaseTransport):
    """Forwards every request; the first ``pages`` claims are answered instead by a gateway's
    page (not JSON) with ``status``."""

    def __init__(self, status: int, pages: int) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.status, self.pages = status, pages
        self.paged = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/providers/claim") and self.paged < self.pages:
            self.paged += 1
            return httpx2.Response(self.status, text="<html>gateway</html>")
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_gateways_credential_refusal_of_a_claim_stops_serving_naming_the_credentials(
    registry: Running,
) -> None:
    """It stopped too, as a protocol_error saying the answer could not be read (check the
    registry's version), which pointed the operator away from the credentials."""
    transport = GatewayPages(401, pages=1_000)
    client = HttpRegistryClient(registry.url, transport=transport, retry=RetryPolicy(0))
    with pytest.raises(RegistryError) as refused:
        await asyncio.wait_for(serve_toolset(client, echo_toolset(), Echo(), revision="r1",
                                             options=OPTIONS), 30)  # fmt: skip
    await client.aclose()
    assert transport.paged == 1
    assert refused.value.code == "unauthenticated"
    assert refused.value.message.startswith(
        "provider 'p1' of toolset 'echo': the registry refused its claim for calls "
        f"(unauthenticated: registry '{registry.url.removeprefix('http://')}' at {registry.url} "
        "answered /providers/claim with HTTP 401 and a page that is no registry error: a proxy "
        "or gateway in front of the registry refused the request's credentials. Check the "
        "credentials this client sends"
    )
    await register_next_revision(registry.url)  # released: not admission_blocked


async def test_a_gateway_answering_not_found_while_it_is_deployed_is_ridden_out(
    registry: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its 404 pages were a protocol_error: the provider stopped for good."""
    monkeypatch.setattr(provider_module, "_CLAIM_RETRY", RecordedRetry())
    transport, impl = GatewayPages(404, pages=3), Echo()
    client = HttpRegistryClient(registry.url, transport=transport, retry=RetryPolicy(0))
    async with serving(registry.url, impl, client):
        outcome = await asyncio.wait_for(call(registry.url, "hello"), 30)
    assert transport.paged == 3
    assert (outcome.status, json.loads(outcome.payload_json)) == ("completed", {"said": "hello"})
    assert impl.ran == ["hello"]
