"""Cancelled at any point around any store operation, a store comes back promptly and works.

Each example starts a few operations at once in one task group and cancels them: before they
start, from a sibling task after `k` checkpoints, or by a sibling that fails after `k`
checkpoints (so the task group cancels the rest), optionally while every worker thread is taken
(the operations then wait for one). Whatever was cut off, the trial ends within its deadline,
what completed answered correctly, what was cut off happened whole or not at all, the store
still saves and loads, and no session lock is left held.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import anyio
import anyio.lowlevel
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from raf.stores import Checkpoint, StoredEvent, new_id
from tests.stores.conftest import Backing, Store

_DEADLINE_SECONDS = 20.0
"""A trial never takes this long unless a cancelled call is waited for without end."""
_PROMPT_SECONDS = 5.0
"""Cancelled while every worker thread is busy, the operations are back well within this."""

_SESSION = "cancelled"
_LOCKED = "cancelled-lock"

Operation = Literal["save", "load", "list", "latest", "append", "events", "put", "get", "lock"]
How = Literal["before", "sibling", "failure"]


@dataclass(frozen=True)
class Trial:
    """One example: what runs at once, and how and when it is cancelled."""

    operations: tuple[Operation, ...]
    how: How
    checkpoints: int
    """How many checkpoints the sibling passes before it cancels (or fails)."""
    threads_taken: bool
    """Every worker thread is busy until the operations were cancelled."""


class _Failure(Exception):
    """The sibling's failure, which makes the task group cancel the operations."""


@dataclass
class _Record:
    """What the store held before the trial, and what the trial's operations wrote."""

    checkpoint: Checkpoint
    digest: str
    content: bytes
    event: StoredEvent
    saved: list[Checkpoint] = field(default_factory=lambda: list[Checkpoint]())
    appended: list[StoredEvent] = field(default_factory=lambda: list[StoredEvent]())


def _checkpoint(step: int = 0) -> Checkpoint:
    return Checkpoint(
        id=new_id(),
        session_id=_SESSION,
        workflow_id="w",
        superstep=step,
        created_at=datetime.now(UTC),
        data={"step": step},
    )


def _event() -> StoredEvent:
    return StoredEvent(id=new_id(), occurred_at=datetime.now(UTC), kind="k", key=_SESSION)


async def _seed(store: Store) -> _Record:
    checkpoint, event, content = _checkpoint(), _event(), new_id().encode()
    await store.save(checkpoint)
    await store.append(event)
    return _Record(checkpoint, await store.put(content), content, event)


async def _save(store: Store, record: _Record) -> None:
    checkpoint = _checkpoint(1)
    record.saved.append(checkpoint)
    await store.save(checkpoint)


async def _load(store: Store, record: _Record) -> None:
    assert await store.load(record.checkpoint.id) == record.checkpoint


async def _list(store: Store, record: _Record) -> None:
    assert record.checkpoint.id in await store.list(_SESSION)


async def _latest(store: Store, record: _Record) -> None:
    assert await store.latest(_SESSION) is not None


async def _append(store: Store, record: _Record) -> None:
    event = _event()
    record.appended.append(event)
    await store.append(event, None)


async def _events(store: Store, record: _Record) -> None:
    assert record.event in await store.events(_SESSION)


async def _put(store: Store, record: _Record) -> None:
    assert await store.put(record.content) == record.digest


async def _get(store: Store, record: _Record) -> None:
    assert await store.get(record.digest) == record.content


async def _lock(store: Store, record: _Record) -> None:
    lock = await store.lock_session(_LOCKED, wait=True)
    assert lock is not None
    try:
        await anyio.lowlevel.checkpoint()
    finally:
        with anyio.CancelScope(shield=True):
            await lock.release()


_OPERATIONS: dict[Operation, Callable[[Store, _Record], Awaitable[None]]] = {
    "save": _save,
    "load": _load,
    "list": _list,
    "latest": _latest,
    "append": _append,
    "events": _events,
    "put": _put,
    "get": _get,
    "lock": _lock,
}

