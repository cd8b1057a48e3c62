"""The registry under load: call → provider → result, and planning-activity resolution.

Run from the repository root (needs the ``registry`` extra and Debian's ``redis-server``)::

    .venv/bin/python bench/registry.py [--calls 600] [--callers 1,8,32] [--toolsets 10,100]
    .venv/bin/python bench/registry.py --against ../main-checkout   # before/after, same run

Part 1 starts ``agentgen registry serve`` (an SQLite file, then a Redis server the script
starts itself), one provider process serving a one-tool toolset (concurrency 64, the tool
answers at once) and one process of callers, each in its own process on 127.0.0.1: each caller
makes calls one after the other, ``call_resolved_tool`` then waiting for the result
(``HttpResultStream``), as the runtime does. It reports, per store and number of concurrent
callers, the median and 99th percentile of the round trip, the calls completed per second and
the CPU time each process spent per call.

Part 2 registers 10 and 100 toolsets of 5 tools each (SQLite) and times planning activities of
an agent that consumes the whole registry, in a process of their own: the runtime reads the
registry (a batch resolve when the client has it, else a listing and one resolve per toolset),
then compiles every tool's contract. "cold" is the first activity of a fresh runtime and client
with the process's compiled-contract cache emptied (every tool compiled; the process ran one
activity before, so that imports are not counted); "warm" the median of the next five, where
unchanged toolsets (same digest) are not compiled again.

``--against DIR`` runs every measurement a second time with the agentgen source tree in DIR
(for instance a checkout of an earlier commit: the services, provider, callers and runtime all
run its code), alternating the two trees, so that both are measured under the same load.
Every row is a median over ``--repeat`` runs; the load average (one minute) is given beside it.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dsl", "codegen", "runtime", "templates")

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


@dataclass(frozen=True)
class Tree:
    """Where the agentgen code of a measurement comes from."""

    label: str
    #: A folder whose ``agentgen`` package is that code (None: this environment's).
    path: Path | None = None

    def env(self) -> dict[str, str]:
        variables = dict(os.environ)
        parts = [str(self.path)] if self.path is not None else []
        variables["PYTHONPATH"] = os.pathsep.join([*parts, str(ROOT)])
        return variables


def tree_of(source: Path, folder: Path) -> Tree:
    """A tree running the agentgen sources in ``source`` (a checkout), through a package of
    links laid out as the installed one."""
    package = folder / "agentgen"
    package.mkdir(parents=True)
    for name in PACKAGES:
        (package / name).symlink_to((source / name).resolve(), target_is_directory=True)
    return Tree(f"{source}", folder)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def process(tree: Tree, *args: str, out: bool = True) -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen(
        list(args),
        env=tree.env(),
        stdout=subprocess.PIPE if out else subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
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
def registry(tree: Tree, store: str, *options: str) -> Iterator[tuple[str, int]]:
    """``agentgen registry serve`` on a free loopback port (``options``: more of its options)."""
    import httpx2

    port = free_port()
    with process(
        tree, sys.executable, "-m", "agentgen.codegen.cli", "registry", "serve", "--store", store,
        "--port", str(port), "--log-level", "error", *options, out=False,
    ) as served:  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx2.TransportError):
                if httpx2.get(f"{url}/health", timeout=0.5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("the registry did not start")
            time.sleep(0.05)
        yield url, served.pid


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    with process(
        Tree("redis"), binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--dir", str(folder), out=False,
    ):  # fmt: skip
        time.sleep(0.3)
        yield f"redis://127.0.0.1:{port}/0"


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux), None where it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- the callers' process -----------------------------------------------------------------------


async def load(url: str, token: str, callers: int, calls: int, ready: Any) -> dict[str, Any]:
    """Warm up, say so, wait for the go, then measure ``calls`` calls by ``callers``."""
    from agentgen.runtime.registry.client import ToolCallMeta
    from agentgen.runtime.registry.http_client import HttpRegistryClient, HttpResultStream

    client = HttpRegistryClient(url)
    results = HttpResultStream(client, poll_ms=5_000)
    latencies: list[float] = []

    async def run(count: int) -> None:
        numbers = iter(range(count))

        async def caller() -> None:
            for index in numbers:
                started = time.perf_counter()
                ref = await client.call_resolved_tool(
                    toolset="quickstart.weather",
                    tool="weather.forecast",
                    payload_json='{"city":"Oslo"}',
                    meta=ToolCallMeta(run_id=f"bench-{time.time_ns()}", tool_call_id=str(index)),
                    expected_registration_token=token,
                )
                outcome = await results.await_result(ref)
                assert outcome.status == "completed", outcome
                latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(caller() for _ in range(callers)))

    await run(4 * callers)  # connections, provider and caches warm
    latencies.clear()
    await ready()
    cpu = time.process_time()
    began = time.perf_counter()
    await run(calls)
    elapsed = time.perf_counter() - began
    cpu = time.process_time() - cpu
    await client.aclose()
    return {
        "p50": statistics.median(latencies),
        "p99": percentile(latencies, 0.99),
        "rate": len(latencies) / elapsed,
        "calls": len(latencies),
        "cpu": cpu,
    }


def load_child(url: str, token: str, callers: int, calls: int) -> None:
    async def ready() -> None:
        print("warm", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

    print(json.dumps(asyncio.run(load(url, token, callers, calls, ready))), flush=True)


# --- part 1: calls ------------------------------------------------------------------------------


@dataclass
class Row:
    samples: list[dict[str, float]] = field(default_factory=list)

    def median(self, key: str) -> float:
        return statistics.median(s[key] for s in self.samples if key in s)


def measure_calls(
    tree: Tree, url: str, pids: dict[str, int], token: str, callers: int, calls: int
) -> dict[str, float]:
    with subprocess.Popen(
        [sys.executable, __file__, "--load-child", url, token, str(callers), str(calls)],
        env=tree.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        if child.stdout.readline().strip() != b"warm":
            raise RuntimeError("the callers' process failed")
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        load_average = os.getloadavg()[0]
        child.stdin.write(b"go\n")
        child.stdin.flush()
        result = json.loads(child.stdout.readline())
        after = {name: cpu_seconds(pid) for name, pid in pids.items()}
    sample = {k: float(v) for k, v in result.items()}
    sample["load"] = (load_average + os.getloadavg()[0]) / 2
    for name, start in before.items():
        end = after[name]
        if start is not None and end is not None:
            sample[f"cpu_{name}"] = (end - start) / result["calls"]
    sample["cpu_callers"] = result["cpu"] / result["calls"]
    return sample


def calls_rows(
    trees: Sequence[Tree], stores: Sequence[str], callers: Sequence[int], calls: int, repeat: int
) -> dict[tuple[str, str, int], Row]:
    rows: dict[tuple[str, str, int], Row] = {}
    with tempfile.TemporaryDirectory(prefix="agentgen-bench-") as tmp:
        folder = Path(tmp)
        for round_number in range(repeat):
            order = trees if round_number % 2 == 0 else list(reversed(trees))
            for tree in order:
                for store_name in stores:
                    with contextlib.ExitStack() as stack:
                        if store_name == "redis":
                            store = stack.enter_context(redis_server(folder))
                        else:
                            db = folder / f"bench-{round_number}-{id(tree)}.db"
                            store = f"sqlite:{db}"
                        url, registry_pid = stack.enter_context(registry(tree, store))
                        provider = stack.enter_context(
                            process(tree, sys.executable, "-c", PROVIDER, url)
                        )
                        assert provider.stdout is not None
                        token = provider.stdout.readline().decode().strip()
                        pids = {"registry": registry_pid, "provider": provider.pid}
                        for count in callers:
                            sample = measure_calls(tree, url, pids, token, count, calls)
                            rows.setdefault((tree.label, store_name, count), Row()).samples.append(
                                sample
                            )
                            print(
                                f"  {tree.label} {store_name} {count}: p50 "
                                f"{sample['p50'] * 1000:.2f} ms, {sample['rate']:,.0f} calls/s, "
                                f"load {sample['load']:.2f}",
                                file=sys.stderr,
                                flush=True,
                            )
    return rows


def calls_table(rows: dict[tuple[str, str, int], Row], labelled: bool) -> list[str]:
    lines = [
        ("| code " if labelled else "")
        + "| store | callers | p50 (ms) | p99 (ms) | calls/s | CPU per call: registry / "
        "provider / callers (ms) | load |",
        ("|---" if labelled else "") + "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (label, store, count), row in sorted(rows.items(), key=lambda item: item[0][1:]):
        cpu = " / ".join(
            f"{row.median(f'cpu_{name}') * 1000:.2f}"
            if any(f"cpu_{name}" in s for s in row.samples)
            else "?"
            for name in ("registry", "provider", "callers")
        )
        lines.append(
            (f"| {label} " if labelled else "")
            + f"| {store} | {count} | {row.median('p50') * 1000:.2f} | "
            f"{row.median('p99') * 1000:.2f} | {row.median('rate'):,.0f} | {cpu} | "
            f"{row.median('load'):.2f} |"
        )
    return lines


# --- part 2: planning-activity resolution -------------------------------------------------------


def synthetic_toolset(number: int, tools: int = 5) -> Any:
    from agentgen.runtime.contracts.declarations import ToolsetDeclaration
    from agentgen.runtime.contracts.wire import tool_schema
    from agentgen.runtime.search.document import SearchDocument

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

    async def plan_start(self, input: Any) -> Any:
        from agentgen.runtime import Message, PlanResult, TextPart

        definitions = input.agent.advertised_tool_definitions()
        return PlanResult(Message("assistant", (TextPart(str(len(definitions))),)))

    async def plan_resume(self, input: Any) -> Any:
        return await self.plan_start(input)


class WholeRegistry:
    async def resolve(self, catalog: Any) -> None:
        await catalog.include_registry("company", deferred=True)

    def allows(self, registry: str, toolset: str, version: str) -> bool:
        return registry == "company"


async def activities(url: str, count: int, toolsets: int) -> list[float]:
    """Times of ``count`` planning activities of one fresh runtime and client."""
    from agentgen.runtime import AgentDefinition, Runtime
    from agentgen.runtime.registry.http_client import HttpRegistryClient, HttpResultStream

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


def activities_child(url: str, count: int, toolsets: int) -> None:
    from agentgen.runtime.contracts import default_cache

    asyncio.run(activities(url, 1, toolsets))  # every module imported and initialised
    default_cache().clear()  # nothing compiled: the next first activity is cold
    print(json.dumps(asyncio.run(activities(url, count, toolsets))), flush=True)


async def publish(url: str, size: int) -> None:
    from agentgen.runtime.contracts.fingerprint import schema_fingerprint
    from agentgen.runtime.registry.http_client import HttpRegistryClient

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


def resolution_rows(
    trees: Sequence[Tree], sizes: Sequence[int], repeat: int
) -> dict[tuple[str, int], Row]:
    rows: dict[tuple[str, int], Row] = {}
    with tempfile.TemporaryDirectory(prefix="agentgen-bench-") as tmp:
        for size in sizes:
            for tree in trees:
                db = Path(tmp) / f"resolve{size}-{id(tree)}.db"
                with registry(tree, f"sqlite:{db}") as (url, _):
                    asyncio.run(publish(url, size))
                    for _ in range(repeat):
                        load_average = os.getloadavg()[0]
                        answer = subprocess.run(
                            [sys.executable, __file__, "--activities-child", url, "6", str(size)],
                            env=tree.env(),
                            capture_output=True,
                            check=True,
                        )
                        times = json.loads(answer.stdout.decode().strip().splitlines()[-1])
                        rows.setdefault((tree.label, size), Row()).samples.append(
                            {
                                "cold": times[0],
                                "warm": statistics.median(times[1:]),
                                "load": load_average,
                            }
                        )
    return rows


def resolution_table(rows: dict[tuple[str, int], Row], labelled: bool) -> list[str]:
    lines = [
        ("| code " if labelled else "")
        + "| toolsets | tools | cold activity (ms) | warm activity p50 (ms) | load |",
        ("|---" if labelled else "") + "|---:|---:|---:|---:|---:|",
    ]
    for (label, size), row in sorted(rows.items(), key=lambda item: item[0][1]):
        lines.append(
            (f"| {label} " if labelled else "")
            + f"| {size} | {size * 5} | {row.median('cold') * 1000:.1f} | "
            f"{row.median('warm') * 1000:.1f} | {row.median('load'):.2f} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/registry.py", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=600, help="measured calls per row")
    parser.add_argument("--callers", default="1,8,32")
    parser.add_argument("--stores", default="sqlite,redis")
    parser.add_argument("--toolsets", default="10,100")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (median)")
    parser.add_argument(
        "--against", type=Path, help="also measure the agentgen sources in this folder"
    )
    parser.add_argument("--load-child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--activities-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load_child:
        url, token, callers, calls = args.load_child
        load_child(url, token, int(callers), int(calls))
        return 0
    if args.activities_child:
        url, count, toolsets = args.activities_child
        activities_child(url, int(count), int(toolsets))
        return 0
    callers = [int(c) for c in args.callers.split(",") if c]
    stores = [s for s in args.stores.split(",") if s]
    sizes = [int(s) for s in args.toolsets.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="agentgen-bench-tree-") as links:
        trees = [Tree("this tree")]
        if args.against is not None:
            trees.append(tree_of(args.against, Path(links)))
        labelled = len(trees) > 1
        if stores and callers:
            rows = calls_rows(trees, stores, callers, args.calls, args.repeat)
            print("\n".join(calls_table(rows, labelled)))
            print()
        if sizes:
            print("\n".join(resolution_table(resolution_rows(trees, sizes, args.repeat), labelled)))
    print(json.dumps({"python": sys.version.split()[0], "cores": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
