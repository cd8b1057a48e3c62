"""Helper tasks and deadlines: a helper's cancellation is absorbed, its owner's is not; a deadline
is reported however the work it bounds reacts to being cancelled."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from agentgen.runtime.tasks import DeadlinePassed, stop_task, within_deadline


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


async def test_within_deadline_passes_results_and_the_works_own_errors_through() -> None:
    async def quick() -> str:
        return "done"

    async def own_timeout() -> str:
        raise TimeoutError("the SDK's read timeout")

    assert await within_deadline(5, quick()) == "done"
    with pytest.raises(TimeoutError, match="the SDK's read timeout"):
        await within_deadline(5, own_timeout())


async def test_within_deadline_reports_the_deadline_however_the_work_reacts() -> None:
    async def hangs() -> str:
        await asyncio.Event().wait()
        raise AssertionError("never set")

    async def aborts() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise ConnectionError("request aborted") from None
        raise AssertionError("never set")

    async def late() -> str:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()
        return "late"

    with pytest.raises(DeadlinePassed) as plain:
        await within_deadline(0.01, hangs())
    assert plain.value.__cause__ is None
    with pytest.raises(DeadlinePassed) as aborted:
        await within_deadline(0.01, aborts())
    assert isinstance(aborted.value.__cause__, ConnectionError)
    with pytest.raises(DeadlinePassed, match="answered after"):
        await within_deadline(0.01, late())
    # The caller's own cancellation count is back where it was: it is not left cancelled.
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0
