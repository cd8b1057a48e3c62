"""What a durable run costs: the in-memory engine against Temporal's dev server.

One scenario, the records example's agent with a scripted model: three planning activities
(two rounds of one compiled tool call, then the answer), so a run is 3 model calls and 2 tool
executions; on Temporal that is 3 planning, 2 prepare and 2 execute activities.

- **Per-run latency**: runs one after another; median and p90 wall time per run, in memory and
  on Temporal (a worker in the same process, the dev server on 127.0.0.1). The difference is
  the engine's overhead per run.
- **Throughput**: runs per second with 1 and 4 workers, many runs in flight. On Temporal the
  workers are ``agentgen worker`` processes and this process only starts runs and waits for
  them; in memory the "workers" are processes running the same runs in their own event loop.

Everything shares the machine's cores (the dev server, the workers, this process), so the
throughput rows say what one machine does, not what a cluster would.

    python bench/engines.py [--runs 200] [--throughput-runs 400] [--memory-runs 40000]
                            [--workers 1,4]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agentgen.runtime import ModelPlanner, Runtime, TemporalEngine, ToolContext  # noqa: E402
from agentgen.runtime.model_client import ModelRequest  # noqa: E402
from agentgen.runtime.testing import Answer, Call, FunctionModel  # noqa: E402
from examples.records.gen.assistant.agents import assistant  # noqa: E402
from examples.records.gen.assistant.toolsets.records import types  # noqa: E402


class Records:
    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        return types.Record(id=args.id, title="Tokyo", body="Sunny")

    async def search(self, args: types.SearchArgs, context: ToolContext) -> types.SearchResult:
        return types.SearchResult(ids=["r1"])

    async def analyze(self, args: types.AnalyzeArgs, context: ToolContext) -> types.Analysis:
        return types.Analysis(summary="sunny")


def three_turns(request: ModelRequest) -> Call | Answer:
    rounds = sum(1 for m in request.messages if m.role == "tool")
    if rounds < 2:
        return Call("records.lookup", {"id": f"r{rounds}"}, call_id=f"lookup-{rounds}")
    return Answer("Both records say it is sunny.")


def build(engine: Any = None) -> Runtime:
    """The application: also what ``agentgen worker --app engines:build`` runs."""
    if engine is None and "AGENTGEN_BENCH_TEMPORAL" in os.environ:
        engine = TemporalEngine(
            address=os.environ["AGENTGEN_BENCH_TEMPORAL"],
            task_queue=os.environ["AGENTGEN_BENCH_QUEUE"],
        )
    return wire(Runtime(engine=engine), three_turns)


def wire(rt: Runtime, script: Callable[[ModelRequest], Any]) -> Runtime:
    """``rt`` with the records agent, planned by a function model running ``script``."""
    rt.register_model("scripted", FunctionModel(script))
    assistant.register_assistant_agent(
        rt,
        assistant.AssistantAgentConfig(
            planner=ModelPlanner("scripted"), records_executor=Records()
        ),
    )
    return rt


async def one_run(rt: Runtime) -> float:
    start = time.perf_counter()
    outcome = await assistant.new_client(rt).run("What do the records say?")
    assert outcome.tool_calls == 2, outcome
    return time.perf_counter() - start


async def sequential(rt: Runtime, runs: int) -> list[float]:
    for _ in range(min(10, runs)):  # warm-up: imports, caches, connections
        await one_run(rt)
    return [await one_run(rt) for _ in range(runs)]


async def concurrent(rt: Runtime, runs: int, concurrency: int) -> float:
    """Runs per second, ``concurrency`` in flight at a time."""
    gate = asyncio.Semaphore(concurrency)

    async def gated() -> None:
        async with gate:
            await one_run(rt)

    start = time.perf_counter()
    await asyncio.gather(*(gated() for _ in range(runs)))
    return runs / (time.perf_counter() - start)


def _memory_worker(args: tuple[int, int]) -> None:
    runs, concurrency = args
    asyncio.run(concurrent(build(), runs, concurrency))


def memory_throughput(workers: int, runs: int, concurrency: int) -> float:
    share = runs // workers
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool:
        pool.map(_memory_worker, [(2, 1)] * workers)  # warm every process up
        start = time.perf_counter()
        pool.map(_memory_worker, [(share, concurrency)] * workers)
        return share * workers / (time.perf_counter() - start)


def start_workers(count: int, address: str, queue: str) -> list[subprocess.Popen[str]]:
    env = {
        **os.environ,
        "AGENTGEN_BENCH_TEMPORAL": address,
        "AGENTGEN_BENCH_QUEUE": queue,
        "PYTHONPATH": str(ROOT),
    }
    agentgen = Path(sys.executable).with_name("agentgen")
    workers = []
    for _ in range(count):
        process = subprocess.Popen(
            [str(agentgen), "worker", "--task-queue", queue, "--app", "engines:build"],
            cwd=Path(__file__).parent,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("agentgen worker:"), line
        workers.append(process)
    return workers


async def temporal_numbers(args: argparse.Namespace) -> dict[str, Any]:
    from temporalio.testing import WorkflowEnvironment

    from agentgen.runtime.engines.temporal import build_worker, dev_server_path

    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=dev_server_path(), dev_server_log_level="error"
    )
    try:
        queue = f"bench-{uuid.uuid4().hex}"
        rt = build(TemporalEngine(client=env.client, task_queue=queue))
        async with build_worker(env.client, rt, queue):
            latencies = await sequential(rt, args.temporal_runs)
            dispatch = await task_dispatch(env, rt)
        address = env.client.service_client.config.target_host
        rates = {}
        for count in args.workers:
            queue = f"bench-{uuid.uuid4().hex}"
            workers = start_workers(count, address, queue)
            try:
                client_rt = build(TemporalEngine(client=env.client, task_queue=queue))
                await concurrent(client_rt, min(20, args.throughput_runs), args.concurrency)
                rates[count] = await concurrent(client_rt, args.throughput_runs, args.concurrency)
            finally:
                for worker in workers:
                    worker.terminate()
                for worker in workers:
                    worker.wait(timeout=30)
        return {"latencies": latencies, "rates": rates, "dispatch": dispatch}
    finally:
        await env.shutdown()


async def task_dispatch(env: Any, rt: Runtime) -> tuple[int, float]:
    """One more run's workflow tasks, and the time the server held them before a worker got
    them (scheduled → started, from the run's history): where the overhead goes."""
    from temporalio.api.enums.v1 import EventType

    run_id = f"bench-{uuid.uuid4().hex}"
    await assistant.new_client(rt).run("What do the records say?", run_id=run_id)
    history = await env.client.get_workflow_handle(run_id).fetch_history()
    scheduled: dict[int, float] = {}
    waits = []
    for event in history.events:
        at = event.event_time.ToNanoseconds() / 1e9
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            scheduled[event.event_id] = at
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            waits.append(
                at - scheduled[event.workflow_task_started_event_attributes.scheduled_event_id]
            )
    return len(waits), sum(waits)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="sequential in-memory runs")
    parser.add_argument("--temporal-runs", type=int, default=100, help="sequential durable runs")
    parser.add_argument("--throughput-runs", type=int, default=400, help="durable runs per row")
    parser.add_argument("--memory-runs", type=int, default=40_000, help="in-memory runs per row")
    parser.add_argument("--concurrency", type=int, default=32, help="runs in flight")
    parser.add_argument(
        "--workers",
        type=lambda text: [int(count) for count in text.split(",")],
        default=[1, 4],
        help="worker counts of the throughput columns, comma-separated (default: 1,4)",
    )
    args = parser.parse_args()

    memory = asyncio.run(sequential(build(), args.runs))
    memory_rates = {
        n: memory_throughput(n, args.memory_runs, args.concurrency) for n in args.workers
    }
    durable = asyncio.run(temporal_numbers(args))

    m50, t50 = statistics.median(memory), statistics.median(durable["latencies"])
    counts = "".join(f" runs/s, {n} worker{'s' if n > 1 else ''} |" for n in args.workers)
    print(f"| engine | per run p50 (ms) | per run p90 (ms) |{counts}")
    print("|---|---:|---:|" + "---:|" * len(args.workers))
    memory_cells = "".join(f" {memory_rates[n]:,.0f} |" for n in args.workers)
    durable_cells = "".join(f" {durable['rates'][n]:,.1f} |" for n in args.workers)
    print(f"| in memory | {m50 * 1e3:.2f} | {quantile(memory, 0.9) * 1e3:.2f} |{memory_cells}")
    print(
        f"| Temporal dev server | {t50 * 1e3:.1f} | {quantile(durable['latencies'], 0.9) * 1e3:.1f}"
        f" |{durable_cells}"
    )
    print()
    print(
        f"Overhead per 3-turn run (p50 difference): {(t50 - m50) * 1e3:.1f} ms "
        f"({(t50 - m50) / 7 * 1e3:.1f} ms per activity, 7 activities a run); "
        f"{os.cpu_count()} cores."
    )
    tasks, held = durable["dispatch"]
    print(
        f"Of one run's time on Temporal, {held * 1e3:.0f} ms is its {tasks} workflow tasks "
        "waiting in the server for a worker (scheduled → started)."
    )


if __name__ == "__main__":
    main()
    # Exit without finalizing the interpreter: the Temporal SDK's runtime thread can still call
    # into Python while it is torn down, which aborts the process after the table is printed.
    sys.stdout.flush()
    os._exit(0)
