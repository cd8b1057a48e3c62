"""SPEC G8, H1–H3: the provider SDK and the consumer wiring against a live registry.

A generated toolset (the quickstart's weather) is served with ``serve_toolset`` through its
typed executor; agents reach it through ``rt.register_registry(name, HttpRegistryClient,
HttpResultStream)``, exactly as with any other registry client.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import signal
import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentgen.runtime import Message, Runtime, ToolCallPart, ToolContext
from agentgen.runtime.registry.client import RegistryError, ToolCallMeta
from agentgen.runtime.registry.http_client import HttpRegistryClient, HttpResultStream
from agentgen.runtime.registry.provider import (
    ServeOptions,
    ServeReport,
    ToolOverloadedError,
    serve_toolset,
)
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from examples.quickstart.gen.quickstart.toolsets.weather import (
    declarations,
    executor,
    specs,
    types,
)
from tests.registry.conftest import Running, python_process, running_registry
from tests.runtime.agents import ScriptedPlanner, Sources, answer, calls, records_definition

WEATHER = specs.TOOLSET  # "quickstart.weather"


@dataclass
class Weather:
    """A typed executor that remembers what it ran."""

    seen: list[Any] = field(default_factory=list)
    behaviour: Callable[[types.ForecastArgs], Any] | None = None
    delay: float = 0.0

    async def forecast(self, args: types.ForecastArgs, context: ToolContext) -> types.Forecast:
        self.seen.append((args, context))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.behaviour is not None:
            value = self.behaviour(args)
            if value is not None:
                return value  # type: ignore[no-any-return]
        return types.Forecast(
            city=args.city, conditions="sunny", temperature_c=21, wind="calm", summary="fine"
        )


OPTIONS = ServeOptions(
    provider_id="weather-1",
    lease_seconds=10,
    claim_wait_seconds=0.3,
    drain_seconds=5,
    handle_signals=False,
)


@asynccontextmanager
async def providing(
    url: str,
    impl: Weather,
    *,
    revision: str = "r1",
    options: ServeOptions = OPTIONS,
    client: Any = None,
) -> AsyncIterator[tuple[asyncio.Task[ServeReport], asyncio.Event, str]]:
    """Serve ``impl`` (through ``client``, an HttpRegistryClient of its own by default)."""
    client = client or HttpRegistryClient(url)
    stop = asyncio.Event()
    tokens: asyncio.Queue[str] = asyncio.Queue()
    task = asyncio.create_task(
        serve_toolset(
            client,
            declarations.toolset(),
            executor.bind(impl),
            revision=revision,
            specs=specs.SPECS,
            options=options,
            stop=stop,
            on_registered=tokens.put_nowait,
        )
    )
    token = await asyncio.wait_for(tokens.get(), 10)
    try:
        yield task, stop, token
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), 15)
        await client.aclose()


@pytest.fixture
async def registry() -> AsyncIterator[Running]:
    async with running_registry(SQLiteStore(":memory:")) as running:
        yield running


def consumer(url: str, planner: ScriptedPlanner) -> tuple[Runtime, HttpRegistryClient]:
    client = HttpRegistryClient(url)
    rt = Runtime()
    rt.register_registry("company", client, HttpResultStream(client, poll_ms=2_000))
    definition = records_definition(id="test.forecaster", specs=(), deferred_tool_ids=())
    sources = Sources(toolsets=[("company", WEATHER, "", False)])
    rt.register_agent(definition.with_registry_tools(sources), planner=planner, executors={})
    return rt, client


def result_of(outcome: Any, index: int = 2) -> Any:
    part = outcome.transcript[index].parts[0]
    return part.is_error, json.loads(part.content)


async def test_a_consumer_agent_calls_the_provider_through_the_registry(
    registry: Running,
) -> None:
    weather = Weather()
    async with providing(registry.url, weather) as (_, _, token):
        planner = ScriptedPlanner([calls(("weather.forecast", {"city": "Oslo"})), answer()])
        rt, client = consumer(registry.url, planner)
        outcome = await rt.client("test.forecaster").run(
            "weather?", run_id="run-7", labels={"tenant": "t"}
        )
        await client.aclose()
    error, value = result_of(outcome)
    assert not error and value["city"] == "Oslo" and value["summary"] == "fine"
    args, context = weather.seen[0]
    assert isinstance(args, types.ForecastArgs)  # decoded into the generated model
    assert (context.run_id, context.tool_call_id) == ("run-7", "c0_weather.forecast")
    (accepted,) = outcome.accepted_calls
    assert accepted.binding is not None and accepted.binding.registration_token == token
    assert [d.id for d in planner.seen[0]] == ["weather.forecast"]


async def test_overloads_are_retried_under_the_same_admission(registry: Running) -> None:
    attempts: list[str] = []

    def overloaded_once(args: types.ForecastArgs) -> None:
        attempts.append(args.city)
        if len(attempts) == 1:
            raise ToolOverloadedError

    async with providing(registry.url, Weather(behaviour=overloaded_once)) as (task, stop, _):
        planner = ScriptedPlanner([calls(("weather.forecast", {"city": "Rome"})), answer()])
        rt, client = consumer(registry.url, planner)
        outcome = await rt.client("test.forecaster").run("weather?")
        await client.aclose()
        stop.set()
        report = await task
    assert result_of(outcome) == (
        False,
        {"city": "Rome", "conditions": "sunny", "temperature_c": 21, "wind": "calm",
         "summary": "fine"},
    )  # fmt: skip
    assert attempts == ["Rome", "Rome"]
    assert (report.overloaded, report.completed) == (1, 1)


class RecordingClient(HttpRegistryClient):
    """Remembers which claim operation took which calls, and what each overload named."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.claims: dict[str, list[str]] = {}
        self.overloads: list[tuple[str, str | None]] = []

    async def claim(self, *args: Any, **kwargs: Any) -> Any:
        calls = await super().claim(*args, **kwargs)
        self.claims.setdefault(kwargs["operation_id"], []).extend(c.tool_use_id for c in calls)
        return calls

    async def report_overload(self, *args: Any, claim_operation_id: str | None = None) -> None:
        self.overloads.append((args[1], claim_operation_id))
        await super().report_overload(*args, claim_operation_id=claim_operation_id)


