"""Races: 200 concurrent calls while one provider drains and another replaces the admission.

Every call must end ``completed``, ``call_not_admitted``, ``admission_conflict`` or
``no_provider`` (made while no provider was routable: between the last old lease draining and
the replacement's admission); none is lost and none runs twice (executions are counted by the
providers themselves). The registry runs as its own process (SQLite file, then Redis);
providers and callers run here.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentgen.runtime import ToolContext
from agentgen.runtime.registry.client import CallRef, RegistryError, ToolCallMeta
from agentgen.runtime.registry.http_client import (
    HttpRegistryClient,
    HttpResultStream,
    RetryPolicy,
)
from agentgen.runtime.registry.provider import (
    ServeOptions,
    ServeReport,
    ToolOverloadedError,
    serve_toolset,
)
from examples.quickstart.gen.quickstart.toolsets.weather import (
    declarations,
    executor,
    specs,
    types,
)
from tests.registry.conftest import RedisServer, free_port, start_registry_process

CALLS = 200
WEATHER = specs.TOOLSET


@pytest.fixture(params=["sqlite", "redis"])
def registry_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    if request.param == "redis":
        redis: RedisServer = request.getfixturevalue("redis_server")
        store = f"redis://127.0.0.1:{redis.port}/1"
        subprocess.run(["redis-cli", "-p", str(redis.port), "-n", "1", "FLUSHDB"], check=True,
                       capture_output=True)  # fmt: skip
    else:
        store = f"sqlite:{tmp_path / 'race.db'}"
    process = start_registry_process(store, port, "--redelivery", "300ms")
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(10)


class Counting:
    """The providers' executor: counts every execution of every call, by tool call ID."""

    def __init__(self, executions: Counter[str], revision: str) -> None:
        self.executions = executions
        self.revision = revision

    async def forecast(self, args: types.ForecastArgs, context: ToolContext) -> types.Forecast:
        number = int(context.tool_call_id.removeprefix("call-"))
        if number % 10 == 7 and args.city == "first":
            raise ToolOverloadedError  # handed back unrun: the consumer retries
        self.executions[context.tool_call_id] += 1
        await asyncio.sleep(0.005)
        return types.Forecast(
            city=args.city, conditions="ok", temperature_c=number, wind="", summary=self.revision
        )


def serve(
    url: str, executions: Counter[str], revision: str, name: str, stop: asyncio.Event
) -> asyncio.Task[ServeReport]:
    client = HttpRegistryClient(url)
    options = ServeOptions(
        provider_id=name,
        lease_seconds=10,
        concurrency=16,
        claim_wait_seconds=0.2,
        drain_seconds=10,
        handle_signals=False,
        register_timeout_seconds=30,
    )
    return asyncio.create_task(
        serve_toolset(
            client,
            declarations.toolset(),
            executor.bind(Counting(executions, revision)),
            revision=revision,
            specs=specs.SPECS,
            options=options,
            stop=stop,
        )
    )


async def one_call(
    client: HttpRegistryClient, results: HttpResultStream, token: str, number: int
) -> tuple[str, str]:
    """A call as the runtime makes it: call, await, retry overloads under the same token."""
    city = "first"
    try:
        ref = await client.call_resolved_tool(
            toolset=WEATHER,
            tool="weather.forecast",
            payload_json=json.dumps({"city": city}),
            meta=ToolCallMeta(run_id="race", tool_call_id=f"call-{number}"),
            expected_registration_token=token,
        )
        outcome = await results.await_result(ref)
        while outcome.status == "overloaded":
            retried: CallRef = await client.retry_tool(ref, expected_registration_token=token)
            assert retried == ref
            outcome = await results.await_result(ref)
    except RegistryError as exc:
        return exc.code, ""
    if outcome.status != "completed":
        return outcome.status, ""
    return outcome.status, json.loads(outcome.payload_json)["summary"]


async def test_two_hundred_calls_during_a_drain_and_a_replacement(registry_url: str) -> None:
    executions: Counter[str] = Counter()
    stops = {name: asyncio.Event() for name in ("old-a", "old-b", "new")}
    old_a = serve(registry_url, executions, "r1", "old-a", stops["old-a"])
    old_b = serve(registry_url, executions, "r1", "old-b", stops["old-b"])
    client = HttpRegistryClient(registry_url, retry=RetryPolicy(10, 0.05, 0.5))
    results = HttpResultStream(client, poll_ms=1_000)
    while WEATHER not in await client.list_toolsets():
        await asyncio.sleep(0.02)
    resolved = await client.resolve_toolset(WEATHER)
    token = resolved.registration_token
    calls: list[asyncio.Task[tuple[str, str]]] = []
    for number in range(CALLS):
        calls.append(asyncio.create_task(one_call(client, results, token, number)))
        if number == 30:
            await asyncio.wait(calls[:5])  # the first calls are through before anything changes
        if number == 60:
            stops["old-b"].set()  # drains: finishes what it holds, takes nothing new
        if number == 100:
            stops["old-a"].set()  # leaves too: the admission can be replaced
            new = serve(registry_url, executions, "r2", "new", stops["new"])
        if number == 140:
            async with asyncio.timeout(60):
                while (await client.resolve_toolset(WEATHER)).registration_token == token:
                    await asyncio.sleep(0.01)  # until r2 is admitted: the rest are late
        await asyncio.sleep(0.001)
    outcomes = await asyncio.wait_for(asyncio.gather(*calls), 120)
    for stop in stops.values():
        stop.set()
    reports = await asyncio.gather(old_a, old_b, new)
    await client.aclose()

    statuses = Counter(status for status, _ in outcomes)
    ended = {"completed", "call_not_admitted", "admission_conflict", "no_provider"}
    assert set(statuses) <= ended, statuses
    assert sum(statuses.values()) == CALLS  # none lost
    assert statuses["completed"] > 0 and statuses["call_not_admitted"] > 0, statuses
    assert max(executions.values()) == 1  # none executed twice
    completed = {f"call-{n}" for n, (status, _) in enumerate(outcomes) if status == "completed"}
    assert set(executions) == completed  # only completed calls ran, each exactly once
    # Calls admitted under r1 never ran on r2's provider.
    assert {revision for status, revision in outcomes if status == "completed"} == {"r1"}
    assert reports[2].completed == 0
    assert sum(r.completed for r in reports) == len(completed)
