"""An activity attempt's heartbeats all go through one clock: a planning attempt's usage
heartbeats (one per model response) keep its gap clock fresh, as the periodic ones do, so a
withdrawal while responses keep arriving is not taken for a missed heartbeat; a gap longer
than the heartbeat timeout between any two is. Run in the SDK's activity test environment,
with the attempt's clock in the test's hands."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from agentgen.runtime.engines.temporal import attempts
from agentgen.runtime.engines.temporal.activities import heartbeat_every
from agentgen.runtime.engines.temporal.attempts import Attempt
from agentgen.runtime.model_client import Usage


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(attempts.time, "monotonic", clock)
    return clock


def _environment(sent: list[tuple[Any, ...]]) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info,
        heartbeat_timeout=timedelta(seconds=1),
        start_to_close_timeout=timedelta(seconds=60),
    )
    env.on_heartbeat = lambda *details: sent.append(details)
    return env


def test_usage_heartbeats_keep_the_gap_clock_fresh(clock: Clock) -> None:
    sent: list[tuple[Any, ...]] = []

    def responses() -> Attempt:
        attempt = Attempt(metered=True)
        for _ in range(5):  # a response every 0.6 s: 3 s in all, no gap over 1 s
            clock.now += 0.6
            attempt.add(Usage(10, 5))
        return attempt

    attempt = _environment(sent).run(responses)
    assert not attempt.timed_out()
    assert not attempt.heartbeat_missed
    assert len(sent) == 5
    assert sent[-1][0]["agentgen.usage"] == {
        "input_tokens": 50,
        "output_tokens": 25,
        "unreported": 0,
    }


def test_a_gap_before_a_usage_heartbeat_is_a_missed_heartbeat(clock: Clock) -> None:
    sent: list[tuple[Any, ...]] = []

    def late_response() -> Attempt:
        attempt = Attempt(metered=True)
        attempt.heartbeat()
        clock.now += 1.5  # the event loop was blocked past the heartbeat timeout
        attempt.add(Usage(10, 5))
        clock.now += 0.1
        return attempt

    attempt = _environment(sent).run(late_response)
    assert attempt.heartbeat_missed
    assert attempt.timed_out()


@pytest.mark.parametrize(
    ("timeout", "given", "every"),
    [
        (30.0, None, 10.0),  # the default heartbeat timeout: a third of it
        (300.0, None, 10.0),  # at most 10 s: a cancelled run's tool goes on no longer
        (6.0, None, 2.0),
        (0.06, None, 0.05),  # at least 50 ms
        (None, None, 10.0),  # no timeout (the workflow always sets one): as for 30 s
        (30.0, 1.0, 1.0),  # the worker's interval, when given, is the most
        (30.0, 60.0, 10.0),  # ... but never more than a third of the timeout
        (300.0, 60.0, 60.0),
    ],
)
def test_the_heartbeat_interval_is_derived_from_the_heartbeat_timeout(
    timeout: float | None, given: float | None, every: float
) -> None:
    """Heartbeats went out every second whatever the heartbeat timeout: 60 requests a minute
    for each running activity (``bench/heartbeats.py``), however long it ran. A worker given no
    interval now heartbeats every third of the run's heartbeat timeout (a lost worker is still
    noticed within it), at most every 10 s (how long a cancelled run's tool may go on)."""
    duration = None if timeout is None else timedelta(seconds=timeout)
    assert heartbeat_every(duration, given) == pytest.approx(every)