async def test_an_overload_names_the_claim_operation_that_took_the_call(
    registry: Running,
) -> None:
    # The registry then takes a repeat of it (a transport retry) landing after the call was
    # claimed again for what it is: applied already, not a second overload.
    def overloaded_once(args: types.ForecastArgs) -> None:
        if not client.overloads:
            raise ToolOverloadedError

    client = RecordingClient(registry.url)
    async with providing(registry.url, Weather(behaviour=overloaded_once), client=client) as (
        task,
        stop,
        _,
    ):
        planner = ScriptedPlanner([calls(("weather.forecast", {"city": "Rome"})), answer()])
        rt, consumer_client = consumer(registry.url, planner)
        await rt.client("test.forecaster").run("weather?")
        await consumer_client.aclose()
        stop.set()
        report = await task
    ((use_id, operation),) = client.overloads
    assert operation is not None and client.claims[operation] == [use_id]
    assert (report.overloaded, report.completed, report.lost) == (1, 1, 0)


class RefusingOverloads(HttpRegistryClient):
    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.refused = asyncio.Event()

    async def report_overload(self, *args: Any, claim_operation_id: str | None = None) -> None:
        self.refused.set()
        raise RegistryError("provider_lease_lost", "call is not held by this provider's lease")


async def test_a_refused_overload_is_said_and_not_counted_as_given_back(
    registry: Running, caplog: pytest.LogCaptureFixture
) -> None:
    def overloaded(args: types.ForecastArgs) -> None:
        raise ToolOverloadedError

    client = RefusingOverloads(registry.url)
    async with providing(registry.url, Weather(behaviour=overloaded), client=client) as (
        task,
        stop,
        token,
    ):
        admin = HttpRegistryClient(registry.url)
        try:
            ref = await admin.call_resolved_tool(
                toolset=WEATHER,
                tool="weather.forecast",
                payload_json='{"city": "Rome"}',
                meta=ToolCallMeta(run_id="r", tool_call_id="c"),
                expected_registration_token=token,
            )
            assert ref.tool_use_id
            await asyncio.wait_for(client.refused.wait(), 10)
        finally:
            await admin.aclose()
        stop.set()
        report = await task
    assert (report.overloaded, report.lost) == (0, 1)
    assert "the registry refused the overload of call" in caplog.text
    assert "provider_lease_lost" in caplog.text


