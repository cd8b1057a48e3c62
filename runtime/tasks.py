"""Stopping a helper task without losing a cancellation meant for its owner.

A run waiting for its workflow keeps a task that answers confirmations; a provider serving a
toolset keeps one that renews its lease. When the owner is done it cancels the helper and waits
for it to end, which raises ``CancelledError``. Swallowing that error whole would also swallow
a cancellation of the owner arriving at the same moment (``asyncio.timeout`` around a run, a
task group shutting down): the owner would go on as if nobody had asked it to stop.
"""

from __future__ import annotations

import asyncio

__all__ = ["stop_task"]


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
