"""The words of an exception raised by someone else's code, whatever that exception is.

Executors, confirmers, planners, model and registry clients are the application's code, and the
runtime turns what they raise into text: a tool error the model reads, a span's status, an
activity's failure. An exception whose ``__str__`` itself raises (or returns something that is
not text) must not take that report down with it: the failure would then be the formatting's,
raised from inside the handler, and the tool's own error would be lost (or the sibling calls of
its round with it).
"""

from __future__ import annotations

__all__ = ["UNPRINTABLE", "Cancellation", "CodedError", "message_of"]

#: What stands for the message of an exception whose ``__str__`` failed (``traceback``'s words).
UNPRINTABLE = "<exception str() failed>"


class Cancellation(Exception):
    """Base of the errors that report a cancellation the caller asked for (a durable run
    cancelled by its client), not a failure: telemetry reports them as cancelled, like
    ``asyncio.CancelledError``. Here, below every layer, so that telemetry can tell them
    without importing the engine that raises them."""


class CodedError(Exception):
    """Base of agentgen's errors whose ``code`` names the failure from a vocabulary of
    machine-readable codes (a registry's error codes): telemetry reports that code as the
    failure's kind (``error.type``). Other exceptions may have a ``code`` too, and it can be
    anything (``SystemExit``'s is its argument, which may be a message quoting a value), so
    telemetry takes a code only from these. Here, below every layer, so that telemetry can
    tell them without importing the registry."""

    code: str


def message_of(exc: BaseException) -> str:
    """``str(exc)``, or :data:`UNPRINTABLE` when that raises."""
    try:
        text = str(exc)
    except Exception:
        return UNPRINTABLE
    return text
