"""`run_interruptible`: a call that never started is never waited for; one that started is
interrupted and waited for, and given up on after its grace period without hanging."""

from __future__ import annotations

import threading

import anyio
import pytest

from raf.stores._interruptible import run_interruptible

pytestmark = pytest.mark.anyio


async def test_a_call_cancelled_before_it_starts_never_runs_and_is_not_waited_for() -> None:
    ran: list[str] = []
    interrupts: list[None] = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        await run_interruptible(lambda: ran.append("call"), lambda: interrupts.append(None))
    assert scope.cancelled_caught
    assert ran == []
    assert interrupts == []


async def test_a_call_queued_behind_busy_threads_is_skipped_when_cancelled() -> None:
    # Every worker thread of the default limiter is taken, so the call waits for one: a
    # cancellation then must come back at once, and the call must never run afterwards.
    limiter = anyio.to_thread.current_default_thread_limiter()
    release = threading.Event()
    ran: list[str] = []
    async with anyio.create_task_group() as group:
        for _ in range(int(limiter.total_tokens)):
            group.start_soon(anyio.to_thread.run_sync, release.wait)
        while limiter.borrowed_tokens < limiter.total_tokens:
            await anyio.lowlevel.checkpoint()
        with anyio.move_on_after(0.05) as scope:
            await run_interruptible(lambda: ran.append("call"), release.set)
        assert scope.cancelled_caught
        release.set()
    assert ran == []


async def test_a_call_that_outlives_its_grace_is_abandoned_then_cleaned_up_by_its_thread() -> None:
    finish = threading.Event()
    cleaned = threading.Event()
    abandoned: list[str] = []
    with anyio.move_on_after(0.05) as scope:
        await run_interruptible(
            lambda: finish.wait(60),
            lambda: None,  # an interrupt that does not stop the call
            abandon=lambda: abandoned.append("abandoned"),
            orphaned=cleaned.set,
            grace=0.1,
        )
    assert scope.cancelled_caught
    assert abandoned == ["abandoned"]
    assert not cleaned.is_set()  # the call still runs: its thread cleans up when it ends
    finish.set()
    await anyio.to_thread.run_sync(cleaned.wait, 10)
    assert cleaned.is_set()


async def test_a_call_that_stops_within_its_grace_is_not_abandoned() -> None:
    stop = threading.Event()
    abandoned: list[str] = []
    with anyio.move_on_after(0.05) as scope:
        await run_interruptible(
            lambda: stop.wait(60),
            stop.set,
            abandon=lambda: abandoned.append("abandoned"),
            orphaned=lambda: abandoned.append("orphaned"),
        )
    assert scope.cancelled_caught
    assert abandoned == []
