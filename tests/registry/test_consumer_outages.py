"""A consumer's registry call through brief outages and busy providers, against a live registry.

Once the registry admitted a call, the call runs whatever happens to the consumer's
connection: waiting for its outcome must survive an outage shorter than its retention, and
whatever ends the wait must tell the model that the call may have run. A provider that gives a
call back is busy: the consumer pauses before asking again.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator

import httpx2
import pytest

from agentgen.runtime import Runtime
from agentgen.runtime.registry.http_client import HttpRegistryClient, HttpResultStream, RetryPolicy
from agentgen.runtime.registry.provider import ToolOverloadedError
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from agentgen.runtime.runs import execution
from tests.registry.conftest import Running, running_registry
from tests.registry.test_provider import (
    WEATHER,
    Weather,
    providing,
    result_of,
)
from tests.runtime.agents import ScriptedPlanner, Sources, answer, calls, records_definition
from tests.runtime.test_saved_contracts import error_kind


@pytest.fixture
async def registry() -> AsyncIterator[Running]:
    async with running_registry(SQLiteStore(":memory:")) as running:
        yield running


class Flaky(httpx2.AsyncBaseTransport):
    """The consumer's connection: requests to ``path`` fail to connect until ``down_until``,
    or for good once ``down_for_good``."""

    def __init__(self, path: str = "/calls/result") -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.path = path
        self.down_until = 0.0
        self.down_for_good = False
        self.refused = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith(self.path) and (
            self.down_for_good or time.monotonic() < self.down_until
        ):
            self.refused += 1
            raise httpx2.ConnectError("All connection attempts failed", request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def flaky_consumer(url: str, planner: ScriptedPlanner, flaky: Flaky) -> Runtime:
    client = HttpRegistryClient(url, transport=flaky)
    rt = Runtime()
    rt.register_registry("company", client, HttpResultStream(client, poll_ms=300))
    definition = records_definition(id="test.forecaster", specs=(), deferred_tool_ids=())
    sources = Sources(toolsets=[("company", WEATHER, "", False)])
    rt.register_agent(definition.with_registry_tools(sources), planner=planner, executors={})
    return rt


class OutageDuringTheCall(Weather):
    """The weather tool, during which the consumer's result polls stop connecting for a while
    (longer than the HTTP client's own retries: about 0.7 s)."""

    def __init__(self, flaky: Flaky, outage: float) -> None:
        super().__init__(delay=outage + 0.5)
        self.flaky, self.outage = flaky, outage

    async def forecast(self, args, context):  # type: ignore[no-untyped-def]
        self.flaky.down_until = time.monotonic() + self.outage
        return await super().forecast(args, context)


async def test_an_outage_shorter_than_the_retention_is_waited_out(registry: Running) -> None:
    # The run told the model "registry_error" (no warning that the call may have run) while the
    # call completed at the registry a moment later: a model retrying would run it twice.
    flaky = Flaky()
    weather = OutageDuringTheCall(flaky, outage=3.0)
    async with providing(registry.url, weather):
        planner = ScriptedPlanner([calls(("weather.forecast", {"city": "Oslo"})), answer()])
        rt = flaky_consumer(registry.url, planner, flaky)
        outcome = await rt.client("test.forecaster").run("weather?")
        await rt.registry("company").client.aclose()  # type: ignore[attr-defined]
    assert flaky.refused > 4  # more than the HTTP client's own 3 retries of one poll
    error, value = result_of(outcome)
    assert not error and value["city"] == "Oslo"
    assert len(weather.seen) == 1


async def test_an_unreachable_registry_at_admission_is_registry_unavailable(
    registry: Running,
) -> None:
    # Was "registry_error": the admission request may have reached the registry before the
    # connection failed, so the model is told to check before repeating the call.
    flaky = Flaky("/v1/calls")
    flaky.down_for_good = True
    async with providing(registry.url, Weather()):
        planner = ScriptedPlanner([calls(("weather.forecast", {"city": "Oslo"})), answer()])
        rt = flaky_consumer(registry.url, planner, flaky)
        outcome = await rt.client("test.forecaster").run("weather?")
        await rt.registry("company").client.aclose()  # type: ignore[attr-defined]
    part = outcome.transcript[2].parts[0]
    assert flaky.refused == 4  # the HTTP client's own retries, then the run gives up
    assert error_kind(part) == "registry_unavailable"
    assert "may not have been admitted" in part.content  # type: ignore[union-attr]


async def test_overloaded_calls_are_retried_after_a_pause(
    registry: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The three retries used to land within a few milliseconds: a provider busy for 300 ms
    # made the run give up.
    monkeypatch.setattr(execution, "OVERLOAD_BACKOFF", (0.2, 0.4, 0.8))
    stamps: list[float] = []

    def busy_for_a_while(args: object) -> None:
        stamps.append(time.monotonic())
        if stamps[-1] - stamps[0] < 0.3:
            raise ToolOverloadedError("busy")

    async with providing(registry.url, Weather(behaviour=busy_for_a_while)):
        planner = ScriptedPlanner([calls(("weather.forecast", {"city": "Oslo"})), answer()])
        rt = flaky_consumer(registry.url, planner, Flaky())
        outcome = await rt.client("test.forecaster").run("weather?")
        await rt.registry("company").client.aclose()  # type: ignore[attr-defined]
    error, value = result_of(outcome)
    assert not error and value["city"] == "Oslo", value
    gaps = [later - earlier for earlier, later in itertools.pairwise(stamps)]
    assert len(stamps) in (2, 3)
    # Each pause is at least half its nominal length (the jitter cuts up to half).
    assert all(gap >= nominal / 2 for gap, nominal in zip(gaps, (0.2, 0.4), strict=False)), gaps


async def test_an_outage_past_the_retention_ends_the_wait_as_outcome_unknown() -> None:
    # Nothing more can be learnt once the registry forgot the call: the wait ends, saying the
    # call may have run.
    from agentgen.runtime.registry.client import CallRef, RegistryError

    class Unreachable:
        name = "company"
        retry = RetryPolicy(backoff_base=0.01, backoff_max=0.05)
        polls = 0

        async def poll_result(self, ref: CallRef, *, wait_ms: int) -> object:
            self.polls += 1
            raise RegistryError("service_unavailable", "registry 'company': /calls/result failed")

        def registry_time_ms(self) -> float:
            return time.time() * 1000  # the registry's clock agrees with this host's

    client = Unreachable()
    expires = int(time.time() * 1000) + 300
    stream = HttpResultStream(client, poll_ms=100)  # type: ignore[arg-type]
    with pytest.raises(RegistryError) as raised:
        await stream.await_result(CallRef("u1", "t1", expires - 100, expires))
    assert raised.value.code == "outcome_unknown" and "may have run" in raised.value.message
    assert client.polls > 2  # the outage was waited out until the retention passed
    assert time.time() * 1000 > expires