async def test_executor_failures_and_invalid_results_are_failed_outcomes(
    registry: Running,
) -> None:
    def fail(args: types.ForecastArgs) -> Any:
        if args.city == "Nowhere":
            raise LookupError("no such city")
        return {"not": "a forecast"}

    async with providing(registry.url, Weather(behaviour=fail)):
        planner = ScriptedPlanner(
            [
                calls(("weather.forecast", {"city": "Nowhere"})),
                Message("assistant", (ToolCallPart("c1", "weather.forecast", '{"city":"Bad"}'),)),
                answer(),
            ]
        )
        rt, client = consumer(registry.url, planner)
        outcome = await rt.client("test.forecaster").run("weather?")
        await client.aclose()
    error, value = result_of(outcome, 2)
    assert error and value["error"]["kind"] == "tool_failed"
    assert "no such city" in value["error"]["message"]
    error, value = result_of(outcome, 4)
    assert error and "invalid_result" in value["error"]["message"]


async def test_an_executor_s_own_timeout_error_is_its_failure_not_the_deadline(
    registry: Running,
) -> None:
    """A ``TimeoutError`` the executor raises at once (a query of its own that timed out) was
    reported as the provider stopping the call at its deadline: the model read
    ``outcome_unknown`` ("stopped the call at its deadline, while it ran"), with the
    executor's own words lost. The call's deadline is hours away: it is the executor's
    failure."""

    def fail(args: types.ForecastArgs) -> Any:
        raise TimeoutError("the forecast service did not answer within 2 s")

    async with providing(registry.url, Weather(behaviour=fail)):
        planner = ScriptedPlanner([calls(("weather.forecast", {"city": "Oslo"})), answer()])
        rt, client = consumer(registry.url, planner)
        outcome = await rt.client("test.forecaster").run("weather?")
        await client.aclose()
    error, value = result_of(outcome, 2)
    assert error and value["error"]["kind"] == "tool_failed"
    assert "execution_failed: weather.forecast failed: TimeoutError: the forecast service did " \
        "not answer within 2 s" in value["error"]["message"]  # fmt: skip


async def test_a_replacement_before_publication_is_call_not_admitted(registry: Running) -> None:
    """G8: the consumer resolved revision r1; r1's provider leaves and r2 takes over before the
    call is made: the call is refused and never reaches r2 with r1's contract."""
    first, second = Weather(), Weather()
    planner = ScriptedPlanner([calls(("weather.forecast", {"city": "Lima"})), answer()])
    rt, client = consumer(registry.url, planner)

    class SwitchAfterResolve(Sources):
        async def resolve(self, catalog: Any) -> None:
            await super().resolve(catalog)
            if self.resolved == 1:
                switched.set()
                await replaced.wait()

    switched, replaced = asyncio.Event(), asyncio.Event()
    definition = records_definition(id="test.switch", specs=(), deferred_tool_ids=())
    sources = SwitchAfterResolve(toolsets=[("company", WEATHER, "", False)])
    rt.register_agent(definition.with_registry_tools(sources), planner=planner, executors={})
    async with providing(registry.url, first) as (task, stop, old):
        run = asyncio.create_task(rt.client("test.switch").run("weather?"))
        await switched.wait()
        stop.set()
        await task  # drained and released
        async with providing(registry.url, second, revision="r2") as (_, _, new):
            assert new != old
            replaced.set()
            outcome = await run
    await client.aclose()
    error, value = result_of(outcome)
    assert error and value["error"]["kind"] == "call_not_admitted"
    assert first.seen == [] and second.seen == []


