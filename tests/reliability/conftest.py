"""The PostgreSQL fixtures of the store tests, for the reliability tests too; the server the
child processes of the crash, in-doubt and worker tests are forked from."""

from pathlib import Path

import pytest

from tests.forkserver import RUNNING, ForkServers
from tests.stores.conftest import postgres_dsn, postgres_schema

__all__ = ["forkserver", "postgres_dsn", "postgres_schema", "store_spec"]

# What the fork server imports: what the children (`crash_workflow`, `tool_crash_workflow`,
# `session_worker`) import, including what `raf` imports lazily, and what a run imports next:
# ~0.4 CPU-s a child otherwise. Not the children themselves: each runs as `__main__`, its own
# code anew.
PRELOAD = [
    "tests.reliability.processes",
    "raf",
    "raf.builders.concurrent",
    "raf.builders.sequential",
    "raf.engine",
    "raf.messages",
    "raf.providers._checks",
    "raf.react",
    "raf.stores",
    "raf.testing",
    "raf.tools.in_doubt",
    "raf.tools.journal",
    *RUNNING,
]


@pytest.fixture(scope="session")
def forkserver(forkservers: ForkServers) -> str:
    """The socket of the server the child processes are forked from (`tests.forkserver`)."""
    return forkservers.get(*PRELOAD)


@pytest.fixture(params=["sqlite", "postgres"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the child processes keep their runs: `sqlite:PATH` or `postgres:DSN#SCHEMA`
    (what `tests.reliability.processes.open_store` opens)."""
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'runs.db'}"
    dsn: str = request.getfixturevalue("postgres_dsn")
    schema: str = request.getfixturevalue("postgres_schema")
    return f"postgres:{dsn}#{schema}"
