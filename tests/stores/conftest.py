"""Store fixtures: every backend behind one interface, plus raw SQL access to the database."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from raf.stores import MemoryCheckpointStore, PostgresCheckpointStore, SqliteCheckpointStore

Store = MemoryCheckpointStore | SqliteCheckpointStore | PostgresCheckpointStore
StoreKind = Literal["memory", "sqlite", "postgres"]

POSTGRES_DSN = os.environ.get("RAF_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
POSTGRES_REQUIRED = "RAF_TEST_POSTGRES_DSN" in os.environ
"""Set (as `.ci/run` does): an unreachable server fails the PostgreSQL tests instead of skipping."""


@dataclass
class Backing:
    """Where a store keeps its data: opens new store objects on it and runs raw SQL against it."""

    kind: StoreKind
    open: Callable[[], Store]
    sql: Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]


@pytest.fixture(scope="session")
def postgres_dsn() -> str:
    psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (raf[postgres])")
    try:
        with psycopg.connect(POSTGRES_DSN, connect_timeout=3):
            pass
    except psycopg.OperationalError as error:
        if POSTGRES_REQUIRED:
            pytest.fail(f"RAF_TEST_POSTGRES_DSN is set but PostgreSQL is not reachable: {error}")
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_DSN}: {error}")
    return POSTGRES_DSN


def _schema_name(worker_id: str) -> str:
    """A schema of its own for each test worker (`worker_id` is pytest-xdist's, `master`
    without workers), and unique on the server whoever else runs tests on it."""
    return f"raf_test_{worker_id}_{uuid.uuid4().hex}"


@pytest.fixture
def postgres_schema(postgres_dsn: str, worker_id: str) -> Iterator[str]:
    """A fresh schema name for one test; the schema is dropped afterwards."""
    import psycopg
    from psycopg import sql

    schema = _schema_name(worker_id)
    yield schema
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        connection.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


@pytest.fixture(scope="session")
def _shared_postgres_schema(postgres_dsn: str, worker_id: str) -> Iterator[str]:
    """One schema for the tests of the shared contract on this worker, dropped at the end."""
    import psycopg
    from psycopg import sql

    schema = _schema_name(worker_id)
    yield schema
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        connection.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


@pytest.fixture
def emptied_postgres_schema(postgres_dsn: str, _shared_postgres_schema: str) -> str:
    """The shared schema with its tables emptied: as good as new, and much faster to make."""
    import psycopg
    from psycopg import sql

    schema = _shared_postgres_schema
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        (exists,) = connection.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (f'"{schema}".checkpoints',)
        ).fetchone() or (False,)
        if exists:
            tables = [
                sql.Identifier(schema, name)
                for name in ("meta", "checkpoints", "events", "objects")
            ]
            connection.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(tables)))
    return schema


def _sqlite_backing(path: Path) -> Backing:
    def run_sql(query: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with contextlib.closing(sqlite3.connect(path)) as connection, connection:
            return connection.execute(query, parameters).fetchall()

    return Backing("sqlite", lambda: SqliteCheckpointStore(path), run_sql)


def _postgres_backing(dsn: str, schema: str) -> Backing:
    import psycopg
    from psycopg import sql

    def run_sql(query: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
            cursor = connection.execute(query.replace("?", "%s"), parameters)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    return Backing("postgres", lambda: PostgresCheckpointStore(dsn, schema=schema), run_sql)


def _memory_backing() -> Backing:
    store = MemoryCheckpointStore()

    def no_sql(query: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        raise AssertionError("the memory store has no SQL")

    return Backing("memory", lambda: store, no_sql)


def _make_backing(kind: StoreKind, request: pytest.FixtureRequest, tmp_path: Path) -> Backing:
    if kind == "memory":
        return _memory_backing()
    if kind == "sqlite":
        return _sqlite_backing(tmp_path / "store.db")
    dsn: str = request.getfixturevalue("postgres_dsn")
    schema: str = request.getfixturevalue("emptied_postgres_schema")
    return _postgres_backing(dsn, schema)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backing(request: pytest.FixtureRequest, tmp_path: Path) -> Backing:
    """Each backend in turn."""
    return _make_backing(request.param, request, tmp_path)


@pytest.fixture(params=["sqlite", "postgres"])
def durable_backing(request: pytest.FixtureRequest, tmp_path: Path) -> Backing:
    """The backends that outlive their store objects."""
    return _make_backing(request.param, request, tmp_path)


@pytest.fixture
async def store(backing: Backing) -> AsyncIterator[Store]:
    async with backing.open() as opened:
        yield opened
