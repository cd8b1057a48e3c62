"""Restarts: kill -9 the registry process (SQLite, then Redis) and a provider in the middle of
a batch. After the restart every accepted call has completed exactly once, or ended with an
explicit ``outcome_unknown`` (its provider died holding it); none is lost, none runs twice.
Executions are logged by the provider processes themselves.

When the killed provider's lease outlives the restarts (as a lease of a minute does), the
calls in line wait for the next incarnation, which runs them. When it lapses first, the
toolset has no provider for a while: the calls in line then may end ``no_provider``, and none
of those ran.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentgen.runtime.registry.client import RegistryError, ToolCallMeta
from agentgen.runtime.registry.http_client import (
    HttpRegistryClient,
    HttpResultStream,
    RetryPolicy,
)
from tests.registry.conftest import RedisServer, free_port, python_process, start_registry_process

CALLS = 40
WEATHER = "quickstart.weather"

PROVIDER = textwrap.dedent(
    """
    import asyncio, os, sys
    from agentgen.runtime.registry.http_client import HttpRegistryClient, RetryPolicy
    from agentgen.runtime.registry.provider import ServeOptions, serve_toolset
    from examples.quickstart.gen.quickstart.toolsets.weather import (
        declarations, executor, specs, types)

    LOG = sys.argv[2]

    class Logged:
        async def forecast(self, args, context):
            with open(LOG, "a") as log:  # one line per execution, on disk before it runs
                log.write(context.tool_call_id + "\\n")
                log.flush()
                os.fsync(log.fileno())
            await asyncio.sleep(0.15)
            return types.Forecast(city=args.city, conditions="ok", temperature_c=1, wind="",
                                  summary=sys.argv[3])

    async def main():
        client = HttpRegistryClient(sys.argv[1], retry=RetryPolicy(50, 0.05, 0.3))
        await serve_toolset(
            client, declarations.toolset(), executor.bind(Logged()), revision="r1",
            specs=specs.SPECS,
            options=ServeOptions(provider_id="restart", lease_seconds=float(sys.argv[4]),
                                 concurrency=4, claim_wait_seconds=0.3),
            on_registered=lambda token: print("registered", token, flush=True),
        )

    asyncio.run(main())
    """
)


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "redis":
        redis: RedisServer = request.getfixturevalue("redis_server")
        subprocess.run(["redis-cli", "-p", str(redis.port), "-n", "2", "FLUSHDB"], check=True,
                       capture_output=True)  # fmt: skip
        yield f"redis://127.0.0.1:{redis.port}/2"
    else:
        yield f"sqlite:{tmp_path / 'restart.db'}"


#: Provider leases (seconds): one that outlives restarting the registry and the provider on a
#: loaded machine, and one that lapses while they restart.
LEASES = {"bridges": "12", "lapses": "1.5"}


def start_provider(
    url: str, log: Path, name: str, lease: str
) -> tuple[subprocess.Popen[bytes], str]:
    process = python_process(PROVIDER, url, str(log), name, lease)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith(b"registered"):
        process.kill()
        raise AssertionError(f"provider did not register: {line!r} {process.stderr.read()!r}")  # type: ignore[union-attr]
    return process, line.split()[1].decode()


def kill9(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(10)


async def one_call(
    client: HttpRegistryClient, results: HttpResultStream, token: str, number: int
) -> tuple[str, str]:
    try:
        ref = await client.call_resolved_tool(
            toolset=WEATHER,
            tool="weather.forecast",
            payload_json=json.dumps({"city": f"c{number}"}),
            meta=ToolCallMeta(run_id="batch", tool_call_id=f"call-{number}"),
            expected_registration_token=token,
        )
        outcome = await results.await_result(ref)
    except RegistryError as exc:
        return exc.code, exc.message
    summary = json.loads(outcome.payload_json)["summary"] if outcome.status == "completed" else ""
    return outcome.status, summary


@pytest.mark.parametrize("lease", sorted(LEASES))
async def test_kill_9_the_registry_and_a_provider_mid_batch(
    store: str, lease: str, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "executions.log"
    log.touch()
    registry = start_registry_process(store, port, "--redelivery", "300ms")
    processes = [registry]
    try:
        first, token = await asyncio.to_thread(start_provider, url, log, "first", LEASES[lease])
        processes.append(first)
        client = HttpRegistryClient(url, retry=RetryPolicy(80, 0.05, 0.3))
        results = HttpResultStream(client, poll_ms=1_000)
        calls = [asyncio.create_task(one_call(client, results, token, n)) for n in range(CALLS)]
        while len(log.read_text().split()) < 6:  # mid-batch
            await asyncio.sleep(0.02)
        kill9(registry)
        kill9(first)
        registry = await asyncio.to_thread(
            start_registry_process, store, port, "--redelivery", "300ms"
        )
        processes.append(registry)
        second, again = await asyncio.to_thread(start_provider, url, log, "second", LEASES[lease])
        processes.append(second)
        assert again == token  # same contract and revision: the same admission
        outcomes = await asyncio.wait_for(asyncio.gather(*calls), 120)
        await client.aclose()
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()

    statuses = Counter(status for status, _ in outcomes)
    assert sum(statuses.values()) == CALLS  # none lost
    executions = Counter(log.read_text().split())
    assert max(executions.values()) == 1  # none ran twice
    for number, (status, _) in enumerate(outcomes):
        if status == "completed":
            assert executions[f"call-{number}"] == 1
        if status == "no_provider":
            assert executions[f"call-{number}"] == 0  # it did not run
    if lease == "lapses":
        assert set(statuses) <= {"completed", "outcome_unknown", "no_provider"}, outcomes
        return
    assert set(statuses) <= {"completed", "outcome_unknown"}, outcomes
    # The restarted provider finished the batch; the killed one's calls were not run again.
    assert statuses["completed"] >= CALLS - 8
    assert {summary for status, summary in outcomes if status == "completed"} <= {
        "first",
        "second",
    }
    assert any(summary == "second" for _, summary in outcomes)
