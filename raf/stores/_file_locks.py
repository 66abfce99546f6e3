"""`FileLocks`: a session held among the processes of one machine, by a lock on a file.

Each session id locks one byte of a lock file next to the database (`runs.db-sessions` beside
`runs.db`), at an offset hashed from the id (62 bits: two ids meet by chance with odds of
about one in 10^18). The locks are Linux's open-file-description locks (`F_OFD_SETLK`): they
hold between store objects of one process as between processes, and the kernel drops them when
the process dies, however it dies. A run that waits tries again after a pause that grows from
5 ms to 100 ms. Where the platform has no such locks, `FileLocks.supported()` is False and a
session is single-writer within its process only.

A lock is on the file, not on its name: once the file at the path is removed or replaced,
another process opens (or creates) a new file there and locks its bytes freely. So every hold
on the old file is lost then: `check()` compares the file at the path with the open one, and
`wait_lost()` looks again about once a second; the next lock opens the new file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import struct
import sys

import anyio
import anyio.lowlevel
from anyio import to_thread

from raf.stores._holds import Generation, Hold, Watch
from raf.stores._session_locks import taken

__all__ = ["FileLocks"]

_OFFSET_MASK = (1 << 62) - 1
_BUSY = frozenset({errno.EAGAIN, errno.EACCES})
_PROBE_SECONDS = 1.0  # how often `wait_lost` looks at the path


class _LockFile:
    """One opening of the lock file: its descriptor, and the holds taken on it."""

    __slots__ = ("fd", "generation")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.generation = Generation()


class FileLocks:
    """Session locks of one SQLite store, as byte locks on the file `path`."""

    __slots__ = ("_closed", "_file", "_path", "_watch")

    def __init__(self, path: str) -> None:
        self._path = path
        self._file: _LockFile | None = None
        self._closed = False
        self._watch = Watch(self._probe, interval=_PROBE_SECONDS)

    @staticmethod
    def supported() -> bool:
        """Whether this platform has the locks (Linux's open-file-description locks)."""
        return sys.platform == "linux"

    async def acquire(self, session_id: str, wait: bool) -> Hold | None:
        """Lock `session_id` (waiting for it when `wait`): the hold, or None when another
        store object or process holds it."""
        offset = _offset(session_id)
        taken_on: list[_LockFile] = []

        async def attempt() -> bool:
            file = await self._current()
            if not self._set(file.fd, offset, locked=True):
                return False
            taken_on.append(file)
            return True

        if not await taken(attempt, wait=wait):
            return None
        (file,) = taken_on

        async def unlock() -> None:
            if file is self._file:  # else its file was closed, and its locks with it
                self._set(file.fd, offset, locked=False)

        return Hold(session_id, file.generation, unlock, self._watch)

    def close(self) -> None:
        """Close the lock file, which drops every lock it holds."""
        self._closed = True
        self._drop(self._file, "the store was closed")

    async def _current(self) -> _LockFile:
        """The open lock file, opened anew when there is none or the path has another file."""
        file = self._file
        if file is not None and not self._replaced(file):
            return file
        opened = await to_thread.run_sync(self._open)
        current = self._file
        if self._closed or current is not file:  # closed, or another run opened it meanwhile
            os.close(opened)
            if current is None:
                raise anyio.ClosedResourceError("the SQLite store is closed")
            return current
        self._drop(file, self._moved)
        self._file = new = _LockFile(opened)
        return new

    def _drop(self, file: _LockFile | None, reason: str) -> None:
        """Close `file`, losing its holds for `reason`."""
        if file is None:
            return
        if self._file is file:
            self._file = None
        file.generation.lose(reason)
        os.close(file.fd)
        self._watch.announce()

    async def _probe(self) -> None:
        file = self._file
        if file is not None and self._replaced(file):
            file.generation.lose(self._moved)
        await anyio.lowlevel.checkpoint()

    @property
    def _moved(self) -> str:
        return f"its lock file {self._path!r} was removed or replaced"

    def _replaced(self, file: _LockFile) -> bool:
        """Whether the path no longer names `file` (two stat calls: on the event loop, as
        cheap as the lock calls themselves)."""
        try:
            named = os.stat(self._path)
        except FileNotFoundError:
            return True
        opened = os.fstat(file.fd)
        return (named.st_dev, named.st_ino) != (opened.st_dev, opened.st_ino)

    def _open(self) -> int:
        try:
            return os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as error:
            raise OSError(
                error.errno, f"cannot open the session lock file {self._path!r}: {error.strerror}"
            ) from error

    def _set(self, fd: int, offset: int, *, locked: bool) -> bool:
        """Take (or drop) the lock on byte `offset`; False when another holds it."""
        import fcntl

        kind = fcntl.F_WRLCK if locked else fcntl.F_UNLCK
        # struct flock: l_type, l_whence, l_start, l_len, l_pid (0 for OFD locks), padded.
        request = struct.pack("hhqqi", kind, os.SEEK_SET, offset, 1, 0).ljust(64, b"\0")
        try:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, request)
        except OSError as error:
            if locked and error.errno in _BUSY:
                return False
            raise OSError(
                error.errno, f"cannot lock a session in {self._path!r}: {error.strerror}"
            ) from error
        return True


def _offset(session_id: str) -> int:
    digest = hashlib.blake2b(session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & _OFFSET_MASK
