"""`raf.stores` exports its public names, each documented, and imports without psycopg."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import raf.stores
from raf.stores import PostgresCheckpointStore


def test_every_exported_name_imports_and_classes_and_functions_are_documented() -> None:
    assert len(raf.stores.__all__) == len(set(raf.stores.__all__))
    for name in raf.stores.__all__:
        value = getattr(raf.stores, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name} has no docstring"


def test_the_stores_import_without_the_postgres_driver() -> None:
    code = "import sys; sys.modules['psycopg'] = None; import raf.stores; print('ok')"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=30
    )
    assert result.stdout.strip() == "ok", result.stderr


def test_without_psycopg_the_postgres_store_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    for name in ("raf.stores._pg_pool", "raf.stores._pg_sql"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ImportError, match=r"pip install 'raf\[postgres\]'"):
        PostgresCheckpointStore("postgresql://unused")