async def test_a_lost_lease_stops_the_provider_without_registering_again(
    registry: Running,
) -> None:
    admin = HttpRegistryClient(registry.url)
    async with providing(registry.url, Weather()) as (task, _, token):
        await admin.unregister(WEATHER, token)
        report = await asyncio.wait_for(asyncio.shield(task), 10)
        assert report.reason == "lease_lost"
        assert await admin.list_toolsets() == []  # it did not come back
    await admin.aclose()


async def test_register_waits_while_an_older_registration_holds_leases(
    registry: Running,
) -> None:
    async with providing(registry.url, Weather()) as (old_task, old_stop, old):
        newer = providing(registry.url, Weather(), revision="r2")
        entering = asyncio.create_task(newer.__aenter__())
        await asyncio.sleep(0.5)
        assert not entering.done()  # admission_blocked, retried
        old_stop.set()
        await old_task
        _, new_stop, new = await asyncio.wait_for(entering, 10)
        assert new != old
        new_stop.set()
        await newer.__aexit__(None, None, None)


async def test_stopping_while_admission_is_blocked_ends_serving_without_registering(
    registry: Running,
) -> None:
    """SIGTERM or Ctrl-C (both set ``stop``) while an older registration blocks this one used
    to be ignored until ``register_timeout_seconds`` ran out (two minutes by default), which
    then raised ``admission_blocked``."""
    async with providing(registry.url, Weather()) as (_, _, old):
        stop = asyncio.Event()
        registered: list[str] = []
        client = HttpRegistryClient(registry.url)
        newer = asyncio.create_task(
            serve_toolset(
                client,
                declarations.toolset(),
                executor.bind(Weather()),
                revision="r2",
                specs=specs.SPECS,
                options=dataclasses.replace(OPTIONS, register_timeout_seconds=60),
                stop=stop,
                on_registered=registered.append,
            )
        )
        await asyncio.sleep(0.5)
        assert not newer.done()  # admission_blocked, retried
        stop.set()
        report = await asyncio.wait_for(newer, 5)
        await client.aclose()
        assert (report.reason, report.registration_token, registered) == ("stopped", "", [])
        async with HttpRegistryClient(registry.url) as reader:
            assert (await reader.resolve_toolset(WEATHER)).registration_token == old


