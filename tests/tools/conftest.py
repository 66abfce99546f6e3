"""Fixtures of the tools tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.tools.mcp_forks import Forks


@pytest.fixture(scope="module")
def forks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Forks]:
    """One `forks` process for the module, on both backends (it runs no event loop)."""
    forks = Forks(tmp_path_factory.mktemp("forks") / "socket")
    try:
        yield forks
    finally:
        forks.close()
