"""A session lock is a fence, not a hint: a lost hold says so (`check`, `wait_lost`), and a
fenced save (`save_following`) never lands over a newer one."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import anyio
import pytest

from raf import SessionConflict, SessionLockLost
from raf.stores import FencedSaves, PostgresCheckpointStore, SqliteCheckpointStore, new_id
from raf.stores.base import Checkpoint, SessionLock
from tests.stores.conftest import Backing, Store

pytestmark = pytest.mark.anyio


def checkpoint(session_id: str, *, after: str | None = None, note: str = "") -> Checkpoint:
    return Checkpoint(
        id=new_id(after=after),
        session_id=session_id,
        workflow_id="wf",
        superstep=0,
        created_at=datetime.now(UTC),
        data={"note": note},
    )


async def take(store: Store, session_id: str) -> SessionLock:
    hold = await store.lock_session(session_id, wait=False)
    assert hold is not None, f"{store!r} cannot take {session_id!r}"
    return hold


def lose_locks(store: Store, dsn: str | None) -> None:
    """Take away what `store`'s session locks stand on, as a failover or an operator would."""
    if isinstance(store, PostgresCheckpointStore):
        import psycopg

        connection = store._advisory._connection  # pyright: ignore[reportPrivateUsage]
        assert connection is not None and dsn is not None
        with psycopg.connect(dsn, autocommit=True) as admin:
            # Waits (up to 5 s) until the backend is gone, its locks with it.
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (connection.info.backend_pid,))
    else:
        assert isinstance(store, SqliteCheckpointStore)
        lock_file = store.path + "-sessions"
        with open(lock_file + ".new", "wb"):
            pass
        os.replace(lock_file + ".new", lock_file)  # another process would lock this new file


