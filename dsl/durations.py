"""Durations in designs: a number of seconds, a ``timedelta`` or a string such as ``"1m30s"``,
read the same way by every setting that takes one (registry timeouts, ``ModelTimeout``)."""

from __future__ import annotations

import math
import re
from datetime import timedelta

from agentgen.dsl.names import q

__all__ = ["MIN_DURATION_S", "Duration", "parse_duration"]

#: The shortest duration other than zero a setting takes, one millisecond: Temporal's workflow
#: timers round to whole milliseconds (a 0.4 ms timeout fires at once), and the registry's wire
#: and stores count whole milliseconds (``int(seconds * 1000)`` makes 0.4 ms a 0). A shorter
#: one would act as zero, or as no bound, wherever it went.
MIN_DURATION_S = 0.001

Duration = float | int | str | timedelta

_DURATION_PART = re.compile(
    r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)"
)  # ASCII digits: "١٠s" is no duration
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(
    value: object, *, positive: bool = False, hint: str = "give the time allowed"
) -> float:
    """Seconds from a number of seconds, a ``timedelta`` or a string such as ``"1m30s"``.

    Infinity and NaN are refused whatever the form (``float("inf")``, ``"1e400"``-sized digit
    strings): generated code would spell them as names that do not exist, and "no bound" is
    said by leaving a setting out. ``positive`` is for a bound that must act: zero is refused
    too. A duration other than zero below :data:`MIN_DURATION_S` is refused whatever the
    setting (it would act as zero). Raises ValueError with the reason, ending with ``hint``
    (what to do instead: the caller knows what leaving its setting out means).
    """
    if isinstance(value, bool):
        raise ValueError("expected a duration, got bool")
    if isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:  # an int beyond any float
            raise ValueError("is too long: the number exceeds any float") from None
    elif isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, str):
        text = value.strip()
        pos, seconds = 0, 0.0
        for match in _DURATION_PART.finditer(text):
            if match.start() != pos:
                break
            seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
            pos = match.end()
        if not text or pos != len(text):
            raise ValueError(
                f"invalid duration {q(value)}: use a number of seconds or a string like "
                '"250ms", "10s", "1m30s", "2h"'
            )
    else:
        raise ValueError(f"expected a duration, got {type(value).__name__}")
    if not math.isfinite(seconds) or (positive and seconds <= 0):
        shown = q(value) if isinstance(value, str) else value
        kind = "a positive, finite" if positive else "a finite"
        raise ValueError(f"must be {kind} duration, got {shown}; {hint}")
    if seconds < 0:
        raise ValueError(f"must be non-negative, got {value}")
    if seconds > 0 and seconds * 1000 < 1 - 1e-9:  # "0.1ms" + "0.9ms" is 1 ms, give or take
        shown = q(value) if isinstance(value, str) else value
        least = "at least 1ms" if positive else "0 or at least 1ms"
        raise ValueError(
            f"must be {least} (timers and the registry count whole milliseconds), got {shown}; "
            f"{hint}"
        )
    return seconds
