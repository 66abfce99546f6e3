"""What lies at a SQLite store's path: nothing yet, a raf database, or a file raf must not touch.

A store gives the schema only to a database it creates itself, and creates it whole: built
under a temporary name beside the path and linked into place, so the path never holds an
empty or half-made database of raf's. Anything else at the path is opened only when it is a
raf database (or an SQLite database with no tables at all, which holds nothing to lose). An
empty file, a file that is not SQLite, a file cut short, or another application's database is
refused with an error that names the file, says what is wrong and what to do; so is a damaged
page met later ("database disk image is malformed").
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Callable

from raf.errors import CheckpointError

__all__ = ["check_tables", "create_or_check", "damaged", "foreign_tables", "is_damage"]

_MAGIC = b"SQLite format 3\x00"
_HEADER_BYTES = 100
_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"


def create_or_check(path: str, prepare: Callable[[sqlite3.Connection], None]) -> None:
    """Create a raf database at `path` (its tables made by `prepare`) when nothing is there;
    else refuse a file that is plainly no usable SQLite database. Blocking.

    Raises:
        CheckpointError: naming `path`, for an empty file, a file that is not SQLite, or one
            shorter than its header says.
        FileNotFoundError: the folder of `path` does not exist.
    """
    if not os.path.lexists(path):
        _create(path, prepare)
    _check_header(path)


def _create(path: str, prepare: Callable[[sqlite3.Connection], None]) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"cannot create the SQLite store {path!r}: the folder {folder!r} does not exist; "
            "create it first"
        )
    building = f"{path}.{uuid.uuid4().hex[:12]}.new"
    try:
        with contextlib.closing(sqlite3.connect(building, isolation_level=None)) as connection:
            prepare(connection)
        # Closing the last connection folded the WAL into the file: it is whole on its own.
        try:
            os.link(building, path)  # fails, harmlessly, when another process was first
        except FileExistsError:
            pass
        except OSError:
            # A file system without hard links: the check just made is all there is.
            if not os.path.lexists(path):
                os.replace(building, path)
    finally:
        for leftover in (building, building + "-wal", building + "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(leftover)


def _check_header(path: str) -> None:
    """Refuse an empty file, a file that is not SQLite, and one cut short."""
    try:
        with open(path, "rb") as file:
            header = file.read(_HEADER_BYTES)
            size = os.fstat(file.fileno()).st_size
    except IsADirectoryError:
        raise CheckpointError(
            f"SQLite store {path!r} is a folder, not a database file; give the store a file path"
        ) from None
    if size == 0:
        raise _unusable(
            path,
            "is an empty file (0 bytes), so it holds no raf database: raf did not create it "
            "empty, so it lost its content (a copy cut short, a full disk) or belongs to "
            "something else",
            "restore it from a backup, or delete it (or move it aside) and raf creates a new "
            "empty store there",
        )
    if not header.startswith(_MAGIC):
        raise _unusable(
            path,
            "is not a SQLite database (its first bytes are not SQLite's)",
            "give the store a path of its own, or restore the database from a backup",
        )
    expected = _size_in_header(header)
    if expected is not None and size < expected and not _has_log(path):
        raise damaged(path, f"the file is {size:,} bytes but its header says {expected:,}")


def _size_in_header(header: bytes) -> int | None:
    """The database's size as its header gives it, when the header says it is valid."""
    if len(header) < _HEADER_BYTES:
        return None
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The count is valid only when the writer kept it (change counter == version-valid-for).
    if pages == 0 or header[24:28] != header[92:96]:
        return None
    return pages * page_size


def _has_log(path: str) -> bool:
    """Whether a write-ahead log holds changes the file itself may not have yet."""
    try:
        return os.path.getsize(path + "-wal") > 0
    except OSError:
        return False


def check_tables(connection: sqlite3.Connection, path: str) -> None:
    """Refuse a database that holds tables but no raf store (one records its layout version
    in `meta`); call it in the transaction that then creates raf's tables.

    Raises:
        CheckpointError: naming `path` and a few of its tables.
    """
    tables = [str(name) for (name,) in connection.execute(_TABLES).fetchall()]
    if not tables:
        return
    try:
        version = connection.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'"
        ).fetchone()
    except sqlite3.OperationalError:  # no `meta`, or one of another shape
        version = None
    if version is None:
        raise foreign_tables(f"SQLite file {path!r}", tables)


def foreign_tables(where: str, tables: list[str]) -> CheckpointError:
    """The error for a database (or schema) whose tables are not a raf store's."""
    shown = ", ".join(repr(name) for name in sorted(tables)[:5])
    more = f" and {len(tables) - 5} more" if len(tables) > 5 else ""
    return CheckpointError(
        f"{where} holds tables ({shown}{more}) but no raf store: it belongs to another "
        "application, and raf will not add its tables to it; give the store a database (or "
        "schema) of its own"
    )


def is_damage(error: sqlite3.DatabaseError) -> bool:
    """Whether SQLite found the file damaged or not a database (SQLITE_CORRUPT, SQLITE_NOTADB)."""
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    return code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def damaged(path: str, problem: str) -> CheckpointError:
    """The error for a database file SQLite cannot read whole."""
    return _unusable(
        path,
        f"is damaged ({problem}): it was cut short or overwritten after raf wrote it",
        "stop the processes using it, move it aside, and restore it from a backup (or open "
        "the copy with the sqlite3 shell's .recover to save what is left); raf creates a new "
        "empty store at the path once nothing is there",
    )


def _unusable(path: str, problem: str, todo: str) -> CheckpointError:
    return CheckpointError(f"SQLite store file {path!r} {problem}; {todo}")
