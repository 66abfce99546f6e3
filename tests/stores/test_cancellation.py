"""A cancelled caller stops its database statement instead of waiting it out.

Another connection holds a lock until the test lets go, which it does only after checking that
the cancelled save came back; the store then works and holds nothing of the cancelled write.
"""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from raf.stores import Checkpoint, PostgresCheckpointStore, SqliteCheckpointStore, new_id
from raf.stores._interruptible import run_interruptible

pytestmark = pytest.mark.anyio

# Cancelled after 0.3 s, a store call must be back well within this, even on a slow, loaded
# machine; the locks below would otherwise be held for 40 s or more.
_PROMPT_SECONDS = 5.0
# Counts to 10^12 in SQLite: runs for hours unless interrupted.
_ENDLESS_SQLITE_QUERY = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000000000)"
    " SELECT count(*) FROM n"
)


def _checkpoint(step: int) -> Checkpoint:
    return Checkpoint(
        id=new_id(),
        session_id="s",
        workflow_id="w",
        superstep=step,
        created_at=datetime.now(UTC),
        data={"step": step},
    )


async def _cancelled_after(seconds: float, call: Any) -> float:
    """Run `call()` under `move_on_after(seconds)`; check it was cancelled; return the time taken."""
    started = time.perf_counter()
    with anyio.move_on_after(seconds) as scope:
        await call()
    elapsed = time.perf_counter() - started
    assert scope.cancelled_caught, "the call finished before it could be cancelled"
    assert elapsed < _PROMPT_SECONDS, f"cancelling took {elapsed:.2f} s"
    return elapsed


# The helper both stores use.


async def test_an_uncancelled_call_returns_its_value_or_raises_its_error() -> None:
    interrupts: list[None] = []
    assert await run_interruptible(lambda: 42, lambda: interrupts.append(None)) == 42

    def fail() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        await run_interruptible(fail, lambda: interrupts.append(None))
    assert interrupts == []


async def test_a_cancelled_call_is_interrupted_and_waited_for_before_the_cancellation() -> None:
    release = threading.Event()
    calls_running = 0
    finished: list[bool] = []

    def call() -> None:
        nonlocal calls_running
        calls_running += 1
        release.wait(60)
        finished.append(release.is_set())
        calls_running -= 1

    await _cancelled_after(0.05, lambda: run_interruptible(call, release.set))
    assert finished == [True]  # the thread ended, stopped by the interrupt, before we got back
    assert calls_running == 0


# SQLite


async def test_sqlite_a_save_waiting_for_a_lock_is_cancelled_and_rolled_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "locked.db"
    async with SqliteCheckpointStore(path) as store:
        kept = _checkpoint(0)
        await store.save(kept)
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")  # the write lock, until the test lets go
            cancelled = _checkpoint(1)
            await _cancelled_after(0.3, lambda: store.save(cancelled))
        finally:
            holder.execute("ROLLBACK")
            holder.close()

        with pytest.raises(KeyError):
            await store.load(cancelled.id)
        after = _checkpoint(2)
        await store.save(after)
        assert await store.list("s") == [kept.id, after.id]
        assert await store.load(after.id) == after


