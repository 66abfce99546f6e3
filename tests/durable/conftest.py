"""A DBOS instance per test, on a fresh SQLite system database; the server the worker
processes of the recovery tests are forked from."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from dbos import DBOS

from tests.forkserver import ForkServers, command

# What the fork server imports: the workers, and what they import lazily (the OpenAI client's
# transport, graph validation's networkx, SQLite): ~0.5 CPU-s a worker otherwise.
PRELOAD = [
    "tests.durable.worker",
    "tests.durable.fanout_worker",
    "tests.durable.vote_worker",
    "tests.durable.migrate",
    "httpcore2",
    "networkx",
    "sqlite3",
]


@pytest.fixture
def dbos_sqlite(tmp_path: Path) -> Iterator[str]:
    """Configure DBOS on a SQLite file (launch it inside the test's event loop)."""
    url = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    DBOS(
        config={
            "name": "raf-test",
            "system_database_url": url,
            "notification_listener_polling_interval_sec": 0.01,
        }
    )
    try:
        yield url
    finally:
        DBOS.destroy(destroy_registry=True)


@pytest.fixture(scope="session")
def forkserver(forkservers: ForkServers) -> str:
    """The socket of the server the worker processes are forked from (`tests.forkserver`)."""
    return forkservers.get(*PRELOAD)


def postgres_url(name: str) -> str:
    dsn = os.environ.get("RAF_TEST_POSTGRES_DSN")
    if not dsn:
        pytest.skip("set RAF_TEST_POSTGRES_DSN to run the PostgreSQL recovery tests")
    return f"{dsn.rsplit('/', 1)[0]}/{name}"


def drop_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    admin = url.rsplit("/", 1)[0] + "/postgres"
    name = sql.Identifier(url.rsplit("/", 1)[1])
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))


@pytest.fixture(scope="session")
def postgres_template(forkserver: str) -> Iterator[str]:
    """A PostgreSQL system database DBOS created and migrated once, with no connection
    left: each test's database is a copy (`CREATE DATABASE ... TEMPLATE`), which spares
    the migrations (~4 s of a busy server a database)."""
    url = postgres_url(f"raf_dbos_template_{uuid.uuid4().hex[:12]}")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    try:
        subprocess.run([*command(forkserver, "tests.durable.migrate"), url], env=env, check=True)
        yield url
    finally:
        drop_database(url)


@pytest.fixture
def postgres_db(postgres_template: str) -> Iterator[str]:
    """A fresh, migrated DBOS system database on PostgreSQL, dropped after the test."""
    import psycopg
    from psycopg import sql

    url = postgres_url(f"raf_dbos_{uuid.uuid4().hex[:12]}")
    admin = url.rsplit("/", 1)[0] + "/postgres"
    name, template = (sql.Identifier(u.rsplit("/", 1)[1]) for u in (url, postgres_template))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(name, template))
    try:
        yield url
    finally:
        drop_database(url)
