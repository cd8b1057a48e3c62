"""Long synchronous work, cut into slices that give the event loop back.

Building a planning catalog of thousands of new registry tools takes about a second of CPU.
Run in one piece it would stall every other task of the process (other runs, result streams,
health checks) for that long; a :class:`Pacer` is consulted between units of work and yields to
the loop whenever the current slice has lasted long enough. Staying on the loop (rather than in
a worker thread) keeps the work ordered and free of locks; with the GIL, a thread would not run
it any sooner.
"""

from __future__ import annotations

import asyncio
import time

__all__ = ["DEFAULT_SLICE", "Pacer"]

#: How long one slice may run before the loop gets a turn (seconds).
DEFAULT_SLICE = 0.005


class Pacer:
    """Call :meth:`pause` between units of work; it yields once a slice is used up."""

    __slots__ = ("_since", "slice", "yields")

    def __init__(self, slice: float = DEFAULT_SLICE) -> None:
        self.slice = slice
        self._since = time.perf_counter()
        #: How many times the loop was given a turn.
        self.yields = 0

    async def pause(self) -> None:
        now = time.perf_counter()
        if now - self._since >= self.slice:
            await _turn()
            self.yields += 1
            self._since = time.perf_counter()


async def _turn() -> None:
    """Give the loop a turn behind everything that became ready or due during the slice.

    ``asyncio.sleep(0)`` would resume this coroutine ahead of timers that fell due meanwhile
    (and of the tasks those timers wake): they would wait for another whole slice. Resuming
    from a timer due at once queues it behind them instead.
    """
    loop = asyncio.get_running_loop()
    resumed = loop.create_future()
    handle = loop.call_later(0, _resume, resumed)
    try:
        await resumed
    finally:
        handle.cancel()


def _resume(resumed: asyncio.Future[None]) -> None:
    if not resumed.done():  # cancelled meanwhile
        resumed.set_result(None)