def dsn_of(backing: Backing, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("postgres_dsn") if backing.kind == "postgres" else None


async def test_a_lost_lock_stops_its_holder_and_its_stale_save_is_refused(
    durable_backing: Backing, request: pytest.FixtureRequest
) -> None:
    dsn = dsn_of(durable_backing, request)
    async with durable_backing.open() as first, durable_backing.open() as second:
        assert isinstance(first, FencedSaves)
        await first.save(checkpoint("s-1", note="turn 1"))
        hold = await take(first, "s-1")
        also = await take(first, "s-2")
        await hold.check()  # held: no error
        read = await first.latest("s-1")  # the turn the holder goes on from
        lost_after: list[float] = []
        dropped = 0.0

        async def watch() -> None:
            await hold.wait_lost()
            lost_after.append(anyio.current_time() - dropped)

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            await anyio.wait_all_tasks_blocked()
            assert lost_after == []  # a held lock is not reported lost
            lose_locks(first, dsn)
            dropped = anyio.current_time()
            with anyio.fail_after(2):
                await also.wait_lost()  # every hold on it is lost, however many
        assert lost_after[0] < 2, f"wait_lost returned {lost_after[0]:.2f} s after the drop"
        for lost, session_id in ((hold, "s-1"), (also, "s-2")):
            with pytest.raises(SessionLockLost) as error:
                await lost.check()
            assert error.value.session_id == session_id
            assert "run the turn again" in str(error.value)

        # Another worker takes the session, and saves its turn.
        taker = await take(second, "s-1")
        newer = checkpoint("s-1", after=read, note="turn 2 by the new holder")
        await second.save_following(newer, read)
        # The old holder's save, from what it read before it lost the lock, is refused.
        stale = checkpoint("s-1", after=newer.id, note="turn 2 by the stale holder")
        with pytest.raises(SessionConflict) as conflict:
            await first.save_following(stale, read)
        assert (conflict.value.key, conflict.value.expected) == ("s-1", read)
        assert conflict.value.found == newer.id
        assert await second.latest("s-1") == newer.id
        assert (await second.load(newer.id)).data == {"note": "turn 2 by the new holder"}
        with pytest.raises(KeyError):
            await second.load(stale.id)

        # The lost holds let go of nothing the new holder has; the old store locks anew.
        await hold.release()
        await also.release()
        assert await second.lock_session("s-1", wait=False) is None
        assert await first.lock_session("s-1", wait=False) is None
        again = await take(first, "s-3")
        await again.check()
        await taker.check()
        for held in (again, taker):
            await held.release()


async def test_a_removed_lock_file_loses_the_sqlite_locks(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "runs.db")
    async with SqliteCheckpointStore(path) as first, SqliteCheckpointStore(path) as second:
        hold = await take(first, "s-1")
        os.remove(path + "-sessions")
        with pytest.raises(SessionLockLost, match="removed or replaced"):
            await hold.check()
        taker = await take(second, "s-1")  # on the new file, which nobody else has locked
        await hold.release()
        assert await second.lock_session("s-1", wait=False) is None
        await taker.release()


async def test_a_held_lock_is_not_lost_and_a_released_one_is_gone(backing: Backing) -> None:
    async with backing.open() as store:
        hold = await take(store, "s-1")
        with anyio.move_on_after(1.2) as waited:  # past a probe on every store
            await hold.wait_lost()
        assert waited.cancelled_caught, "wait_lost returned for a hold that is held"
        await hold.check()
        async with anyio.create_task_group() as group:
            group.start_soon(hold.wait_lost)
            await anyio.wait_all_tasks_blocked()
            with anyio.fail_after(2):
                await hold.release()
        with pytest.raises(SessionLockLost, match="released"):
            await hold.check()


async def test_closing_the_store_ends_every_wait(durable_backing: Backing) -> None:
    store = durable_backing.open()
    holds = [await take(store, f"s-{index}") for index in range(3)]
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            for hold in holds:
                group.start_soon(hold.wait_lost)
            await anyio.wait_all_tasks_blocked()
            await store.aclose()
    with pytest.raises(SessionLockLost, match="closed"):
        await holds[0].check()


async def test_cancelling_wait_lost_and_check_returns_at_once(
    durable_backing: Backing, request: pytest.FixtureRequest
) -> None:
    dsn = dsn_of(durable_backing, request)
    async with durable_backing.open() as store:
        hold = await take(store, "s-1")
        for call in (hold.wait_lost, hold.check):
            started = anyio.current_time()
            with anyio.CancelScope() as scope:
                scope.cancel()
                await call()
            assert scope.cancelled_caught
            with anyio.move_on_after(0.05):
                await call()
            assert anyio.current_time() - started < 1, f"cancelling {call.__name__} waited"
        await hold.check()  # cancelled calls left the hold and the store as they were

        # Waiters come and go: the one probing is cancelled, and another takes over.
        other = await take(store, "s-2")
        returned: list[str] = []
        done = anyio.Event()

        async def wait(lock: SessionLock, name: str, scope: anyio.CancelScope) -> None:
            with scope:
                await lock.wait_lost()
                returned.append(name)
                done.set()

        first_waiter = anyio.CancelScope()
        async with anyio.create_task_group() as group:
            group.start_soon(wait, hold, "first", first_waiter)  # the one probing
            await anyio.wait_all_tasks_blocked()
            group.start_soon(wait, other, "second", anyio.CancelScope())
            await anyio.wait_all_tasks_blocked()
            first_waiter.cancel()
            lose_locks(store, dsn)
            with anyio.fail_after(2):
                await done.wait()
        assert returned == ["second"]


async def save_into(
    outcomes: dict[str, SessionConflict | None],
    name: str,
    store: Store,
    new: Checkpoint,
    follows: str | None,
) -> None:
    """`store.save_following(new, follows)`, its refusal (or None) kept as `outcomes[name]`."""
    try:
        await store.save_following(new, follows)
    except SessionConflict as conflict:
        outcomes[name] = conflict
    else:
        outcomes[name] = None


async def test_racing_fenced_saves_let_exactly_one_through(backing: Backing) -> None:
    async with backing.open() as first, backing.open() as second:
        for turn in range(15):
            read = await first.latest("race")
            outcomes: dict[str, SessionConflict | None] = {}
            saves = {name: checkpoint("race", after=read, note=name) for name in ("a", "b")}
            async with anyio.create_task_group() as group:
                for name, store in (("a", first), ("b", second)):
                    group.start_soon(save_into, outcomes, name, store, saves[name], read)
            winners = [name for name, error in outcomes.items() if error is None]
            assert len(winners) == 1, (turn, outcomes)
            (loser,) = set(saves) - set(winners)
            refusal = outcomes[loser]
            assert isinstance(refusal, SessionConflict)
            assert refusal.found == saves[winners[0]].id
            assert await second.latest("race") == saves[winners[0]].id
        assert len(await first.list("race")) == 15


async def test_a_fenced_save_checks_what_it_follows(store: Store) -> None:
    first = checkpoint("s")
    with pytest.raises(SessionConflict) as conflict:
        await store.save_following(first, "0-unsaved")
    assert conflict.value.found is None
    await store.save_following(first, None)
    with pytest.raises(SessionConflict) as conflict:
        await store.save_following(checkpoint("s", after=first.id), None)
    assert conflict.value.found == first.id
    early = checkpoint("s").model_copy(update={"id": "0"})
    with pytest.raises(ValueError, match=rf"'0' would sort before '{first.id}'"):
        await store.save_following(early, first.id)
    assert await store.list("s") == [first.id]


async def test_check_alone_finds_a_dropped_postgres_lock_connection(
    postgres_dsn: str, postgres_schema: str
) -> None:
    async with PostgresCheckpointStore(postgres_dsn, schema=postgres_schema) as store:
        hold = await take(store, "s-1")
        lose_locks(store, postgres_dsn)
        with pytest.raises(SessionLockLost, match="PostgreSQL lock connection dropped"):
            await hold.check()  # no lock call, no waiter: the check's own round trip
        await hold.release()
        again = await take(store, "s-1")  # on a new connection
        await again.check()
        await again.release()
