"""SQLite specifics: WAL, surviving a killed writer, several store objects on one file."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from raf.stores import Checkpoint, SqliteCheckpointStore, _records, new_id

pytestmark = pytest.mark.anyio

# Saves checkpoints as fast as it can and prints each id once its save has returned.
_WRITER = """
import sys
from datetime import UTC, datetime

import anyio

from raf.stores import Checkpoint, SqliteCheckpointStore, new_id


async def main(path: str) -> None:
    async with SqliteCheckpointStore(path) as store:
        step = 0
        while True:
            checkpoint = Checkpoint(
                id=new_id(), session_id="s", workflow_id="w", superstep=step,
                created_at=datetime.now(UTC), data={"step": step, "blob": "x" * 30_000},
            )
            await store.save(checkpoint)
            print(checkpoint.id, flush=True)
            step += 1


anyio.run(main, sys.argv[1])
"""


def _checkpoint(session_id: str, step: int) -> Checkpoint:
    return Checkpoint(
        id=new_id(),
        session_id=session_id,
        workflow_id="w",
        superstep=step,
        created_at=datetime.now(UTC),
        data={"step": step},
    )


def _query(path: Path, query: str) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return connection.execute(query).fetchall()


async def _ids_printed_before_kill(path: Path, wanted: int, errors: Path) -> list[str]:
    """Run the writer until it reported `wanted` saves, SIGKILL it, and return the ids it reported."""
    committed: list[str] = []
    pending = b""
    with errors.open("wb") as stderr, anyio.fail_after(30):
        process = await anyio.open_process(
            [sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, stderr=stderr
        )
        async with process:
            assert process.stdout is not None
            async for chunk in process.stdout:
                *lines, pending = (pending + chunk).split(b"\n")
                committed += [line.decode() for line in lines]
                if len(committed) >= wanted:
                    break
            process.kill()
            await process.wait()
    assert len(committed) >= wanted, await anyio.Path(errors).read_text()
    assert process.returncode == -signal.SIGKILL
    return committed


async def test_the_file_survives_a_killed_writer(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    committed = await _ids_printed_before_kill(path, 40, tmp_path / "writer.err")

    assert _query(path, "PRAGMA integrity_check") == [("ok",)]
    async with SqliteCheckpointStore(path) as store:
        ids = await store.list("s")
        # Every save reported before the kill is there, in order, as are any made after it.
        assert ids[: len(committed)] == committed
        for step, checkpoint_id in enumerate(ids):
            loaded = await store.load(checkpoint_id)
            assert loaded.superstep == step
            assert loaded.data == {"step": step, "blob": "x" * 30_000}
        after = _checkpoint("s", len(ids))
        await store.save(after)
        assert await store.latest("s") == after.id


async def test_the_file_is_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    async with SqliteCheckpointStore(path) as store:
        await store.save(_checkpoint("s", 0))
    assert _query(path, "PRAGMA journal_mode") == [("wal",)]
    tables = {name for (name,) in _query(path, "SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"meta", "checkpoints", "events", "objects"}
    assert _query(path, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(_records.SCHEMA_VERSION),)
    ]


async def test_two_store_objects_write_one_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    saved: list[str] = []
    async with SqliteCheckpointStore(path) as first, SqliteCheckpointStore(path) as second:

        async def writer(store: SqliteCheckpointStore, start: int) -> None:
            for step in range(start, start + 20):
                checkpoint = _checkpoint("s", step)
                saved.append(checkpoint.id)
                await store.save(checkpoint)

        async with anyio.create_task_group() as group:
            group.start_soon(writer, first, 0)
            group.start_soon(writer, second, 100)
        assert await first.list("s") == sorted(saved)
        assert await second.list("s") == sorted(saved)


async def test_an_in_memory_database_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a file named ':memory:' would appear here
    async with SqliteCheckpointStore(":memory:") as store:
        checkpoint = _checkpoint("s", 0)
        await store.save(checkpoint)
        assert await store.load(checkpoint.id) == checkpoint
    assert [entry async for entry in anyio.Path(tmp_path).iterdir()] == []


async def test_a_path_in_a_missing_folder_fails_on_open_naming_the_folder(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "missing-dir" / "x.db")
    assert repr(store) == f"SqliteCheckpointStore({str(tmp_path / 'missing-dir' / 'x.db')!r})"
    with pytest.raises(FileNotFoundError, match="missing-dir' does not exist; create it"):
        async with store:
            pass
