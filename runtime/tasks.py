"""Stopping a helper task without losing a cancellation meant for its owner, and bounding
awaited work by a deadline that cannot be talked out of.

A run waiting for its workflow keeps a task that answers confirmations; a provider serving a
toolset keeps one that renews its lease. When the owner is done it cancels the helper and waits
for it to end, which raises ``CancelledError``. Swallowing that error whole would also swallow
a cancellation of the owner arriving at the same moment (``asyncio.timeout`` around a run, a
task group shutting down): the owner would go on as if nobody had asked it to stop.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable
from typing import TypeVar

__all__ = [
    "MIN_TIMEOUT_S",
    "DeadlinePassed",
    "is_number",
    "is_seconds",
    "stop_task",
    "within_deadline",
]

T = TypeVar("T")

#: The shortest timeout a policy takes, one millisecond: Temporal's workflow timers round to
#: whole milliseconds and the registry counts them whole; a shorter one acts as zero. The
#: DSL's durations have the same floor (``agentgen.dsl.durations.MIN_DURATION_S``).
MIN_TIMEOUT_S = 0.001


def is_number(value: object) -> bool:
    """Whether ``value`` is of a number's type (an int or a float, not a bool): one that is not
    :func:`is_seconds` is a wrong value (``ValueError``), anything else a wrong type."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_seconds(value: object) -> bool:
    """Whether ``value`` can be a deadline: a positive, finite number of seconds (NaN compares
    false with everything; a bool is not a number here)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < math.inf


class DeadlinePassed(Exception):
    """The work :func:`within_deadline` waited for outlived its deadline. It was cancelled; if
    it then raised an error of its own (a client reporting "request aborted"), that error is
    the ``__cause__``; if it swallowed the cancellation and answered anyway, ``late`` holds
    that answer (a model's late response was billed all the same)."""

    late: object = None


async def within_deadline(seconds: float, work: Awaitable[T]) -> T:
    """``work``'s result, or :class:`DeadlinePassed` once ``seconds`` have passed.

    ``asyncio.timeout`` alone reports a deadline only when the work lets its cancellation
    through. Work that turns it into an error of its own, or swallows it and answers late
    anyway, would hide that the limit fired; here the deadline decides. A ``TimeoutError``
    the work raises before the deadline is its own and is raised as it is.
    """
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            result = await work
    except Exception as exc:
        if deadline.expired():
            raise DeadlinePassed(f"still running after {seconds:g} s") from (
                None if isinstance(exc, TimeoutError) else exc
            )
        raise
    if deadline.expired():  # the cancellation was swallowed, and the work answered late
        passed = DeadlinePassed(f"answered after its {seconds:g} s")
        passed.late = result
        raise passed
    return result


async def stop_task(task: asyncio.Task[object]) -> None:
    """Cancel ``task`` and wait until it has ended. Its own cancellation is absorbed, and so is
    one of the caller that had already been delivered (the caller is cleaning up after it); a
    cancellation of the caller arriving while it waits is raised, as is any other error of
    ``task``."""
    current = asyncio.current_task()
    requested = current.cancelling() if current is not None else 0
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        if current is not None and current.cancelling() > requested:
            raise
