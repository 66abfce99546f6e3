"""The server the child processes of the role-runner tests (`roles_worker.py`,
`roles_crash.py`) are forked from."""

from importlib.util import find_spec

import pytest

from tests.forkserver import RUNNING, ForkServers

# What the fork server imports: what the children import, including what `raf` imports
# lazily, and what a run imports next: ~0.4 CPU-s a child otherwise.
PRELOAD = [
    "tests.builders.roles_support",
    "raf.adapters",
    "raf.builders.roles",
    "raf.stores._file_locks",
    "raf.stores.sqlite",
    "pkgutil",
    *RUNNING,
    *(["raf.stores.postgres"] if find_spec("psycopg") else []),
]


@pytest.fixture(scope="session")
def forkserver(forkservers: ForkServers) -> str:
    """The socket of the server the child processes are forked from (`tests.forkserver`)."""
    return forkservers.get(*PRELOAD)
