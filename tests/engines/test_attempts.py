"""What the attempts before a planning attempt cost, read from the heartbeat details Temporal
kept (runs on the server: ``test_model_calls.py``)."""

from __future__ import annotations

from typing import Any

from agentgen.runtime.engines.temporal.attempts import earlier_usage
from agentgen.runtime.engines.temporal.usage_details import KEY
from agentgen.runtime.model_client import Usage


def _details(attempt: int, final: bool, *counts: int) -> list[dict[str, Any]]:
    usage = dict(zip(("input_tokens", "output_tokens", "unreported"), counts, strict=True))
    return [{KEY: usage, "attempt": attempt, "final": final}]


def test_a_first_attempt_starts_from_nothing() -> None:
    assert earlier_usage(1, []) == Usage()
    assert earlier_usage(1, _details(1, True, 10, 5, 0)) == Usage()


def test_the_previous_attempt_s_final_account_is_exact() -> None:
    assert earlier_usage(2, _details(1, True, 10, 5, 0)) == Usage(10, 5)
    assert earlier_usage(3, _details(2, True, 30, 15, 1)) == Usage(30, 15, unreported=1)


def test_an_attempt_whose_final_account_is_missing_counts_one_unreported_response() -> None:
    # The previous attempt's last heartbeat, not its final account (timed out, worker lost).
    assert earlier_usage(2, _details(1, False, 10, 5, 0)) == Usage(10, 5, unreported=1)
    # Attempt 2 sent nothing at all: attempt 1's final account, and one unknown attempt.
    assert earlier_usage(3, _details(1, True, 10, 5, 0)) == Usage(10, 5, unreported=1)
    assert earlier_usage(3, _details(1, False, 10, 5, 0)) == Usage(10, 5, unreported=2)


def test_no_details_or_others_count_every_earlier_attempt_as_unknown() -> None:
    # None (an older release's worker heartbeats without details), or not agentgen's.
    assert earlier_usage(3, []) == Usage(unreported=2)
    malformed: list[list[Any]] = [
        ["progress"],
        [
            {
                KEY: {"input_tokens": -1, "output_tokens": 0, "unreported": 0},
                "attempt": 1,
                "final": True,
            }
        ],
        [{KEY: {"input_tokens": 1, "output_tokens": 0}, "attempt": 1, "final": True}],
        [{KEY: {"input_tokens": 1, "output_tokens": 0, "unreported": 0}, "attempt": 1}],
        _details(2, True, 10, 5, 0),  # written by this attempt or a later one: not earlier
        _details(0, True, 10, 5, 0),
    ]
    for details in malformed:
        assert earlier_usage(2, details) == Usage(unreported=1), details