trials = st.builds(
    Trial,
    operations=st.lists(st.sampled_from(list(_OPERATIONS)), min_size=1, max_size=4).map(tuple),
    how=st.sampled_from(["before", "sibling", "failure"]),
    checkpoints=st.integers(0, 30),
    threads_taken=st.booleans(),
)


async def _checkpoints(count: int) -> None:
    for _ in range(count):
        await anyio.lowlevel.checkpoint()


async def _cancelled(store: Store, record: _Record, trial: Trial) -> None:
    """Run the trial's operations at once and cancel them as it says."""
    with anyio.CancelScope() as scope:
        if trial.how == "before":
            scope.cancel()
        try:
            async with anyio.create_task_group() as group:
                for operation in trial.operations:
                    group.start_soon(_OPERATIONS[operation], store, record)
                if trial.how != "before":
                    await _checkpoints(trial.checkpoints)
                if trial.how == "sibling":
                    scope.cancel()
                elif trial.how == "failure":
                    raise _Failure
        except* _Failure:
            pass


async def _with_threads_taken(run: Callable[[], Awaitable[None]]) -> None:
    """Run `run()` while both (of two) default worker threads block, then free them.

    The operations cannot finish before they are cancelled, and once cancelled must not wait
    for a thread: the threads are held until `run()` returns, or for `_PROMPT_SECONDS` at
    most, so that a store that does wait fails here instead of hanging the test.
    """
    limiter = anyio.to_thread.current_default_thread_limiter()
    limiter.total_tokens = 2  # this event loop's own limiter: gone with the loop
    free = threading.Event()
    async with anyio.create_task_group() as holders:
        for _ in range(2):
            holders.start_soon(anyio.to_thread.run_sync, free.wait, _PROMPT_SECONDS)
        while limiter.borrowed_tokens < limiter.total_tokens:
            await anyio.lowlevel.checkpoint()
        started = anyio.current_time()
        try:
            await run()
        finally:
            free.set()
    elapsed = anyio.current_time() - started
    assert elapsed < _PROMPT_SECONDS, f"cancelled, it waited {elapsed:.1f} s for a busy thread"


async def _check_whole_or_absent(store: Store, record: _Record) -> None:
    """A cut-off save or append happened entirely or not at all."""
    for checkpoint in record.saved:
        try:
            assert await store.load(checkpoint.id) == checkpoint
        except KeyError:
            assert checkpoint.id not in await store.list(_SESSION)
    logged = {event.id: event for event in await store.events(_SESSION)}
    for event in record.appended:
        assert logged.get(event.id, event) == event


async def _check_usable(store: Store, other: Store) -> None:
    """The store saves and loads, and neither store object finds a session lock held."""
    checkpoint = _checkpoint(2)
    await store.save(checkpoint)
    assert await store.load(checkpoint.id) == checkpoint
    assert await other.latest(_SESSION) == checkpoint.id
    for holder in (store, other):
        for session_id in (_SESSION, _LOCKED):
            lock = await holder.lock_session(session_id, wait=False)
            assert lock is not None, f"{session_id!r} is still locked"
            await lock.release()


async def _example(backing: Backing, trial: Trial) -> None:
    with anyio.fail_after(_DEADLINE_SECONDS):
        async with backing.open() as store, backing.open() as other:
            record = await _seed(store)

            async def run() -> None:
                await _cancelled(store, record, trial)

            if trial.threads_taken:
                await _with_threads_taken(run)
            else:
                await run()
            await _check_whole_or_absent(store, record)
            await _check_usable(store, other)


# No shrinking: a failing trial waits out its bounds (seconds each), and examples are small.
@settings(
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(trial=trials)
def test_a_store_cancelled_anywhere_comes_back_and_works(
    backing: Backing, anyio_backend: str, trial: Trial
) -> None:
    anyio.run(_example, backing, trial, backend=anyio_backend)
