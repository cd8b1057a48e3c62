"""agentgen's OpenTelemetry instrumentation: spans, metrics and logs of runs.

The runtime calls these helpers from the run's steps (the planning step, the execution steps,
registry requests), the model planner, the model adapters' search rounds and both engines; the
application decides with :class:`Telemetry` (``Runtime(telemetry=...)``) and by installing an
OpenTelemetry SDK, or not. See docs/observability.md for every span, attribute and metric.
"""

from __future__ import annotations

from agentgen.runtime.telemetry.config import (
    Telemetry,
    TelemetrySetupError,
    activated,
    active,
    first_attempt,
)

__all__ = ["Telemetry", "TelemetrySetupError", "activated", "active", "first_attempt"]
