"""What a front tells its client when the store under its threads fails, and what it logs.

A store that cannot open its file, whose disk is full or whose database is gone fails a
request that did nothing wrong: the client is told which store failed, the store's own
error, and what the operator can do about it; the traceback goes to the `raf` logger, never
to the client. The AG-UI stream (`RUN_ERROR`, code `STORE_FAILED`), the studio's routes
(503) and ACP prompts (a JSON-RPC error) all say it through `store_failed`.

Example:
    >>> from raf.stores import SqliteCheckpointStore
    >>> error = OSError(28, "No space left on device")
    >>> store_failed(SqliteCheckpointStore("t.db"), "could not save thread 't1'", error)
    "could not save thread 't1' in SqliteCheckpointStore('t.db'): OSError: [Errno 28] No space left on device. Free disk space where the store keeps its data"
"""

from __future__ import annotations

import errno
import logging
import sqlite3

from raf.errors import AgentError

__all__ = ["STORE_FAILED", "log_failure", "store_failed"]

STORE_FAILED = "StoreFailed"
"""The `RUN_ERROR` code of a run whose store failed."""

logger = logging.getLogger("raf")

_FULL = (errno.ENOSPC, errno.EDQUOT)
_UNREACHABLE = (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)


def store_failed(store: object, doing: str, error: BaseException) -> str:
    """`doing` failed in `store` (named by its repr, which never holds a password): the
    store's error, and what to do about it. The caller adds what the client does next."""
    said = f"{doing} in {_name(store)}: {type(error).__name__}: {error}"
    remedy = _remedy(error)
    return f"{said}. {remedy}" if remedy else said


def log_failure(message: str, error: BaseException) -> None:
    """Log `message` with the traceback of `error` to the `raf` logger."""
    logger.error("%s", message, exc_info=(type(error), error, error.__traceback__))


def _name(store: object) -> str:
    # Every store of raf.stores says what it is in its repr; another may not.
    if type(store).__repr__ is object.__repr__:
        return type(store).__name__
    return repr(store)


def _remedy(error: BaseException) -> str:
    if isinstance(error, AgentError):  # raf's own says what to do (a damaged file, a lost lock)
        return ""
    text = str(error).lower()
    if (isinstance(error, OSError) and error.errno in _FULL) or "disk is full" in text:
        return "Free disk space where the store keeps its data"
    if isinstance(error, _UNREACHABLE) or (
        isinstance(error, sqlite3.OperationalError) and "unable to open" in text
    ):
        return "Check that the store's path names a file in an existing folder the server may write"
    return "Check that the store is reachable and sound (its file, its disk, its database server)"
