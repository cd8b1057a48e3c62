"""What agentgen's telemetry says about an exception: how it is classified, and which of its
words leave the process.

An exception's message is text someone else wrote: a tool's own failure can quote the
argument it choked on (a token, a customer's address), a registry's validation error the
value it refused, a provider's error the request back. Spans, metrics and logs are often read
by more people than the application's own storage, so without ``capture_payloads`` telemetry
carries what identifies a failure and nothing that may hold a value: the exception's type,
agentgen's own error kind or a registry's code (``error.type``), the names the span already
carries (agent, tool, toolset, run ID), and a stacktrace whose frames are kept but whose
message lines are not (nor the notes added to it). With ``capture_payloads`` the message is
recorded as the OpenTelemetry SDK records it.

agentgen's own errors are treated the same: their messages name things, and some of those
names come from a model (a tool ID it made up) or a registry (what it answered), so no class
is trusted to be value-free.

A cancellation is not a failure: the caller withdrew the operation (a cancelled task, a
durable run cancelled by its client). OpenTelemetry leaves a span's status unset unless its
operation failed, so a cancelled operation is reported by ``agentgen.outcome=cancelled``, with
no ``error.type``; an operation that failed for its own reason while being cancelled raises
that failure, and reports it.

A ``CancelledError`` does not say who cancelled the task, though: Temporal ends an activity
that timed out, missed its heartbeats or lost its worker by cancelling its task too, and that
is the activity failing. The code that knows why a task is cancelled says so for the code it
runs (:func:`explaining_cancellations`); telemetry cannot ask the engine itself, which is
layered above it.
"""

from __future__ import annotations

import asyncio
import linecache
import re
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import TracebackType

from opentelemetry.util.types import AttributeValue

from agentgen.runtime.failures import Cancellation, CodedError, message_of

__all__ = [
    "CANCELLED",
    "CancelCause",
    "cancelled",
    "described",
    "error_type",
    "exception_event",
    "explaining_cancellations",
    "qualified_name",
    "stacktrace_without_messages",
    "summary",
]


#: The ``agentgen.outcome`` of a cancelled operation.
CANCELLED = "cancelled"


#: Says why the current task is being cancelled: ``None`` when its caller withdrew it, else
#: the failure's low-cardinality kind (its ``error.type``).
CancelCause = Callable[[], str | None]

_CANCEL_CAUSE: ContextVar[CancelCause | None] = ContextVar("agentgen_cancel_cause", default=None)


@contextmanager
def explaining_cancellations(cause: CancelCause) -> Iterator[None]:
    """Within the block (and the tasks it starts), a ``CancelledError`` is what ``cause``
    says when it ends an operation: a withdrawal, or a failure of the kind it names. Set by
    the code that runs the operations and knows who cancels them (a Temporal activity)."""
    token = _CANCEL_CAUSE.set(cause)
    try:
        yield
    finally:
        _CANCEL_CAUSE.reset(token)


def _failed_cancellation(exc: BaseException) -> str | None:
    """The kind of failure ``exc`` reports when it is a ``CancelledError`` that is not a
    withdrawal."""
    if not isinstance(exc, asyncio.CancelledError):
        return None
    cause = _CANCEL_CAUSE.get()
    return None if cause is None else cause()


def cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` reports a cancellation its caller asked for rather than a failure."""
    if isinstance(exc, Cancellation):
        return True
    return isinstance(exc, asyncio.CancelledError) and _failed_cancellation(exc) is None


#: The shape of a code telemetry reports: a short identifier, which no message is.
_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def error_type(exc: BaseException) -> str:
    """A low-cardinality name for a failure: why a cancellation was one, an agentgen error's
    code (a registry's), else the type name. A registry's code comes from its answer, so it is
    taken only when it has the shape of one."""
    failed = _failed_cancellation(exc)
    if failed is not None:
        return failed
    if isinstance(exc, CodedError):
        code = exc.code
        if isinstance(code, str) and _CODE.fullmatch(code):
            return code
    return type(exc).__name__


def qualified_name(kind: type[BaseException]) -> str:
    """The exception type as OpenTelemetry's ``exception.type`` spells it (builtins bare)."""
    module = kind.__module__
    return f"{module}.{kind.__qualname__}" if module and module != "builtins" else kind.__qualname__


def summary(exc: BaseException) -> str:
    """The words that identify a failure and hold no value: its type, and its code when it
    has one (``RegistryError (invalid_payload)``)."""
    kind = error_type(exc)
    name = type(exc).__name__
    return name if kind == name else f"{name} ({kind})"


def described(exc: BaseException, capture: bool) -> str:
    """A failure in a span's status or a log line: ``Type: message`` with ``capture``,
    :func:`summary` without."""
    if capture:
        return f"{type(exc).__name__}: {message_of(exc)}"
    return summary(exc)


def exception_event(exc: BaseException, capture: bool) -> dict[str, AttributeValue]:
    """The attributes of a span's ``exception`` event. With ``capture``, what the SDK's
    ``record_exception`` records (an exception whose ``__str__`` raises is recorded as
    unprintable rather than replacing the operation's own exception with the formatting's);
    without, the type and a stacktrace without messages."""
    if not capture:
        return {
            "exception.type": qualified_name(type(exc)),
            "exception.stacktrace": stacktrace_without_messages(exc),
        }
    return {
        "exception.type": qualified_name(type(exc)),
        "exception.message": message_of(exc),
        # traceback formats an exception whose __str__ raises as unprintable, itself.
        "exception.stacktrace": "".join(traceback.format_exception(exc)),
    }


_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def stacktrace_without_messages(exc: BaseException) -> str:
    """The traceback Python prints for ``exc`` (its causes and contexts first, an exception
    group's members after it), each exception's line reduced to its type: the frames say
    where, and the source lines they quote are the program's, not its data."""
    parts: list[str] = []
    _chain(exc, parts, set(), "")
    return "".join(parts)


def _chain(exc: BaseException, parts: list[str], seen: set[int], indent: str) -> None:
    seen.add(id(exc))
    cause, context = exc.__cause__, exc.__context__
    if cause is not None and id(cause) not in seen:
        _chain(cause, parts, seen, indent)
        parts.append(_indented(_CAUSE, indent))
    elif context is not None and not exc.__suppress_context__ and id(context) not in seen:
        _chain(context, parts, seen, indent)
        parts.append(_indented(_CONTEXT, indent))
    if exc.__traceback__ is not None:
        frames = _frames(exc.__traceback__)
        parts.append(_indented("Traceback (most recent call last):\n" + frames, indent))
    parts.append(f"{indent}{qualified_name(type(exc))}\n")
    if isinstance(exc, BaseExceptionGroup):
        for number, member in enumerate(exc.exceptions, 1):
            parts.append(f"{indent}+---- {number} ----\n")
            _chain(member, parts, seen, indent + "| ")


def _frames(tb: TracebackType) -> str:
    """Python's lines for each frame, without the carets under the failing expression:
    placing them parses each frame's source line (``traceback.format_tb``: about 20 µs a
    frame), which would make a failure's report cost more than its span."""
    lines: list[str] = []
    last: tuple[object, int] | None = None
    repeated = 0
    for frame, number in traceback.walk_tb(tb):
        code = frame.f_code
        if (code, number) == last:
            repeated += 1
            if repeated >= _REPEATS:  # a deep recursion: counted, as Python does
                continue
        else:
            lines.extend(_repeats(repeated))
            last, repeated = (code, number), 0
        lines.append(f'  File "{code.co_filename}", line {number}, in {code.co_name}\n')
        source = linecache.getline(code.co_filename, number, frame.f_globals).strip()
        if source:
            lines.append(f"    {source}\n")
    lines.extend(_repeats(repeated))
    return "".join(lines)


#: Python prints a frame repeated this many times, then counts the rest.
_REPEATS = 3


def _repeats(repeated: int) -> list[str]:
    more = repeated - _REPEATS + 1
    if more <= 0:
        return []
    return [f"  [Previous line repeated {more} more time{'s' if more > 1 else ''}]\n"]


def _indented(text: str, indent: str) -> str:
    if not indent:
        return text
    return "".join(f"{indent}{line}" for line in text.splitlines(keepends=True))