PROVIDER_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, time
    from agentgen.runtime.registry.http_client import HttpRegistryClient
    from agentgen.runtime.registry.provider import ServeOptions, serve_toolset
    from examples.quickstart.gen.quickstart.toolsets.weather import (
        declarations, executor, specs, types)

    class Slow:
        async def forecast(self, args, context):
            print("started", args.city, flush=True)
            await asyncio.sleep(1.0)
            return types.Forecast(city=args.city, conditions="rain", temperature_c=9,
                                  wind="gusty", summary="wet")

    async def main():
        client = HttpRegistryClient(sys.argv[1])
        report = await serve_toolset(
            client, declarations.toolset(), executor.bind(Slow()), revision="r1",
            specs=specs.SPECS,
            options=ServeOptions(provider_id="proc", lease_seconds=5, claim_wait_seconds=0.3),
            on_registered=lambda token: print("registered", token, flush=True),
        )
        print("done", report.reason, report.completed, flush=True)

    asyncio.run(main())
    """
)


async def test_sigterm_drains_calls_in_hand_then_releases(registry: Running) -> None:
    process = python_process(PROVIDER_SCRIPT, registry.url)
    assert process.stdout is not None
    try:
        line = await asyncio.to_thread(process.stdout.readline)
        assert line.startswith(b"registered"), process.stderr.read() if process.stderr else line
        token = line.split()[1].decode()
        client = HttpRegistryClient(registry.url)
        from agentgen.runtime.registry.client import ToolCallMeta

        ref = await client.call_resolved_tool(
            toolset=WEATHER,
            tool="weather.forecast",
            payload_json='{"city":"Bergen"}',
            meta=ToolCallMeta(run_id="r", tool_call_id="c"),
            expected_registration_token=token,
        )
        assert await asyncio.to_thread(process.stdout.readline) == b"started Bergen\n"
        process.send_signal(signal.SIGTERM)
        outcome = await HttpResultStream(client).await_result(ref)
        assert outcome.status == "completed"
        assert json.loads(outcome.payload_json)["summary"] == "wet"
        assert await asyncio.to_thread(process.wait, 15) == 0
        assert process.stdout.read().decode().split() == ["done", "stopped", "1"]
        assert not await client.check_admission(WEATHER, token)  # released
        await client.aclose()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_the_default_provider_id_is_a_valid_identifier() -> None:
    from agentgen.runtime.registry.admission import IDENTIFIER

    assert IDENTIFIER.match(ServeOptions().provider_id)


async def test_a_provider_at_its_concurrency_limit_waits_for_a_free_slot(
    registry: Running,
) -> None:
    """Regression: with every slot busy the claim loop must wait, not spin (spinning starved
    the event loop: no call ran, no lease was renewed)."""
    from agentgen.runtime.registry.client import ToolCallMeta

    weather = Weather(delay=0.05)
    options = dataclasses.replace(OPTIONS, concurrency=1)
    async with providing(registry.url, weather, options=options) as (_, _, token):
        client = HttpRegistryClient(registry.url)
        results = HttpResultStream(client, poll_ms=1_000)

        async def forecast(city: str) -> str:
            ref = await client.call_resolved_tool(
                toolset=WEATHER,
                tool="weather.forecast",
                payload_json=json.dumps({"city": city}),
                meta=ToolCallMeta(run_id="r", tool_call_id=city),
                expected_registration_token=token,
            )
            return (await results.await_result(ref)).status

        statuses = await asyncio.wait_for(
            asyncio.gather(*(forecast(c) for c in ("a", "b", "c", "d"))), 20
        )
        await client.aclose()
    assert statuses == ["completed"] * 4
    assert sorted(args.city for args, _ in weather.seen) == ["a", "b", "c", "d"]


async def test_resolve_reports_a_digest_that_changes_with_the_declaration(
    registry: Running,
) -> None:
    """Planning catalogs recognise an unchanged toolset by the client's digest."""
    client = HttpRegistryClient(registry.url)
    async with providing(registry.url, Weather()) as (task, stop, _):
        first = await client.resolve_toolset(WEATHER)
        again = await client.resolve_toolset(WEATHER)
        assert first.digest is not None and first.digest == again.digest
        stop.set()
        await task
    async with providing(registry.url, Weather(), revision="r2"):
        replaced = await client.resolve_toolset(WEATHER)
    assert replaced.digest != first.digest
    await client.aclose()


def test_connect_registers_each_registry_once_with_the_design_settings() -> None:
    from agentgen.runtime.registry.http_client import connect_registry
    from examples.company.gen.assistant.agents.generalist import registry_tools as generalist
    from examples.company.gen.assistant.agents.reader import registry_tools as reader
    from examples.company.gen.registries import REGISTRIES, RetrySettings

    rt = Runtime()
    generalist.connect(rt, urls={"company": "http://127.0.0.1:1"})
    reader.connect(rt)  # the same registry: the first connection is kept
    registration = rt.registry("company")
    assert isinstance(registration.client, HttpRegistryClient)
    assert registration.client.url == "http://127.0.0.1:1"
    assert isinstance(registration.result_stream, HttpResultStream)
    assert REGISTRIES["company"].url == "http://127.0.0.1:9090"  # the design's own address

    settings = dataclasses.replace(
        REGISTRIES["company"], name="other", timeout=2.5, retry=RetrySettings(7, 0.2, 1.0)
    )
    other = Runtime()
    client = connect_registry(other, settings)
    assert client is not None
    assert (client.timeout, client.retry.max_retries, client.retry.backoff_base) == (2.5, 7, 0.2)
    assert other.registry("other").timeout == 2.5  # the runtime bounds requests the same way
    assert connect_registry(other, settings) is None


async def test_connect_returns_the_connections_it_made_for_the_application_to_close() -> None:
    """The clients ``connect`` made could be closed only through
    ``rt.registry(name).client.aclose()``, which nothing documented."""
    from examples.company.gen.assistant.agents.generalist import registry_tools as generalist
    from examples.company.gen.assistant.agents.reader import registry_tools as reader

    rt = Runtime()
    made = generalist.connect(rt, urls={"company": "http://127.0.0.1:1"})
    kept = reader.connect(rt)  # the registry is the first connect's: nothing made
    client = rt.registry("company").client
    assert made.clients == (client,) and kept.clients == ()
    async with made:
        assert isinstance(client, HttpRegistryClient) and not client._http.is_closed
    assert client._http.is_closed


