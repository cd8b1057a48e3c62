"""Stopping a helper task: its cancellation is absorbed, its owner's is not."""

from __future__ import annotations

import asyncio

import pytest

from agentgen.runtime.tasks import stop_task


async def test_the_helpers_own_cancellation_is_absorbed() -> None:
    helper = asyncio.create_task(asyncio.Event().wait())
    await asyncio.sleep(0)
    await stop_task(helper)
    assert helper.cancelled()


async def test_an_owner_cancelled_while_its_helper_cleans_up_stays_cancelled() -> None:
    # The owner (a run waiting for its workflow, a provider serving) stops its helper; a
    # cancellation of the owner that arrives meanwhile (asyncio.timeout around the run) must
    # reach it, not be taken for the helper's own.
    cleaning, release = asyncio.Event(), asyncio.Event()
    went_on = False

    async def helper() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cleaning.set()
            await release.wait()

    async def owner() -> None:
        nonlocal went_on
        task = asyncio.create_task(helper())
        await asyncio.sleep(0)
        await stop_task(task)
        went_on = True

    running = asyncio.create_task(owner())
    await cleaning.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert not went_on
    release.set()
    await asyncio.sleep(0)


async def test_an_owner_cleaning_up_after_its_own_cancellation_finishes_its_cleanup() -> None:
    # A provider cancelled while serving stops its renewer in a finally block, then gives back
    # the calls in hand: stopping the renewer must not cut that cleanup short.
    cleaned_up = False

    async def owner() -> None:
        nonlocal cleaned_up
        helper = asyncio.create_task(asyncio.Event().wait())
        try:
            await asyncio.Event().wait()
        finally:
            await stop_task(helper)
            cleaned_up = True

    running = asyncio.create_task(owner())
    await asyncio.sleep(0)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert cleaned_up


async def test_another_error_of_the_helper_is_raised() -> None:
    async def helper() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("renewal failed while stopping") from None

    task = asyncio.create_task(helper())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="renewal failed while stopping"):
        await stop_task(task)
