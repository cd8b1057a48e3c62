"""Checks of what an HTTP registry client is built with, made when it is built.

An option the registry's API cannot carry used to be taken, and then fail at the first request
that carried it: a bearer token with a line break in it (a token read from a file) failed every
request inside httpx with an error quoting the header, secret and all; a long-poll wait over
the API's bound failed only after a call was admitted (and had run), reading as an unknown
outcome. These checks refuse such options in the constructor instead, naming the option and
what it may be, never a token's value.
"""

from __future__ import annotations

from agentgen.runtime.registry import api

__all__ = ["bearer_token_problem", "checked_wait_ms"]


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
    and the bounds."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= api.MAX_WAIT_MS:
        return value
    raise ValueError(
        f"{owner}: {option}={value!r} is out of bounds: a whole number of milliseconds from 0 "
        f"to {api.MAX_WAIT_MS:,} (the longest wait the registry's API carries)"
    )
