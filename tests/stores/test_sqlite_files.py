"""Damaged and foreign files at a SQLite store's path: named, explained, never re-initialised."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from raf.errors import CheckpointError
from raf.stores import Checkpoint, SqliteCheckpointStore

pytestmark = pytest.mark.anyio


def _checkpoint(step: int) -> Checkpoint:
    return Checkpoint(
        id=f"c{step:03d}",
        session_id="s",
        workflow_id="w",
        superstep=step,
        created_at=datetime.now(UTC),
        data={"history": [f"message {step}.{i} " + "x" * 300 for i in range(40)]},
    )


async def _raf_database(path: Path, checkpoints: int = 30) -> None:
    async with SqliteCheckpointStore(path) as store:
        for step in range(checkpoints):
            await store.save(_checkpoint(step))
    assert not _exists(f"{path}-wal")  # closing folded the log into the file


def _exists(path: str) -> bool:
    return os.path.exists(path)


def _truncate_to_half(path: Path) -> int:
    with open(path, "r+b") as file:
        file.truncate(path.stat().st_size // 2)
    return path.stat().st_size


def _overwrite_the_middle(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as file:  # same size, pages past the schema overwritten
        file.seek(size // 3)
        file.write(b"\xa5" * (size // 3))


async def _use(path: Path) -> None:
    async with SqliteCheckpointStore(path) as store:
        for checkpoint_id in await store.list("s"):
            await store.load(checkpoint_id)
        await store.save(_checkpoint(999))


async def test_a_half_truncated_database_is_named_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await _raf_database(path)
    size = _truncate_to_half(path)
    with pytest.raises(CheckpointError) as caught:
        await _use(path)
    message = str(caught.value)
    assert repr(str(path)) in message
    assert "is damaged" in message and "cut short" in message
    assert "restore it from a backup" in message
    assert path.stat().st_size == size  # nothing written to it


async def test_a_damaged_page_met_later_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await _raf_database(path)
    _overwrite_the_middle(path)
    with pytest.raises(CheckpointError, match=r"is damaged .*malformed") as caught:
        await _use(path)
    assert repr(str(path)) in str(caught.value)
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)


async def test_a_text_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("shopping list\n" * 20)
    with pytest.raises(CheckpointError, match="is not a SQLite database") as caught:
        await _use(path)
    assert repr(str(path)) in str(caught.value)
    assert path.read_text() == "shopping list\n" * 20


async def test_an_empty_file_made_beforehand_is_refused_not_initialised(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.touch()
    with pytest.raises(CheckpointError, match=r"is an empty file \(0 bytes\)") as caught:
        await _use(path)
    assert "delete it (or move it aside)" in str(caught.value)
    assert path.stat().st_size == 0


async def test_another_applications_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("CREATE TABLE meta (name TEXT)")  # a `meta`, but not raf's
        connection.execute("INSERT INTO users (name) VALUES ('ada')")
    with pytest.raises(CheckpointError, match="holds tables \\('meta', 'users'\\) but no raf"):
        await _use(path)
    with contextlib.closing(sqlite3.connect(path)) as connection:
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        assert sorted(name for (name,) in tables) == ["meta", "users"]


async def test_a_sqlite_database_without_tables_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("VACUUM")  # writes the header: a database holding nothing
    assert path.stat().st_size > 0
    await _use(path)
    async with SqliteCheckpointStore(path) as store:
        assert await store.list("s") == ["c999"]


async def test_a_missing_path_is_created_whole_and_nothing_else_is_left(tmp_path: Path) -> None:
    path = tmp_path / "new.db"

    async def open_and_save(step: int) -> None:
        async with SqliteCheckpointStore(path) as store:
            await store.save(_checkpoint(step))

    async with anyio.create_task_group() as group:  # two creators at once: one file wins
        for step in range(4):
            group.start_soon(open_and_save, step)
    async with SqliteCheckpointStore(path) as store:
        assert await store.list("s") == ["c000", "c001", "c002", "c003"]
    assert [name for name in os.listdir(tmp_path) if name != "new.db-sessions"] == ["new.db"]


async def test_a_folder_at_the_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="is a folder"):
        await _use(tmp_path)
