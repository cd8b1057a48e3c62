"""Checks of what an HTTP registry client is built with, made when it is built.

An option the registry's API cannot carry used to be taken, and then fail at the first request
that carried it: a bearer token with a line break in it (a token read from a file) failed every
request inside httpx with an error quoting the header, secret and all; a long-poll wait over
the API's bound failed only after a call was admitted (and had run), reading as an unknown
outcome. These checks refuse such options in the constructor instead, naming the option and
what it may be, never a token's value.
"""

from __future__ import annotations

import math

from agentgen.runtime.registry import api

__all__ = [
    "MAX_BACKOFF_S",
    "MAX_RETRIES",
    "bearer_token_problem",
    "checked_wait_ms",
    "retry_problem",
    "retry_type_problem",
]

#: The most retries a client's ``RetryPolicy`` takes for one request: the design's
#: ``Retry(max_retries)`` bound (``agentgen.dsl.registries.MAX_RETRIES``; the DSL does not
#: import the runtime, a test keeps the two equal). A larger count kept a provider or a
#: command retrying an outage for hours where it should fail and say so.
MAX_RETRIES = 100

#: The longest wait (seconds) between a client's retries, ``backoff_max`` (and so
#: ``backoff_base``), as the design's ``Retry`` bounds it (``agentgen.dsl.registries.
#: MAX_BACKOFF_S``, kept equal by a test). A minute is the longest wait the registry's API
#: carries (``api.MAX_WAIT_MS``) and Temporal's default ``retry_maximum_interval`` between a
#: planning activity's attempts: a registry back within a minute is found at the next retry,
#: and ``MAX_RETRIES`` such waits hold a request under two hours. ``Retry(100, "1h", "24h")``
#: held a provider or a command for days.
MAX_BACKOFF_S = 60.0


def bearer_token_problem(token: str) -> str | None:
    """What makes ``token`` unsendable as ``Authorization: Bearer <token>``, or None.

    A token is sent as it is given: only visible ASCII characters (``!`` to ``~``) may stand in
    it. The problem names the offending character's kind and position, never the token (it
    travels to logs, run failures and tool errors a model reads)."""
    for position, char in enumerate(token, start=1):
        if "!" <= char <= "~":
            continue
        if char in "\r\n":
            kind = "a line break"
        elif char.isspace():
            kind = "whitespace"
        elif not char.isascii():
            kind = "a non-ASCII character"
        else:
            kind = "a control character"
        where = "its last character" if position == len(token) else f"character {position}"
        return f"{where} is {kind}"
    return None


def checked_wait_ms(value: object, option: str, owner: str) -> int:
    """``value`` when it is a wait the registry's API carries (whole milliseconds from 0 to
    :data:`api.MAX_WAIT_MS`); otherwise ``ValueError`` naming ``owner``'s ``option``, the value
    and the bounds (``TypeError`` when it is not an int at all)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= api.MAX_WAIT_MS:
        return value
    if type(value) is not int:  # "500", 0.5, True: a wrong type, not a wait out of bounds
        raise TypeError(
            f"{owner}: {option} must be a whole number of milliseconds (an int), not "
            f"{value!r} ({type(value).__name__})"
        )
    raise ValueError(
        f"{owner}: {option}={value!r} is out of bounds: a whole number of milliseconds from 0 "
        f"to {api.MAX_WAIT_MS:,} (the longest wait the registry's API carries)"
    )


def retry_type_problem(
    max_retries: object, backoff_base: object, backoff_max: object
) -> str | None:
    """Which of these settings is not of its type (a count not an int, a backoff not a number
    of seconds), naming the option; or None. A wrong type is a ``TypeError``, a value out of
    :func:`retry_problem`'s bounds a ``ValueError``."""
    if not isinstance(max_retries, int) or isinstance(max_retries, bool):
        return f"max_retries must be an int, not {type(max_retries).__name__}"
    for option, value in (("backoff_base", backoff_base), ("backoff_max", backoff_max)):
        if not isinstance(value, int | float) or isinstance(value, bool):
            return f"{option} must be seconds (a float), not {type(value).__name__}"
    return None


def retry_problem(max_retries: object, backoff_base: object, backoff_max: object) -> str | None:
    """What the design's ``Retry`` would refuse of these settings (a count that is not a whole
    number from 0 to :data:`MAX_RETRIES`, a backoff that is not a finite number of seconds from
    0 to :data:`MAX_BACKOFF_S`, a base above the ceiling), naming the option; or None."""
    wrong_type = retry_type_problem(max_retries, backoff_base, backoff_max)
    if wrong_type is not None:
        return wrong_type
    assert isinstance(max_retries, int)
    if not 0 <= max_retries <= MAX_RETRIES:
        shown = max_retries if abs(max_retries) < 10**12 else "a larger number"
        return (
            f"max_retries must be from 0 to {MAX_RETRIES} (MAX_RETRIES), not {shown}: each "
            "retry is another request and another wait, so an outage would hold the request "
            "instead of failing it"
        )
    for option, value in (("backoff_base", backoff_base), ("backoff_max", backoff_max)):
        if not isinstance(value, int | float) or isinstance(value, bool):
            return f"{option} must be seconds (a float), not {type(value).__name__}"
        if not (math.isfinite(value) and 0 <= value <= MAX_BACKOFF_S):
            why = (
                ": a longer wait between retries holds the request through an outage instead "
                "of failing it"
                if value > MAX_BACKOFF_S
                else ""
            )
            return (
                f"{option} must be from 0 to {MAX_BACKOFF_S:g} seconds (MAX_BACKOFF_S), not "
                f"{value!r}{why}"
            )
    assert isinstance(backoff_base, int | float) and isinstance(backoff_max, int | float)
    if backoff_base > backoff_max:
        return f"backoff_base ({backoff_base!r}) must not exceed backoff_max ({backoff_max!r})"
    return None
