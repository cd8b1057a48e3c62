"""What reporting a failed operation costs: agentgen's span of a refused registry request, with
and without payload capture, against the OpenTelemetry SDK's own ``record_exception``.

A failure's report is the one place agentgen formats a traceback: without ``capture_payloads``
it walks the exception's chain itself (frames kept, messages left out), with it the SDK's
``traceback.format_exception``. The peer is what the SDK records for the same exception on a
bare span (``record_exception`` plus an error status). The exception is a ``RegistryError``
raised six frames deep from a ``KeyError`` (its cause); a successful span is timed as the
scale. Every span goes to an in-memory exporter through ``SimpleSpanProcessor``.

Configurations are timed in turn, several rounds, medians per span:

    python bench/failed_spans.py [--spans 3000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from opentelemetry import metrics, trace  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import Status, StatusCode  # noqa: E402

from agentgen.runtime.registry.client import RegistryError  # noqa: E402
from agentgen.runtime.telemetry import Telemetry, activated  # noqa: E402
from agentgen.runtime.telemetry.spans import RegistryRequest  # noqa: E402

EXPORTER = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(_provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
TRACER = trace.get_tracer("bench")


def _deep(levels: int) -> None:
    if levels == 0:
        try:
            raise KeyError("r1")
        except KeyError as exc:
            raise RegistryError("invalid_payload", "amount 'x' is not a number") from exc
    _deep(levels - 1)


def sdk_record_exception() -> None:
    with TRACER.start_as_current_span(
        "agentgen.registry.call company", record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            _deep(5)  # a new exception each time: one raised again grows its traceback
        except RegistryError as exc:
            span.record_exception(exc)
            span.set_attribute("error.type", exc.code)
            span.set_status(Status(StatusCode.ERROR, f"RegistryError: {exc}"))


def agentgen_failed() -> None:
    try:
        with RegistryRequest("company", "call"):
            _deep(5)
    except RegistryError:
        pass


def agentgen_ok() -> None:
    with RegistryRequest("company", "call"):
        pass


def _private(work: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        with activated(Telemetry()):
            work()

    return run


def _captured(work: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        with activated(Telemetry(capture_payloads=True)):
            work()

    return run


CONFIGS: dict[str, Callable[[], None]] = {
    "SDK record_exception + status (peer)": sdk_record_exception,
    "agentgen, capture off": _private(agentgen_failed),
    "agentgen, capture on": _captured(agentgen_failed),
    "agentgen, a successful span (scale)": _private(agentgen_ok),
}


def _time(work: Callable[[], None], spans: int) -> float:
    started = time.perf_counter()
    for _ in range(spans):
        work()
    elapsed = (time.perf_counter() - started) / spans
    EXPORTER.clear()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=3000, help="spans per round")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    for work in CONFIGS.values():
        _time(work, 300)  # warm up (linecache, the SDK's instruments)
    times: dict[str, list[float]] = {name: [] for name in CONFIGS}
    for _ in range(args.rounds):
        for name, work in CONFIGS.items():
            times[name].append(_time(work, args.spans))
    peer = statistics.median(times["SDK record_exception + status (peer)"])
    print(f"{args.rounds} rounds × {args.spans} spans, medians per span\n")
    print("| configuration | µs per span | ÷ peer |")
    print("|---|---:|---:|")
    for name in CONFIGS:
        median = statistics.median(times[name])
        print(f"| {name} | {median * 1e6:,.1f} | {median / peer:.2f} |")


if __name__ == "__main__":
    main()
