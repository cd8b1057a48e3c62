"""The OpenTelemetry SDK, installed once for the test session, recording in memory.

The API takes a global tracer and meter provider once per process, so the first test that
needs them installs them (``agentgen.runtime.testing.record_telemetry``: an in-memory span
exporter behind a synchronous processor, an in-memory metric reader); each test clears the
spans and compares metric points before and after what it runs. Temporal's
``TracingInterceptor`` and agentgen's instruments both report to these providers, in the
test process (workers run there too).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentgen.runtime.testing import record_telemetry

#: A metric point: (metric name, its attributes as sorted pairs).
Key = tuple[str, tuple[tuple[str, Any], ...]]


@dataclass(frozen=True)
class Point:
    """A counter's value, or a histogram's count and sum."""

    count: float
    total: float = 0.0


@dataclass
class Recorder:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def agentgen_spans(self) -> list[ReadableSpan]:
        return [
            s
            for s in self.spans()
            if s.instrumentation_scope is not None and s.instrumentation_scope.name == "agentgen"
        ]

    def points(self) -> dict[Key, Point]:
        found: dict[Key, Point] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        key = (metric.name, tuple(sorted(dict(point.attributes or {}).items())))
                        if isinstance(point, HistogramDataPoint):
                            found[key] = Point(point.count, point.sum)
                        elif isinstance(point, NumberDataPoint):
                            found[key] = Point(point.value)
        return found


def delta(before: Mapping[Key, Point], after: Mapping[Key, Point], name: str) -> dict[Key, Point]:
    """What metric ``name`` recorded between two snapshots (cumulative points)."""
    out: dict[Key, Point] = {}
    for key, point in after.items():
        if key[0] != name:
            continue
        old = before.get(key, Point(0, 0))
        if point.count != old.count:
            out[key] = Point(point.count - old.count, point.total - old.total)
    return out


def recorder() -> Recorder:
    """The session's in-memory SDK (installed on first use, by whichever test or docs snippet
    asks first: ``agentgen.runtime.testing.record_telemetry``)."""
    installed = record_telemetry()
    return Recorder(installed.exporter, installed.reader)


# --- span trees ------------------------------------------------------------------------------


def label(span: ReadableSpan) -> str:
    """A span's name, with the planning activity's number (several share a name)."""
    activity = (span.attributes or {}).get("agentgen.plan.activity")
    return f"{span.name} #{activity}" if activity is not None else span.name


def tree(spans: Sequence[ReadableSpan], keep: Any = None) -> list[Any]:
    """The spans as nested ``(label, [children])``, children sorted by label. With ``keep``
    (a predicate), other spans are left out and their kept descendants move up to the nearest
    kept ancestor."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    kept = {i: s for i, s in by_id.items() if keep is None or keep(s)}

    def kept_parent(span: ReadableSpan) -> int | None:
        parent = span.parent.span_id if span.parent is not None else None
        while parent is not None and parent not in kept:
            above = by_id.get(parent)
            parent = above.parent.span_id if above is not None and above.parent else None
        return parent

    children: dict[int | None, list[ReadableSpan]] = {}
    for span in kept.values():
        children.setdefault(kept_parent(span), []).append(span)

    def build(span: ReadableSpan) -> tuple[str, list[Any]]:
        assert span.context is not None
        below = [build(c) for c in children.get(span.context.span_id, [])]
        return (label(span), sorted(below, key=lambda node: (node[0], json.dumps(node[1]))))

    roots = [build(s) for s in children.get(None, [])]
    return sorted(roots, key=lambda node: node[0])


def ancestors(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> Iterator[ReadableSpan]:
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    parent = span.parent.span_id if span.parent is not None else None
    while parent is not None and parent in by_id:
        above = by_id[parent]
        yield above
        parent = above.parent.span_id if above.parent is not None else None


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]
