"""How durable runs time out and retry: one value, carried by every run and its children.

The settings travel in the workflow's input, so a child run and a run continued as new keep
the settings their run started with, whatever the worker that picks them up was given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agentgen.runtime.tasks import MIN_TIMEOUT_S, is_number, is_seconds

__all__ = ["LONGEST_DURATION", "TemporalSettings"]


@dataclass(frozen=True)
class TemporalSettings:
    """Timeouts (seconds) and retries of a durable run's activities.

    Planning activities (registry reads and model calls) and the bookkeeping steps retry
    transient failures with exponential backoff, up to ``retry_maximum_attempts``; the SPEC's
    typed errors never retry. Tool executions and registry admissions are never repeated: one
    that its worker lost, that a worker shutting down or an operator (pause, reset) stopped, or
    that ran past ``tool_timeout`` answers the call with ``outcome_unknown``. Waiting for a
    registry call's result is repeated on another worker (the registry keeps the result).
    """

    #: Longest one planning activity (registry reads, model calls, search rounds) may take.
    planning_timeout: float = 600.0
    #: Longest a tool may run (an executor call, or waiting for a registry call's result, its
    #: attempts on several workers together); it also backstops a registry admission, which
    #: its registry's ``Timeout`` bounds (a registry whose ``Timeout`` is not shorter is
    #: refused when a run starts).
    tool_timeout: float = 3600.0
    #: Longest a bookkeeping step may take (preparing a call, a denial, an agent's answer).
    step_timeout: float = 60.0
    #: A worker that stops heartbeating for this long is taken for lost, and its activity
    #: retried elsewhere (or, for a tool, answered with ``outcome_unknown``). Running
    #: activities heartbeat every third of it, at most every 10 s (or the worker's
    #: ``heartbeat_interval``): how soon a cancelled run's running tool hears of it.
    heartbeat_timeout: float = 30.0
    retry_initial_interval: float = 1.0
    retry_backoff: float = 2.0
    retry_maximum_interval: float = 60.0
    retry_maximum_attempts: int = 5
    #: A run continues as a new execution (keeping its transcript and saved contracts) once
    #: its history holds this many events, or earlier when Temporal suggests it.
    continue_as_new_after_events: int = 10_000
    #: The largest value a run sends to Temporal as one payload (a planning activity's input,
    #: a child run's, a continuation's): the server's blob size limit, 2 MiB by default. A
    #: larger one fails the run with ``PayloadTooLargeError`` (see :mod:`.payload_limits`).
    max_payload_bytes: int = 2 * 1024 * 1024

    def __post_init__(self) -> None:
        # Checked here, where the application builds them: a value Temporal cannot take fails
        # the workflow's task, which Temporal retries for ever (the run hangs, unexplained).
        # The floor is that of the other timeouts a run takes (RunPolicy.model_timeout,
        # InMemoryEngine(tool_timeout), the DSL's durations): Temporal's timers count whole
        # milliseconds, so a shorter duration acts as zero.
        for name in (
            "planning_timeout",
            "tool_timeout",
            "step_timeout",
            "heartbeat_timeout",
            "retry_initial_interval",
            "retry_maximum_interval",
        ):
            value = getattr(self, name)
            if not (is_seconds(value) and MIN_TIMEOUT_S <= value <= LONGEST_DURATION):
                raise (ValueError if is_number(value) else TypeError)(
                    f"TemporalSettings.{name} must be positive seconds, at least 0.001 (1 ms: "
                    "Temporal's timers count whole milliseconds) and at most "
                    f"{LONGEST_DURATION:,} (Temporal's longest duration), not {value!r}"
                )
        if not (_number(self.retry_backoff) and 1 <= self.retry_backoff < math.inf):
            raise (ValueError if is_number(self.retry_backoff) else TypeError)(
                f"TemporalSettings.retry_backoff must be at least 1, not {self.retry_backoff!r}"
            )
        if self.retry_maximum_interval < self.retry_initial_interval:
            raise ValueError(
                f"TemporalSettings.retry_maximum_interval ({self.retry_maximum_interval!r}) must "
                f"be at least retry_initial_interval ({self.retry_initial_interval!r})"
            )
        for name in ("retry_maximum_attempts", "continue_as_new_after_events", "max_payload_bytes"):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise (ValueError if type(value) is int else TypeError)(
                    f"TemporalSettings.{name} must be a whole number at least 1, not {value!r}"
                )


#: Temporal's longest duration (a protobuf ``Duration``: 10,000 years), in seconds.
LONGEST_DURATION = 315_576_000_000


def _number(value: object) -> bool:
    """A real number of seconds (NaN, which compares false with everything, is not one)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
