"""What agentgen's telemetry costs a run: off, the OpenTelemetry API alone, the SDK recording.

One scenario, the records example's agent on the in-memory engine with a scripted model: three
planning activities (a tool search and a compiled tool call in each of the first two, then the
answer), so a run reports 1 run, 3 planning, 3 model-call, 2 search-round and 2 tool spans, and
their metrics.

- **off**: ``Runtime(telemetry=Telemetry(enabled=False))``: agentgen makes no OpenTelemetry
  call at all. The baseline.
- **API, no SDK**: the default, in a process where nothing installed an SDK: the API's proxy
  tracer and meter hand out non-recording spans and no-op instruments.
- **SDK, in memory**: ``opentelemetry-sdk`` installed as the global providers, every span
  exported synchronously to an in-memory exporter (``SimpleSpanProcessor``), every metric
  aggregated for an in-memory reader.

The API takes its providers once per process, so each configuration runs in a process of its
own, several times in turn (off, API, SDK, off, ...), so that the machine's noise spreads over
all three. Each process warms up, then times runs one after another; the table gives the
median and p90 per run over all rounds and the difference with **off**.

    python bench/tracing.py [--runs 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agentgen.runtime import Runtime, Telemetry  # noqa: E402
from agentgen.runtime.model_client import ModelRequest  # noqa: E402
from agentgen.runtime.testing import Answer, Call, Turn  # noqa: E402
from bench.engines import wire  # noqa: E402  (the engines' benchmark's agent and executor)
from examples.records.gen.assistant.agents import assistant  # noqa: E402

CONFIGS = ("off", "api", "sdk")
LABELS = {"off": "off (baseline)", "api": "API, no SDK", "sdk": "SDK, in-memory exporter"}


def three_turns(request: ModelRequest) -> Turn | Answer:
    rounds = sum(1 for m in request.messages if m.role == "tool")
    if rounds == 0:
        return Turn(searches=["search records"], calls=[Call("records.search", {"query": "q"})])
    if rounds == 1:
        return Turn(searches=["analyze records"], calls=[Call("records.analyze", {"ids": ["r1"]})])
    return Answer("Sunny.")


def runtime(telemetry: Telemetry) -> Runtime:
    return wire(Runtime(telemetry=telemetry), three_turns)


def install_sdk() -> object:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    return exporter


async def child(config: str, runs: int, warmup: int) -> list[float]:
    exporter = install_sdk() if config == "sdk" else None
    rt = runtime(Telemetry(enabled=config != "off"))
    client = assistant.new_client(rt)
    times: list[float] = []
    for index in range(warmup + runs):
        started = time.perf_counter()
        outcome = await client.run("What do the records say?")
        elapsed = time.perf_counter() - started
        assert outcome.final_text == "Sunny."
        if index >= warmup:
            times.append(elapsed)
        if exporter is not None and index % 500 == 0:
            spans = exporter.get_finished_spans()  # type: ignore[attr-defined]
            assert len(spans) >= 11, "the SDK records the run's spans"
            exporter.clear()  # type: ignore[attr-defined]
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="timed runs per process")
    parser.add_argument("--rounds", type=int, default=5, help="processes per configuration")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--child", choices=CONFIGS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.child, args.runs, args.warmup))))
        return
    times: dict[str, list[float]] = {config: [] for config in CONFIGS}
    for _ in range(args.rounds):
        for config in CONFIGS:
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    config,
                    "--runs",
                    str(args.runs),
                    "--warmup",
                    str(args.warmup),
                ],
                capture_output=True,
                text=True,
                check=True,
                cwd=ROOT,
            )
            times[config].extend(json.loads(done.stdout))
    base = statistics.median(times["off"])
    print(
        f"{args.rounds} rounds × {args.runs} runs per configuration (3 planning activities, "
        "2 searches, 2 tool calls per run)\n"
    )
    print("| telemetry | median per run (µs) | p90 (µs) | over off (µs) | ÷ off |")
    print("|---|---:|---:|---:|---:|")
    for config in CONFIGS:
        median = statistics.median(times[config])
        p90 = statistics.quantiles(times[config], n=10)[-1]
        print(
            f"| {LABELS[config]} | {median * 1e6:,.0f} | {p90 * 1e6:,.0f} | "
            f"{(median - base) * 1e6:+,.0f} | {median / base:.2f} |"
        )


if __name__ == "__main__":
    main()
