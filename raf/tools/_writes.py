"""How the workspace writes a file: one writer per path at a time, whole or not at all.

A model may ask for several writes and patches of one file in one turn; they run in worker
threads at once. `PathLocks` gives each path one lock, so a patch reads, changes and writes
the file with no other write in between and none is lost. `replace_file` writes a temporary
file next to the target and renames it over the target, so a reader (or a cancelled run)
never sees half a file. `refuse_unsafe_target` refuses the targets that would let a model
reach past the workspace: a version-control folder (`.git/config` can run commands on the
user's next `git status`) and a file with other hard links (which may lie outside the root).

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     target = Path(folder) / "a.txt"
    ...     replace_file(target, b"one")
    ...     replace_file(target, b"two")
    ...     target.read_bytes(), sorted(p.name for p in Path(folder).iterdir())
    (b'two', ['a.txt'])
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from pathlib import Path, PurePosixPath

from raf.errors import ToolError
from raf.tools.cancellation import check_not_cancelled

__all__ = ["VCS_FOLDERS", "PathLocks", "refuse_unsafe_target", "replace_file"]

VCS_FOLDERS = frozenset({".git", ".hg", ".svn"})
"""Folders whose files run commands for version-control tools; not written unless allowed."""


class PathLocks:
    """One `threading.Lock` per path: writes to one file run one at a time, others in parallel."""

    __slots__ = ("_guard", "_locks")

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[Path, threading.Lock] = {}

    def __call__(self, path: Path) -> threading.Lock:
        """The lock of `path` (a resolved path)."""
        with self._guard:
            return self._locks.setdefault(path, threading.Lock())


def refuse_unsafe_target(path: str, relative: PurePosixPath, target: Path, *, vcs: bool) -> None:
    """Raise `ToolError` when `target` (`relative` to the root) may not be written.

    Refused: a path through a version-control folder (unless `vcs`), and an existing regular
    file with more than one hard link.
    """
    folder = next((part for part in relative.parts if part.lower() in VCS_FOLDERS), None)
    if folder is not None and not vcs:
        raise ToolError(
            f"{path!r} is inside the version-control folder {folder!r}, which this workspace "
            "does not write (its files can run commands for git and the like); change the "
            "working files instead"
        )
    try:
        info = target.lstat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ToolError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        raise ToolError(
            f"{path!r} has {info.st_nlink} hard links, and the others may be outside the "
            "workspace; it is not written through. Write a new file instead"
        )


def replace_file(target: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `target` and rename it over `target`.

    The file keeps its permission bits. Nothing changes if the call was cancelled first.

    Raises:
        OSError: when the folder cannot be written.
        ToolError: when the tool call was cancelled.
    """
    try:
        mode: int | None = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        if mode is not None:
            os.chmod(temporary, mode)
        else:
            os.chmod(temporary, 0o666 & ~_umask())
        check_not_cancelled()
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    """This process's umask, from /proc (setting it to read it would race other threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022
