"""The `raf` fixture: the `raf` script run forked from a server that imported what it needs."""

from __future__ import annotations

from functools import partial

import pytest

from tests.cli.support import RAF, RafCommand
from tests.cli.support import raf as fresh_raf
from tests.forkserver import ForkServers, script

PRELOAD = [
    "raf.cli.main",
    "raf.cli.commands",
    "raf.cli.demo",
    "raf.cli.live_tree",
    "raf.providers.openai",
    "raf.stores.sqlite",
    "anyio._backends._asyncio",
    "httpcore2",
    "networkx",
    "tests.cli.targets",
]


@pytest.fixture(scope="module")
def raf(forkservers: ForkServers) -> RafCommand:
    """`raf ARGS...` (see `tests.cli.support.raf`), forked from the server."""
    return partial(fresh_raf, via=script(forkservers.get(*PRELOAD), RAF))
