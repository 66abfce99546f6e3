"""The server the child processes of the role-runner tests (`roles_worker.py`,
`roles_crash.py`) are forked from."""

from importlib.util import find_spec

import pytest

from tests.forkserver import ForkServers

# What the fork server imports: what the children import, including what `raf` imports
# lazily, and what they import later (the event loops, the stores' drivers): ~0.4 CPU-s a
# child otherwise. trio and psycopg only where installed (the tests needing them skip
# otherwise).
PRELOAD = [
    "tests.builders.roles_support",
    "raf.adapters",
    "raf.builders.roles",
    "raf.stores._file_locks",
    "raf.stores.sqlite",
    "anyio._backends._asyncio",
    "anyio._core._fileio",
    "importlib.metadata",
    "pkgutil",
    "pydantic._internal._dataclasses",
    "pydantic.plugin._loader",
    "sqlite3",
    *(["anyio._backends._trio"] if find_spec("trio") else []),
    *(
        ["psycopg", "raf.stores.postgres", "raf.stores._pg_locks", "raf.stores._pg_sql"]
        if find_spec("psycopg")
        else []
    ),
]


@pytest.fixture(scope="session")
def forkserver(forkservers: ForkServers) -> str:
    """The socket of the server the child processes are forked from (`tests.forkserver`)."""
    return forkservers.get(*PRELOAD)
