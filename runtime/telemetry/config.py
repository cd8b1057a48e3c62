"""What an application decides about agentgen's telemetry, and which decision is in force.

Spans and metrics go through the OpenTelemetry API to whatever providers the application set
(none: the API's no-op providers, and next to no cost). What the application decides is
:class:`Telemetry`, given to its ``Runtime``; the runtime makes it *active* (a context
variable) while its runs, planning activities and tool calls execute, so that code far from the
runtime (model adapters, registry clients, test models) follows the same decision without
being handed it.

Tool arguments and results are recorded only with ``capture_payloads=True``. They may hold
personal data, and a trace backend is often readable by more people than the application's own
storage, so recording them is the application's explicit choice, made in code next to the rest
of its wiring (a worker builds its runtime with the same factory, so its activities decide the
same way), not a process-wide environment variable that any deployment could flip.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["Telemetry", "TelemetrySetupError", "activated", "active", "first_attempt"]


class TelemetrySetupError(RuntimeError):
    """The OpenTelemetry providers the environment names cannot be loaded (the variable and
    its value are named, with what to do)."""


@dataclass(frozen=True, slots=True)
class Telemetry:
    """agentgen's spans, metrics and logs for one ``Runtime``.

    ``enabled=False`` turns agentgen's instrumentation off entirely (not even the API's no-op
    calls are made). ``capture_payloads=True`` records tool-call arguments and results on
    ``execute_tool`` spans (``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``), the
    confirmation prompt on confirmation spans, and both in DEBUG logs; without it they appear in
    no span, metric or log record. It governs the words of error messages too: without it a
    failure is reported by its type, kind or code and a stacktrace without messages
    (``agentgen.runtime.telemetry.exceptions``).
    """

    enabled: bool = True
    capture_payloads: bool = False

    def __post_init__(self) -> None:
        # A value read from configuration ("false", "0") is truthy: taken as given, it would
        # record personal data the application meant to keep out of its traces.
        for name in ("enabled", "capture_payloads"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise TypeError(
                    f"Telemetry.{name} must be True or False, not {value!r}; convert a "
                    "configuration value yourself (for example value.lower() in ('1', 'true'))"
                )


@dataclass(frozen=True, slots=True)
class _Scope:
    telemetry: Telemetry
    #: Whether this is the first attempt of the step (a durable engine retries activities):
    #: counts of what a step observed are recorded only once.
    first: bool = True


_DEFAULT = _Scope(Telemetry())  # frozen: safe to share
_ACTIVE: ContextVar[_Scope] = ContextVar("agentgen_telemetry", default=_DEFAULT)


def active() -> Telemetry:
    """The telemetry decision in force here (the default one outside any run)."""
    return _ACTIVE.get().telemetry


def first_attempt() -> bool:
    return _ACTIVE.get().first


@contextmanager
def activated(telemetry: Telemetry, *, attempt: int = 1) -> Iterator[None]:
    """Make ``telemetry`` the decision in force for the code run inside (and the tasks it
    starts). ``attempt`` is the step's attempt number when an engine retries it."""
    token = _ACTIVE.set(_Scope(telemetry, attempt <= 1))
    try:
        yield
    finally:
        _ACTIVE.reset(token)
