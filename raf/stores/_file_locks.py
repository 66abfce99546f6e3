"""`FileLocks`: a session held among the processes of one machine, by a lock on a file.

Each session id locks one byte of a lock file next to the database (`runs.db-sessions` beside
`runs.db`), at an offset hashed from the id (62 bits: two ids meet by chance with odds of
about one in 10^18). The locks are Linux's open-file-description locks (`F_OFD_SETLK`): they
hold between store objects of one process as between processes, and the kernel drops them when
the process dies, however it dies. A run that waits tries again after a pause that grows from
5 ms to 100 ms. Where the platform has no such locks, `FileLocks.supported()` is False and a
session is single-writer within its process only.
"""

from __future__ import annotations

import errno
import hashlib
import os
import struct
import sys

from anyio import to_thread

from raf.stores._session_locks import Release, taken

__all__ = ["FileLocks"]

_OFFSET_MASK = (1 << 62) - 1
_BUSY = frozenset({errno.EAGAIN, errno.EACCES})


class FileLocks:
    """Session locks of one SQLite store, as byte locks on the file `path`."""

    __slots__ = ("_fd", "_path")

    def __init__(self, path: str) -> None:
        self._path = path
        self._fd: int | None = None

    @staticmethod
    def supported() -> bool:
        """Whether this platform has the locks (Linux's open-file-description locks)."""
        return sys.platform == "linux"

    async def acquire(self, session_id: str, wait: bool) -> Release | None:
        """Lock `session_id` (waiting for it when `wait`): how to unlock it, or None when
        another store object or process holds it."""
        fd = self._fd
        if fd is None:
            opened = await to_thread.run_sync(self._open)
            if self._fd is None:
                self._fd = opened
            else:  # another run opened it meanwhile
                os.close(opened)
            fd = self._fd
        offset = _offset(session_id)

        async def attempt() -> bool:
            return self._set(fd, offset, locked=True)

        if not await taken(attempt, wait=wait):
            return None

        async def release() -> None:
            if self._fd == fd:  # a closed store's locks went with its file
                self._set(fd, offset, locked=False)

        return release

    def close(self) -> None:
        """Close the lock file, which drops every lock it holds."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

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
