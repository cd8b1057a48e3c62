"""What a running activity's heartbeats cost the Temporal server, and what they buy.

Every running activity of a durable run heartbeats (a lost worker is noticed within the heartbeat
timeout), and a cancellation reaches a running tool only in the server's answer to a heartbeat.
So the heartbeat interval trades load on the server (each heartbeat is a request, and on
Temporal Cloud an action) against how long a cancelled run's tool goes on.

For each worker setting it runs ``--runs`` runs at once, each of whose one tool call sleeps
``--seconds`` (a long tool, or a wait for a registry call's result), and counts the heartbeat
requests the dev server answered (its ``service_requests`` metric for
``RecordActivityTaskHeartbeat``): heartbeats per minute per running activity. Then it runs one
more, cancels its caller once the tool runs, and times how long the tool goes on.

    python bench/heartbeats.py [--runs 20] [--seconds 30] [--heartbeat-timeouts 30,300]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import socket
import statistics
import sys
import time
import urllib.request
import uuid
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from agentgen.runtime import ModelPlanner, Runtime, TemporalEngine, ToolContext  # noqa: E402
from agentgen.runtime.engines.temporal import TemporalSettings  # noqa: E402
from agentgen.runtime.model_client import ModelRequest  # noqa: E402
from agentgen.runtime.testing import Answer, Call, FunctionModel  # noqa: E402
from examples.records.gen.assistant.agents import assistant  # noqa: E402
from examples.records.gen.assistant.toolsets.records import types  # noqa: E402

#: The heartbeat requests the server's frontend answered (its history service counts each
#: again, as the frontend forwards it).
_HEARTBEATS = re.compile(
    r'^service_requests\{(?=[^}]*operation="RecordActivityTaskHeartbeat")'
    r'(?=[^}]*service_name="frontend")[^}]*\} (\S+)$',
    re.M,
)


class SlowRecords:
    """A lookup that takes ``seconds``; notes when one starts and how long a cancelled one
    went on after ``cancelled_at``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = asyncio.Event()
        self.cancelled_at = 0.0
        self.went_on: list[float] = []

    async def lookup(self, args: types.LookupArgs, context: ToolContext) -> types.Record:
        self.started.set()
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.went_on.append(time.monotonic() - self.cancelled_at)
            raise
        return types.Record(id=args.id, title="Tokyo", body="Sunny")

    async def search(self, args: types.SearchArgs, context: ToolContext) -> types.SearchResult:
        return types.SearchResult(ids=["r1"])

    async def analyze(self, args: types.AnalyzeArgs, context: ToolContext) -> types.Analysis:
        return types.Analysis(summary="sunny")


def one_lookup(request: ModelRequest) -> Call | Answer:
    if any(m.role == "tool" for m in request.messages):
        return Answer("Sunny.")
    return Call("records.lookup", {"id": "r1"}, call_id="lookup")


def runtime(engine: TemporalEngine, records: SlowRecords) -> Runtime:
    rt = Runtime(engine=engine)
    rt.register_model("scripted", FunctionModel(one_lookup))
    config = assistant.AssistantAgentConfig(
        planner=ModelPlanner("scripted"), records_executor=records
    )
    assistant.register_assistant_agent(rt, config)
    return rt


def heartbeats(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return sum(float(value) for value in _HEARTBEATS.findall(text))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def measure(
    env: Any, port: int, interval: float | None, timeout: float, args: argparse.Namespace
) -> tuple[float, float]:
    """Heartbeats per minute per running activity, and how long a cancelled tool went on."""
    from agentgen.runtime.engines.temporal import build_worker

    settings = TemporalSettings(heartbeat_timeout=timeout)
    queue = f"bench-{uuid.uuid4().hex}"
    records = SlowRecords(args.seconds)
    rt = runtime(TemporalEngine(client=env.client, task_queue=queue, settings=settings), records)
    options = {} if interval is None else {"heartbeat_interval": interval}
    async with build_worker(env.client, rt, queue, **options):
        before = heartbeats(port)
        start = time.monotonic()
        await asyncio.gather(
            *(assistant.new_client(rt).run("What do the records say?") for _ in range(args.runs))
        )
        minutes = (time.monotonic() - start) / 60
        rate = (heartbeats(port) - before) / args.runs / minutes
        records.seconds = 3600.0
        records.started.clear()
        running = asyncio.create_task(assistant.new_client(rt).run("What do the records say?"))
        await records.started.wait()
        await asyncio.sleep(0.5)  # past the heartbeat the activity sends as it starts
        records.cancelled_at = time.monotonic()
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        while not records.went_on:
            await asyncio.sleep(0.05)
    return rate, statistics.median(records.went_on)


async def numbers(args: argparse.Namespace) -> list[tuple[str, float, float, float]]:
    from temporalio.testing import WorkflowEnvironment

    from agentgen.runtime.engines.temporal import dev_server_path

    port = free_port()
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=dev_server_path(),
        ip="127.0.0.1",
        dev_server_log_level="error",
        dev_server_extra_args=["--metrics-port", str(port)],
    )
    rows = []
    try:
        for timeout in args.heartbeat_timeouts:
            for interval in args.intervals:
                label = "default" if interval is None else f"{interval:g} s"
                rate, went_on = await measure(env, port, interval, timeout, args)
                rows.append((label, timeout, rate, went_on))
    finally:
        await env.shutdown()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="runs at once, one long tool each")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long each tool runs")
    parser.add_argument(
        "--heartbeat-timeouts",
        type=lambda text: [float(value) for value in text.split(",")],
        default=[30.0, 300.0],
        help="TemporalSettings.heartbeat_timeout values, comma-separated (default: 30,300)",
    )
    parser.add_argument(
        "--intervals",
        type=lambda text: [None if v == "default" else float(v) for v in text.split(",")],
        default=[None, 1.0],
        help="build_worker heartbeat_interval values, comma-separated; 'default' for none "
        "given (default: default,1)",
    )
    args = parser.parse_args()
    rows = asyncio.run(numbers(args))
    print(
        "| heartbeat_interval | heartbeat_timeout (s) | heartbeats / min / activity "
        "| cancelled tool went on (s) |"
    )
    print("|---|---:|---:|---:|")
    for label, timeout, rate, went_on in rows:
        print(f"| {label} | {timeout:g} | {rate:.1f} | {went_on:.1f} |")
    print()
    print(f"{args.runs} runs at once, one {args.seconds:g} s tool each; {os.cpu_count()} cores.")


if __name__ == "__main__":
    main()
    # As bench/engines.py: the SDK's runtime thread can call into Python during finalization.
    sys.stdout.flush()
    os._exit(0)
