"""Recording a process's spans and metrics in memory, to test what runs report.

The OpenTelemetry API takes its global tracer and meter providers once per process, so a test
suite cannot give each test providers of its own. :func:`record_telemetry` installs the SDK's
providers the first time it is called (an in-memory span exporter behind a synchronous
processor, an in-memory metric reader) and hands the same :class:`TelemetryRecorder` back
afterwards; tests clear the spans they read and compare metric points before and after.

It needs the OpenTelemetry SDK (``pip install opentelemetry-sdk``), imported when called.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentgen.runtime.telemetry import names
from agentgen.runtime.telemetry.instruments import SCOPE

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["MetricPoint", "TelemetryRecorder", "record_telemetry", "span_tree"]


@dataclass(frozen=True)
class MetricPoint:
    """One series of a metric since the process started: a counter's total, or a histogram's
    count and sum."""

    attributes: Mapping[str, Any]
    value: float
    count: int | None = None


@dataclass
class TelemetryRecorder:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self, scope: str | None = None) -> list[ReadableSpan]:
        """The spans ended so far (only those of instrumentation ``scope``, e.g.
        ``"agentgen"``, when given), in the order they ended."""
        return [
            span
            for span in self.exporter.get_finished_spans()
            if scope is None
            or (span.instrumentation_scope is not None and span.instrumentation_scope.name == scope)
        ]

    def clear(self) -> None:
        """Forget the spans recorded so far (metrics are cumulative: compare points)."""
        self.exporter.clear()

    def metric(self, name: str, scope: str = SCOPE) -> list[MetricPoint]:
        """The points of metric ``name`` of instrumentation ``scope`` since the process started.

        In agentgen's scope (the default) ``name`` must be one of agentgen's metrics
        (:data:`~agentgen.runtime.telemetry.names.METRICS`): a misspelt name has no points, and
        a test comparing them before and after a run passed without measuring anything. The
        application's own metrics are read with its meter's name as ``scope``; agentgen cannot
        know their names, so they are not checked."""
        from opentelemetry.sdk.metrics.export import HistogramDataPoint, NumberDataPoint

        if scope == SCOPE and name not in names.METRICS:
            close = difflib.get_close_matches(name, names.METRICS, n=3, cutoff=0.6)
            hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
            raise ValueError(
                f"TelemetryRecorder.metric: agentgen records no metric {name!r}; {hint}"
                f"its metrics are {', '.join(names.METRICS)} (an application's own metric is "
                "read with its meter's name as scope=)"
            )
        points: list[MetricPoint] = []
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data is not None else ():
            for scope_metrics in resource.scope_metrics:
                if scope_metrics.scope.name != scope:
                    continue
                for metric in scope_metrics.metrics:
                    if metric.name != name:
                        continue
                    for point in metric.data.data_points:
                        attributes = dict(point.attributes or {})
                        if isinstance(point, HistogramDataPoint):
                            points.append(MetricPoint(attributes, point.sum, point.count))
                        elif isinstance(point, NumberDataPoint):
                            points.append(MetricPoint(attributes, point.value))
        return points


@functools.cache
def record_telemetry() -> TelemetryRecorder:
    """The process's in-memory recorder, installed as the global providers on first call.

    Raises ``RuntimeError`` if the process already has providers of its own (the API keeps the
    first ones it is given): install this before anything else does.
    """
    from opentelemetry import metrics, trace

    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ModuleNotFoundError as exc:  # agentgen itself needs the API only
        raise ModuleNotFoundError(
            f"record_telemetry records through the OpenTelemetry SDK, which is not installed "
            f"({exc}): pip install 'agentgen[otel]' (or opentelemetry-sdk) in the test "
            "environment",
            name=exc.name,
        ) from None

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    if trace.get_tracer_provider() is not tracer_provider or (
        metrics.get_meter_provider() is not meter_provider
    ):
        raise RuntimeError(
            "record_telemetry: this process already has OpenTelemetry providers of its own; "
            "call it before anything installs them"
        )
    return TelemetryRecorder(exporter, reader)


#: Attributes a span tree shows next to each span's name, when the span has them.
SHOWN = (
    names.PLAN_ACTIVITY,
    names.SEARCH_QUERY,
    names.SEARCH_LOADED,
    names.INPUT_TOKENS,
    names.OUTPUT_TOKENS,
    names.TOOL_OUTCOME,
    names.CONFIRMATION_OUTCOME,
    names.CONFIRMATION_DECIDED_BY,
    names.REGISTRY_VERSION,
    names.ERROR_TYPE,
)


def span_tree(spans: Sequence[ReadableSpan], shown: Sequence[str] = SHOWN) -> str:
    """Spans as an indented tree, in the order they started, each with the ``shown``
    attributes it has: a trace read as text."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent if parent in by_id else None, []).append(span)
    lines: list[str] = []

    def walk(span: ReadableSpan, depth: int) -> None:
        attributes = dict(span.attributes or {})
        details = [f"{_label(key)}={_shown(attributes[key])}" for key in shown if key in attributes]
        lines.append("  " * depth + " ".join([span.name, *details]))
        assert span.context is not None
        for child in sorted(children.get(span.context.span_id, []), key=_start):
            walk(child, depth + 1)

    for root in sorted(children.get(None, []), key=_start):
        walk(root, 0)
    return "\n".join(lines)


def _label(key: str) -> str:
    return "error" if key == names.ERROR_TYPE else key.rsplit(".", 1)[-1]


def _start(span: ReadableSpan) -> int:
    return span.start_time or 0


def _shown(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)
    return str(value)