def test_connect_refuses_urls_for_a_registry_the_design_does_not_declare() -> None:
    """A misspelt name in ``urls`` was ignored: the agent silently used the design's URL."""
    from examples.company.gen.assistant.agents.generalist import registry_tools

    rt = Runtime()
    with pytest.raises(ValueError) as refused:
        registry_tools.connect(rt, urls={"compnay": "http://127.0.0.1:1"})
    assert str(refused.value) == (
        "registry_tools.connect: urls names ['compnay'], no registry of the design; its "
        "registries: ['company'] (the names of Registry(...), not URLs)"
    )
    with pytest.raises(LookupError):
        rt.registry("company")  # nothing was connected


class HeldCompletions(HttpRegistryClient):
    """Records every batch of completions; the first waits until released."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.batches: list[list[str]] = []
        self.held = asyncio.Event()

    async def complete_many(self, toolset: str, provider_id: str, incarnation_id: str,
                            completions: Any) -> Any:  # fmt: skip
        self.batches.append([c.tool_use_id for c in completions])
        if len(self.batches) == 1:
            await self.held.wait()
        return await super().complete_many(toolset, provider_id, incarnation_id, completions)


async def test_completions_that_finish_while_one_is_sent_go_together(
    registry: Running,
) -> None:
    from agentgen.runtime.registry.client import ToolCallMeta

    weather = Weather()
    provider = HeldCompletions(registry.url)
    async with providing(registry.url, weather, client=provider) as (serving, stop, token):
        client = HttpRegistryClient(registry.url, call_wait_ms=0)
        refs = [
            await client.call_resolved_tool(
                toolset=WEATHER,
                tool="weather.forecast",
                payload_json=json.dumps({"city": city}),
                meta=ToolCallMeta(run_id="r", tool_call_id=city),
                expected_registration_token=token,
            )
            for city in ("a", "b", "c", "d")
        ]

        # Every call ran; the first completion is held on its way, the others wait behind it.
        async def all_ran() -> None:
            while len(weather.seen) < 4 or not provider.batches:
                await asyncio.sleep(0.01)
            for _ in range(50):
                await asyncio.sleep(0)

        await asyncio.wait_for(all_ran(), 20)
        provider.held.set()
        results = HttpResultStream(client, poll_ms=1_000)
        outcomes = [await asyncio.wait_for(results.await_result(ref), 20) for ref in refs]
        await client.aclose()
        stop.set()
        report = await asyncio.wait_for(asyncio.shield(serving), 20)
    assert [o.status for o in outcomes] == ["completed"] * 4
    assert report.completed == 4
    assert len(provider.batches) == 2, provider.batches  # one request carried the other three
    assert sorted(use for batch in provider.batches for use in batch) == sorted(
        ref.tool_use_id for ref in refs
    )


class OneAtATime:
    """A provider client without ``complete_many``: completions go one request each."""

    def __init__(self, client: HttpRegistryClient) -> None:
        self.client = client
        self.completed: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name == "complete_many":
            raise AttributeError(name)
        return getattr(self.client, name)

    async def complete(self, toolset: str, tool_use_id: str, *args: Any, **kwargs: Any) -> None:
        self.completed.append(tool_use_id)
        await self.client.complete(toolset, tool_use_id, *args, **kwargs)


async def test_provider_clients_without_batches_complete_call_by_call(
    registry: Running,
) -> None:
    from agentgen.runtime.registry.provider import BatchCompleter

    inner = HttpRegistryClient(registry.url)
    plain = OneAtATime(inner)
    assert isinstance(inner, BatchCompleter) and not isinstance(plain, BatchCompleter)
    async with providing(registry.url, Weather(), client=plain) as (serving, stop, _):
        planner = ScriptedPlanner([calls(("weather.forecast", {"city": "Oslo"})), answer()])
        rt, client = consumer(registry.url, planner)
        outcome = await rt.client("test.forecaster").run("weather?")
        await client.aclose()
        stop.set()
        report = await asyncio.wait_for(asyncio.shield(serving), 20)
    error, value = result_of(outcome)
    assert not error and value["city"] == "Oslo"
    assert report.completed == 1 and len(plain.completed) == 1


@pytest.mark.parametrize(
    ("impl", "expected"),
    [
        (object(), "(object) does not implement DirectoryExecutor: it has no method find_person"),
        (None, "the executor is None; pass an object implementing DirectoryExecutor"),
        (Weather, "the executor is the class Weather, not an instance; pass Weather(...)"),
    ],
)
async def test_generated_serve_refuses_an_executor_without_the_tools_methods_before_publishing(
    registry: Running, impl: Any, expected: str
) -> None:
    """Such an executor was published and then failed every call with an AttributeError."""
    from agentgen.runtime import ProviderSetupError
    from examples.company.gen.hr.toolsets.directory import provider

    options = dataclasses.replace(OPTIONS, register_timeout_seconds=1)
    with pytest.raises(ProviderSetupError) as refused:
        await asyncio.wait_for(
            provider.serve(impl, revision="r1", url=registry.url, options=options), 10
        )
    assert str(refused.value).startswith("provider of toolset 'hr.directory': ")
    assert expected in str(refused.value)
    async with HttpRegistryClient(registry.url) as client:
        assert await client.list_toolsets() == []  # nothing was published


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            {"version": "1.2\n3"},
            "version '1.2\\n3' cannot be published: a toolset's version is a non-empty single "
            "line of at most 256 characters without surrounding spaces or control or format "
            "characters, as consumers pin it (must not contain control or format character "
            "'\\n'); pass the version as consumers pin it",
        ),
        # Published, and no consumer could pin it: Version(...) refuses surrounding spaces.
        ({"version": " 1.2 "}, "version ' 1.2 ' cannot be published: a toolset's version is"),
        ({"version": " 1.2 "}, "(it has surrounding spaces)"),
        ({"version": ""}, "version '' cannot be published: a toolset's version is a non-empty"),
        ({"version": "1.2\u200b"}, "(must not contain control or format character '\\u200b')"),
        ({"version": "1" * 257}, "(String should have at most 256 characters)"),
        ({"version": 1.2}, "version float cannot be published"),
        (
            {"revision": ""},
            "revision (0 characters) cannot be published: a revision is a string of 1 to 256 "
            "characters naming the provider's build",
        ),
        ({"revision": "r" * 257}, "revision (257 characters) cannot be published"),
    ],
)
async def test_generated_serve_refuses_a_version_or_revision_the_registry_would_refuse(
    registry: Running, given: dict[str, Any], expected: str
) -> None:
    """``serve(version=...)`` set it on the declaration unchecked: a version with a newline,
    a zero-width space or over 256 characters (or an empty revision) went to the registry,
    whose validation_error named neither the provider nor its toolset."""
    from agentgen.runtime import ProviderSetupError
    from examples.company.gen.hr.toolsets.directory import provider

    class Directory:
        async def find_person(self, args: Any, context: ToolContext) -> Any:
            raise AssertionError("never called")

    arguments: dict[str, Any] = {"revision": "r1", **given}
    options = dataclasses.replace(OPTIONS, register_timeout_seconds=1)
    with pytest.raises(ProviderSetupError) as refused:
        await asyncio.wait_for(
            provider.serve(Directory(), url=registry.url, options=options, **arguments), 10
        )
    assert str(refused.value).startswith("provider of toolset 'hr.directory': ")
    assert expected in str(refused.value)
    async with HttpRegistryClient(registry.url) as client:
        assert await client.list_toolsets() == []  # nothing was published


async def test_generated_serve_refuses_a_registry_the_toolset_is_not_published_to(
    registry: Running,
) -> None:
    """It raised a plain ValueError, which a provider process catching ProviderSetupError
    (its set-up mistakes) let through as a crash."""
    from agentgen.runtime import ProviderSetupError
    from examples.company.gen.hr.toolsets.directory import provider

    class Directory:
        async def find_person(self, args: Any, context: ToolContext) -> Any:
            raise AssertionError("never called")

    with pytest.raises(ProviderSetupError) as refused:
        await asyncio.wait_for(
            provider.serve(Directory(), revision="r1", registry="archive", url=registry.url), 10
        )
    assert str(refused.value) == (
        "provider of toolset 'hr.directory': registry 'archive' is not one it is published to "
        "('company'); pass one of them as registry=..., or add PublishTo for that registry in "
        "the design and regenerate"
    )
    async with HttpRegistryClient(registry.url) as client:
        assert await client.list_toolsets() == []  # nothing was published


async def test_cancelling_serve_leaves_no_claim_or_call_running(registry: Running) -> None:
    """A cancelled ``serve_toolset`` (a task group, a ``wait_for``, Ctrl-C without signal
    handling) used to leave its pending claim and the calls in hand running on a client its
    caller then closed: "Task exception was never retrieved" tracebacks, and completions
    retried until the calls' deadlines."""
    started, cancelled = asyncio.Event(), asyncio.Event()

    class Slow(Weather):
        async def forecast(self, args: types.ForecastArgs, context: ToolContext) -> types.Forecast:
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            raise AssertionError("not cancelled")

    before = asyncio.all_tasks()
    client = HttpRegistryClient(registry.url)
    options = dataclasses.replace(OPTIONS, concurrency=2, claim_wait_seconds=5)
    async with providing(registry.url, Slow(), options=options, client=client) as (task, _, tok):
        consumer_client = HttpRegistryClient(registry.url)
        from agentgen.runtime.registry.client import ToolCallMeta

        await consumer_client.call_resolved_tool(
            toolset=WEATHER,
            tool="weather.forecast",
            payload_json='{"city":"Bergen"}',
            meta=ToolCallMeta(run_id="r", tool_call_id="c"),
            expected_registration_token=tok,
        )
        await asyncio.wait_for(started.wait(), 10)
        await asyncio.sleep(0.2)  # the provider is back in a claim (one slot is free)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert cancelled.is_set()
        # The registry serves from this loop too: only the provider's own tasks count.
        left = [
            t
            for t in asyncio.all_tasks() - before
            if getattr(t.get_coro(), "__qualname__", "").startswith("_Provider.")
        ]
        assert left == []
        await consumer_client.aclose()


