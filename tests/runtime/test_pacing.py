"""Long synchronous work cut into slices: every turn it gives the loop lets other tasks run,
timers that fell due during the slice and the tasks they wake included."""

from __future__ import annotations

import asyncio
import time

import pytest

from agentgen.runtime.pacing import Pacer


async def test_timers_due_during_a_slice_run_before_the_next_slice() -> None:
    loop = asyncio.get_running_loop()
    pacer = Pacer(slice=0.0)
    fired: list[str] = []
    loop.call_later(0, fired.append, "timer")  # due at once, as if it fell due in the slice
    loop.call_soon(fired.append, "ready")
    await pacer.pause()
    assert fired == ["ready", "timer"]
    assert pacer.yields == 1


async def test_a_task_a_timer_wakes_during_a_slice_runs_before_the_next_slice() -> None:
    woken: list[str] = []

    async def sleeper() -> None:
        await asyncio.sleep(0.0001)
        woken.append("sleeper")

    task = asyncio.create_task(sleeper())
    await asyncio.sleep(0)  # the sleeper starts and waits for its timer
    pacer = Pacer(slice=0.001)
    time.sleep(0.005)  # a slice of synchronous work, during which the timer falls due
    await pacer.pause()
    assert woken == ["sleeper"]
    await task


async def test_no_turn_is_given_within_a_slice() -> None:
    loop = asyncio.get_running_loop()
    pacer = Pacer(slice=60.0)
    fired: list[str] = []
    loop.call_soon(fired.append, "ready")
    await pacer.pause()
    assert fired == [] and pacer.yields == 0


async def test_a_paused_task_can_be_cancelled() -> None:
    pacer = Pacer(slice=0.0)
    task = asyncio.create_task(pacer.pause())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.001)  # the cancelled turn's timer does nothing when it comes
