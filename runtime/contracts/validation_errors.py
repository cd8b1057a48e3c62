"""Pydantic validation errors as one line of text, for the errors agentgen raises.

Declarations, registry answers and requests are all read by pydantic models; when one is
refused, the message names where in the value the problem is (``tools.0.name``) and what it
is, and a few problems at most, so that a message built from a hostile value stays short.
"""

from __future__ import annotations

from pydantic import ValidationError
from pydantic_core import ErrorDetails

__all__ = ["error_line", "error_summary", "first_error"]


def error_line(error: ErrorDetails, skip: int = 0) -> str:
    """``where: what`` for one error (``what`` alone at the value itself); ``skip`` leaves out
    the first parts of its location, which the caller names otherwise."""
    where = ".".join(str(part) for part in error["loc"][skip:])
    return f"{where}: {error['msg']}" if where else error["msg"]


def first_error(exc: ValidationError) -> str:
    """The first of an exception's errors, as :func:`error_line`."""
    return error_line(exc.errors()[0])


def error_summary(exc: ValidationError, most: int = 5) -> str:
    """Up to ``most`` of an exception's errors, ``; ``-separated, and how many more there were;
    an error at the value itself reads ``(value): what``."""
    found = exc.errors()
    parts = [error_line(error) if error["loc"] else f"(value): {error['msg']}" for error in
             found[:most]]  # fmt: skip
    more = len(found) - most
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