class OverloadsThroughAnOutage(HttpRegistryClient):
    """Its first ``failures`` overloads fail as the registry out of reach (after the client's
    own retries) would."""

    def __init__(self, url: str, failures: int) -> None:
        super().__init__(url)
        self.failures = failures
        self.attempts = 0

    async def report_overload(self, *args: Any, claim_operation_id: str | None = None) -> None:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise RegistryError("service_unavailable", "registry 'x': HTTP 503 (test)")
        await super().report_overload(*args, claim_operation_id=claim_operation_id)


async def test_an_overload_is_sent_again_through_an_outage_as_a_result_is(
    registry: Running,
) -> None:
    """A result is sent again while the registry is out of reach (until the call's deadline);
    an overload was given up at the first failure: the call, which did not run, stayed claimed
    and ended outcome_unknown ("may have run: never retry") with the lease."""

    def overloaded(args: types.ForecastArgs) -> None:
        raise ToolOverloadedError

    client = OverloadsThroughAnOutage(registry.url, failures=2)
    async with providing(registry.url, Weather(behaviour=overloaded), client=client) as (
        task,
        stop,
        token,
    ):
        admin = HttpRegistryClient(registry.url)
        try:
            ref = await admin.call_resolved_tool(
                toolset=WEATHER,
                tool="weather.forecast",
                payload_json='{"city": "Rome"}',
                meta=ToolCallMeta(run_id="r", tool_call_id="c"),
                expected_registration_token=token,
            )
            # Waits for the overload (the stream answers once the call is overloaded or ends).
            outcome = await asyncio.wait_for(HttpResultStream(admin).await_result(ref), 30)
        finally:
            await admin.aclose()
        stop.set()
        report = await task
    assert outcome.status == "overloaded"
    assert client.attempts == 3
    assert (report.overloaded, report.lost) == (1, 0)