async def test_sqlite_opening_a_file_another_writer_locks_is_cancelled(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    async with SqliteCheckpointStore(path):
        pass
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        store = SqliteCheckpointStore(path)
        await _cancelled_after(0.3, store.__aenter__)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    async with store:
        checkpoint = _checkpoint(0)
        await store.save(checkpoint)
        assert await store.latest("s") == checkpoint.id


async def test_sqlite_a_running_statement_is_interrupted(tmp_path: Path) -> None:
    async with SqliteCheckpointStore(tmp_path / "busy.db") as store:
        connection = store._connection
        assert connection is not None
        # Ends the query if the store cannot, so that a regression fails instead of hanging.
        watchdog = threading.Timer(40, connection.interrupt)
        watchdog.start()
        try:
            await _cancelled_after(
                0.3, lambda: store._run(lambda c: c.execute(_ENDLESS_SQLITE_QUERY).fetchone())
            )
        finally:
            watchdog.cancel()
        checkpoint = _checkpoint(0)
        await store.save(checkpoint)
        assert await store.load(checkpoint.id) == checkpoint


# PostgreSQL


@pytest.fixture
def application(postgres_dsn: str) -> str:
    """A DSN tag that finds the store's own server sessions in `pg_stat_activity`."""
    return f"raf-test-{uuid.uuid4().hex[:12]}"


def _sessions(dsn: str, application: str) -> list[tuple[str, str | None]]:
    """(state, wait event type) of every server session of `application`."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT state, wait_event_type FROM pg_stat_activity WHERE application_name = %s",
            (application,),
        ).fetchall()
    return [(str(state), wait) for state, wait in rows]


async def _sessions_settle(dsn: str, application: str) -> list[tuple[str, str | None]]:
    """The sessions of `application` once the server has processed what was sent to them: a
    cancel request reaches the backend asynchronously, so its state is polled (bounded)."""
    with anyio.fail_after(10):
        while True:
            rows = await anyio.to_thread.run_sync(_sessions, dsn, application)
            # Idle and waiting for its client: a backend just done with a statement is idle
            # a moment before it waits (its wait event still None).
            if all(state == "idle" and event == "Client" for state, event in rows):
                return rows
            await anyio.sleep(0.02)


@pytest.fixture
def table_lock(postgres_dsn: str, postgres_schema: str) -> Iterator[Any]:
    """A connection that takes `ACCESS EXCLUSIVE` on the checkpoints table when told to.

    The server ends it after 40 s idle in its transaction, so a store that cannot cancel
    fails the test instead of hanging it.
    """
    import psycopg

    with psycopg.connect(postgres_dsn) as holder:
        holder.execute("SET idle_in_transaction_session_timeout = '40s'")
        holder.commit()
        yield holder
        # Already gone when the server timed it out (a failed test).
        with contextlib.suppress(psycopg.OperationalError):
            holder.rollback()


async def test_postgres_a_save_waiting_for_a_lock_is_cancelled_on_the_server(
    postgres_dsn: str, postgres_schema: str, application: str, table_lock: Any
) -> None:
    dsn = f"{postgres_dsn}?application_name={application}"
    async with PostgresCheckpointStore(dsn, schema=postgres_schema) as store:
        kept = _checkpoint(0)
        await store.save(kept)
        table_lock.execute(f'LOCK TABLE "{postgres_schema}".checkpoints IN ACCESS EXCLUSIVE MODE')
        cancelled = _checkpoint(1)
        await _cancelled_after(0.3, lambda: store.save(cancelled))
        # Still locked: the statement was cancelled on the server, not left waiting there.
        assert await _sessions_settle(postgres_dsn, application) == [("idle", "Client")]
        table_lock.rollback()

        with pytest.raises(KeyError):
            await store.load(cancelled.id)
        after = _checkpoint(2)
        await store.save(after)
        assert await store.list("s") == [kept.id, after.id]
        assert await store.load(after.id) == after
        # The cancelled statement's connection was reused, not dropped for a new one.
        assert await _sessions_settle(postgres_dsn, application) == [("idle", "Client")]


async def test_postgres_a_read_waiting_for_a_lock_is_cancelled(
    postgres_dsn: str, postgres_schema: str, table_lock: Any
) -> None:
    async with PostgresCheckpointStore(postgres_dsn, schema=postgres_schema) as store:
        kept = _checkpoint(0)
        await store.save(kept)
        table_lock.execute(f'LOCK TABLE "{postgres_schema}".checkpoints IN ACCESS EXCLUSIVE MODE')
        await _cancelled_after(0.3, lambda: store.list("s"))
        table_lock.rollback()
        assert await store.list("s") == [kept.id]


async def test_postgres_a_running_statement_is_cancelled(
    postgres_dsn: str, postgres_schema: str, application: str
) -> None:
    dsn = f"{postgres_dsn}?application_name={application}"
    async with PostgresCheckpointStore(dsn, schema=postgres_schema) as store:
        await _cancelled_after(0.3, lambda: store._run(lambda c: c.execute("SELECT pg_sleep(40)")))
        assert await _sessions_settle(postgres_dsn, application) == [("idle", "Client")]
        checkpoint = _checkpoint(0)
        await store.save(checkpoint)
        assert await store.load(checkpoint.id) == checkpoint


async def test_postgres_connecting_gives_up_after_the_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    psycopg = pytest.importorskip("psycopg")
    from raf.stores import _pg_pool

    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    monkeypatch.setattr(_pg_pool, "CONNECT_TIMEOUT_SECONDS", 2)  # libpq's least
    # Accepts the connection but never answers: the client waits for the server's reply.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        store = PostgresCheckpointStore(f"postgresql://postgres@127.0.0.1:{port}/test")
        started = time.perf_counter()
        with pytest.raises(psycopg.OperationalError):
            await store.save(_checkpoint(0))
        elapsed = time.perf_counter() - started
        await store.aclose()
    assert 1.5 < elapsed < 20, f"gave up after {elapsed:.2f} s"


def test_postgres_the_dsn_or_environment_can_set_the_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("psycopg")
    from raf.stores._pg_pool import CONNECT_TIMEOUT_SECONDS, connect_options

    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    assert connect_options("postgresql://h/db") == {"connect_timeout": CONNECT_TIMEOUT_SECONDS}
    assert connect_options("postgresql://h/db?connect_timeout=3") == {}
    assert connect_options("host=h dbname=db connect_timeout=0") == {}
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "7")
    assert connect_options("postgresql://h/db") == {}
