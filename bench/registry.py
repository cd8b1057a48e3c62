"""The registry under load: call → provider → result, and planning-activity resolution.

Run from the repository root (needs the ``registry`` extra and Debian's ``redis-server``)::

    .venv/bin/python bench/registry.py [--calls 600] [--callers 1,8,32] [--toolsets 10,100]

Part 1 starts ``agentgen registry serve`` (an SQLite file, then a Redis server the script
starts itself), one provider process serving a one-tool toolset (concurrency 64, the tool
answers at once), and callers in this process: each caller makes calls one after the other,
``call_resolved_tool`` then waiting for the result (``HttpResultStream``), as the runtime does.
It reports, per store and number of concurrent callers, the median and 99th percentile of the
round trip and the calls completed per second.

Part 2 registers 10 and 100 toolsets of 5 tools each (SQLite) and times planning activities of
an agent that consumes the whole registry: the runtime lists it and resolves every toolset (one
HTTP read each), then compiles every tool's contract. "cold" is the first activity of a fresh
runtime and client with the process's compiled-contract cache emptied (every tool compiled);
"warm" the median of the next ones, where unchanged toolsets (same digest) are not compiled
again.

Everything runs on 127.0.0.1; it prints Markdown tables and writes nothing outside a
temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentgen.runtime import (  # noqa: E402
    AgentDefinition,
    Message,
    PlanResult,
    Runtime,
    TextPart,
)
from agentgen.runtime.contracts.declarations import ToolsetDeclaration  # noqa: E402
from agentgen.runtime.contracts.fingerprint import schema_fingerprint  # noqa: E402
from agentgen.runtime.contracts.wire import tool_schema  # noqa: E402
from agentgen.runtime.registry.client import ToolCallMeta  # noqa: E402
from agentgen.runtime.registry.http_client import (  # noqa: E402
    HttpRegistryClient,
    HttpResultStream,
)
from agentgen.runtime.search.document import SearchDocument  # noqa: E402

PROVIDER = textwrap.dedent(
    """
    import asyncio, sys
    from agentgen.runtime.registry.http_client import HttpRegistryClient
    from agentgen.runtime.registry.provider import ServeOptions, serve_toolset
    from examples.quickstart.gen.quickstart.toolsets.weather import (
        declarations, executor, specs, types)

    ANSWER = types.Forecast(city="x", conditions="ok", temperature_c=1, wind="", summary="")

    class Instant:
        async def forecast(self, args, context):
            return ANSWER

    async def main():
        async with HttpRegistryClient(sys.argv[1]) as client:
            await serve_toolset(
                client, declarations.toolset(), executor.bind(Instant()), revision="bench",
                specs=specs.SPECS,
                options=ServeOptions(provider_id="bench", lease_seconds=60, concurrency=64,
                                     claim_wait_seconds=2),
                on_registered=lambda token: print(token, flush=True),
            )

    asyncio.run(main())
    """
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def env() -> dict[str, str]:
    variables = dict(os.environ)
    variables["PYTHONPATH"] = str(ROOT)
    return variables


@contextlib.contextmanager
def process(*args: str) -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen(
        list(args), env=env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        yield child
    finally:
        child.terminate()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


@contextlib.contextmanager
def registry(store: str) -> Iterator[str]:
    import httpx2

    port = free_port()
    with process(
        sys.executable, "-m", "agentgen.codegen.cli", "registry", "serve", "--store", store,
        "--port", str(port), "--log-level", "error",
    ):  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx2.TransportError):
                if httpx2.get(f"{url}/health", timeout=0.5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("the registry did not start")
            time.sleep(0.05)
        yield url


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    with process(
        binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--dir", str(folder),
    ):  # fmt: skip
        time.sleep(0.3)
        yield f"redis://127.0.0.1:{port}/0"


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def load(url: str, token: str, callers: int, calls: int) -> tuple[list[float], float]:
    client = HttpRegistryClient(url)
    results = HttpResultStream(client, poll_ms=5_000)
    latencies: list[float] = []
    counter = iter(range(calls))

    async def caller(number: int) -> None:
        for index in counter:
            started = time.perf_counter()
            ref = await client.call_resolved_tool(
                toolset="quickstart.weather",
                tool="weather.forecast",
                payload_json='{"city":"Oslo"}',
                meta=ToolCallMeta(
                    run_id=f"bench-{callers}-{time.time_ns()}", tool_call_id=str(index)
                ),
                expected_registration_token=token,
            )
            outcome = await results.await_result(ref)
            assert outcome.status == "completed", outcome
            latencies.append(time.perf_counter() - started)

    # Warm up connections and the provider before measuring.
    warm = iter(range(min(calls, 4 * callers)))
    counter, saved = warm, counter
    await asyncio.gather(*(caller(n) for n in range(callers)))
    latencies.clear()
    counter = saved
    began = time.perf_counter()
    await asyncio.gather(*(caller(n) for n in range(callers)))
    elapsed = time.perf_counter() - began
    await client.aclose()
    return latencies, elapsed


def calls_table(stores: Sequence[str], callers: Sequence[int], calls: int) -> list[str]:
    rows = [
        "| store | callers | calls | p50 (ms) | p99 (ms) | calls/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory(prefix="agentgen-bench-") as tmp:
        folder = Path(tmp)
        for store_name in stores:
            with contextlib.ExitStack() as stack:
                if store_name == "redis":
                    store = stack.enter_context(redis_server(folder))
                else:
                    store = f"sqlite:{folder / 'bench.db'}"
                url = stack.enter_context(registry(store))
                provider = stack.enter_context(process(sys.executable, "-c", PROVIDER, url))
                assert provider.stdout is not None
                token = provider.stdout.readline().decode().strip()
                for count in callers:
                    latencies, elapsed = asyncio.run(load(url, token, count, calls))
                    rows.append(
                        f"| {store_name} | {count} | {len(latencies)} | "
                        f"{statistics.median(latencies) * 1000:.2f} | "
                        f"{percentile(latencies, 0.99) * 1000:.2f} | "
                        f"{len(latencies) / elapsed:,.0f} |"
                    )
                    print(rows[-1], file=sys.stderr, flush=True)
    return rows


# --- planning-activity resolution ---------------------------------------------------------------


def synthetic_toolset(number: int, tools: int = 5) -> ToolsetDeclaration:
    declared = []
    for index in range(tools):
        tool_id = f"set{number}.tool_{index}"
        description = f"Tool {index} of toolset {number}: look up item {index} by its ID."
        payload = {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The item's ID."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["id"],
            "additionalProperties": False,
        }
        declared.append(
            tool_schema(
                tool_id=tool_id,
                title=f"Tool {index}",
                description=description,
                tags=(),
                payload_schema=payload,
                payload_name="Args",
                result_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
                result_name="Result",
                search=SearchDocument.from_text(f"{tool_id} Tool {index} {description}"),
            )
        )
    return ToolsetDeclaration(name=f"set{number}", tools=declared)


class Answer:
    """A planner that answers at once: a run is one planning activity."""

    async def plan_start(self, input: Any) -> PlanResult:
        definitions = input.agent.advertised_tool_definitions()
        return PlanResult(Message("assistant", (TextPart(str(len(definitions))),)))

    async def plan_resume(self, input: Any) -> PlanResult:
        return await self.plan_start(input)


class WholeRegistry:
    async def resolve(self, catalog: Any) -> None:
        await catalog.include_registry("company", deferred=True)

    def allows(self, registry: str, toolset: str, version: str) -> bool:
        return registry == "company"


async def activities(url: str, count: int, toolsets: int) -> list[float]:
    """Times of ``count`` planning activities of one fresh runtime and client, the process's
    compiled-contract cache emptied first (so the first activity compiles every tool)."""
    from agentgen.runtime.contracts import default_cache

    default_cache().clear()
    client = HttpRegistryClient(url)
    rt = Runtime()
    rt.register_registry("company", client, HttpResultStream(client))
    definition = AgentDefinition(id="bench.agent", description="bench", specs=())
    rt.register_agent(
        definition.with_registry_tools(WholeRegistry()), planner=Answer(), executors={}
    )
    times: list[float] = []
    try:
        for number in range(count):
            started = time.perf_counter()
            outcome = await rt.client("bench.agent").run("go", run_id=f"a{number}")
            times.append(time.perf_counter() - started)
            assert outcome.final_text == str(toolsets * 5), outcome.final_text
    finally:
        await client.aclose()
    return times


def resolution_table(sizes: Sequence[int], repeat: int) -> list[str]:
    rows = [
        "| toolsets | tools | cold activity (ms) | warm activity p50 (ms) |",
        "|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory(prefix="agentgen-bench-") as tmp:
        for size in sizes:
            with registry(f"sqlite:{Path(tmp) / f'resolve{size}.db'}") as url:

                async def publish(url: str = url, size: int = size) -> None:
                    async with HttpRegistryClient(url) as client:
                        for number in range(size):
                            declaration = synthetic_toolset(number)
                            await client.register(
                                declaration,
                                schema_fingerprint=schema_fingerprint(declaration),
                                revision="r1",
                                provider_id="bench",
                                incarnation_id="bench",
                                lease_ms=3_600_000,
                            )

                asyncio.run(publish())
                colds, warms = [], []
                for _ in range(repeat):
                    times = asyncio.run(activities(url, 6, size))
                    colds.append(times[0])
                    warms.extend(times[1:])
                rows.append(
                    f"| {size} | {size * 5} | {statistics.median(colds) * 1000:.1f} | "
                    f"{statistics.median(warms) * 1000:.1f} |"
                )
                print(rows[-1], file=sys.stderr, flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/registry.py", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=600, help="measured calls per row")
    parser.add_argument("--callers", default="1,8,32")
    parser.add_argument("--stores", default="sqlite,redis")
    parser.add_argument("--toolsets", default="10,100")
    parser.add_argument("--repeat", type=int, default=3, help="fresh runtimes per size")
    args = parser.parse_args(argv)
    callers = [int(c) for c in args.callers.split(",") if c]
    stores = [s for s in args.stores.split(",") if s]
    if stores and callers:
        print("\n".join(calls_table(stores, callers, args.calls)))
        print()
    sizes = [int(s) for s in args.toolsets.split(",") if s]
    if sizes:
        print("\n".join(resolution_table(sizes, args.repeat)))
    print(json.dumps({"python": sys.version.split()[0], "cores": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
