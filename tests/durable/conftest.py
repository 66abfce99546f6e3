"""A DBOS instance per test, on a fresh SQLite system database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from dbos import DBOS


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
