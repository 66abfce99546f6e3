"""Builtin workspace tools: read, write, list and search the files under one root folder.

Every path a model gives is resolved against the root, symlinks included. A path leading
outside the root, a missing, binary or oversize file, a bad pattern: each comes back as an
error result naming the path (and the root), so the model can correct itself. Nothing outside
the root is read or written.

Example:
    >>> import anyio, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> workspace = Workspace(folder.name)
    >>> [t.name for t in workspace.tools()]
    ['read_file', 'write_file', 'list_files', 'search_files']
    >>> workspace.write_file("notes/todo.txt", "buy milk\\n")
    "wrote 9 bytes to 'notes/todo.txt'"
    >>> read_file = workspace.tools()[0]
    >>> anyio.run(read_file.call, '{"path": "notes/todo.txt"}')
    ToolResult(text='buy milk\\n', is_error=False)
    >>> anyio.run(read_file.call, '{"path": "../secret.txt"}').is_error
    True
    >>> folder.cleanup()
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterator, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Annotated, BinaryIO

from pydantic import Field

from raf.errors import ToolError
from raf.tools.tool import DEFAULT_MAX_OUTPUT_CHARS, Tool

DEFAULT_MAX_BYTES = 256 * 1024
"""Files larger than this are read only by ranges of lines, and never searched."""
DEFAULT_MAX_RESULTS = 200
"""At most this many entries from `list_files`, matching lines from `search_files`."""

_SNIFF_BYTES = 8192  # a NUL byte in the first 8 KiB marks a file as binary
_READ_BUDGET = DEFAULT_MAX_OUTPUT_CHARS - 200  # room for the continuation note
_LINE_CHARS = 200  # search results show at most this much of a line


class Workspace:
    """A folder whose files a model may read, list, search and (optionally) write.

    Args:
        root: the folder; it must exist. Every tool path is relative to it.
        writable: whether `tools()` includes `write_file`.
        max_bytes: files larger than this must be read by ranges of lines; they are skipped
            by `search_files`.
        max_results: the most entries `list_files` and matching lines `search_files` return.

    Attributes:
        root: the root folder, symlinks resolved.

    Raises:
        ToolError: when `root` is not an existing folder.
        ValueError: when `max_bytes` or `max_results` is below 1.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [t.name for t in Workspace(folder, writable=False).tools()]
        ['read_file', 'list_files', 'search_files']
    """

    __slots__ = ("_tools", "max_bytes", "max_results", "root", "writable")

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        writable: bool = True,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_results: int = DEFAULT_MAX_RESULTS,
    ) -> None:
        if max_bytes < 1 or max_results < 1:
            raise ValueError(
                f"Workspace({os.fspath(root)!r}): max_bytes and max_results must be at least 1, "
                f"not {max_bytes} and {max_results}"
            )
        resolved = Path(root).resolve()
        if not resolved.is_dir():
            raise ToolError(f"workspace root {os.fspath(root)!r} is not an existing folder")
        self.root = resolved
        self.writable = writable
        self.max_bytes = max_bytes
        self.max_results = max_results
        writer = [self.write_file] if writable else []
        methods = [self.read_file, *writer, self.list_files, self.search_files]
        self._tools = tuple(Tool(method) for method in methods)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r}, writable={self.writable})"

    def tools(self) -> list[Tool]:
        """The tools a model can call on this workspace (`write_file` only when writable)."""
        return list(self._tools)

    def read_file(
        self,
        path: str,
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1)] | None = None,
    ) -> str:
        """Read a UTF-8 text file of the workspace, whole or a range of its lines.

        Long output stops at a line boundary with a note saying which offset to read on from.

        Args:
            path: the file, relative to the workspace root.
            offset: how many lines to skip first (line N of a search result is offset N-1).
            limit: how many lines to read at most (all the rest when omitted).
        """
        target = self._existing(path)
        if not target.is_file():
            raise ToolError(f"{path!r} is not a file; list_files shows what a folder holds")
        try:
            size = target.stat().st_size
            if size > self.max_bytes and offset == 0 and limit is None:
                raise ToolError(
                    f"{path!r} is {size:,} bytes, more than this workspace reads at once "
                    f"({self.max_bytes:,}); read a range of lines with offset and limit, "
                    "or find what you need with search_files"
                )
            with target.open("rb") as file:
                if b"\0" in file.read(_SNIFF_BYTES):
                    raise ToolError(f"{path!r} is a binary file; only text files can be read")
                file.seek(0)
                return _read_lines(file, path, offset, limit)
        except UnicodeDecodeError as exc:
            raise ToolError(f"{path!r} is not UTF-8 text ({exc.reason})") from None
        except OSError as exc:
            raise _os_error("read", path, exc) from None

    def write_file(self, path: str, content: str) -> str:
        """Write a UTF-8 text file in the workspace, replacing it, creating its folders.

        Args:
            path: the file, relative to the workspace root.
            content: the whole new text of the file.
        """
        if not self.writable:
            raise ToolError(f"the workspace {str(self.root)!r} is read-only")
        target = self._resolve(path)
        if self._exists(path, target) and not target.is_file():
            raise ToolError(f"{path!r} exists and is not a regular file; choose another path")
        data = content.encode()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as exc:
            raise _os_error("write", path, exc) from None
        return f"wrote {len(data)} bytes to {self._relative(target)!r}"

    def list_files(self, path: str = ".", pattern: str = "*") -> str:
        """List the files and folders of a workspace folder, one path a line (folders end in /).

        Args:
            path: the folder to list, relative to the workspace root.
            pattern: a glob matched against paths below the folder: '*' lists its entries,
                '*.py' its Python files, '**/*.py' those of every subfolder too.
        """
        base = self._folder(path)
        segments = _segments(pattern)
        depth = None if "**" in segments else len(segments)
        found: list[str] = []
        for parts, is_dir, entry in _walk(base, depth):
            if _match(parts, segments):
                found.append(self._relative(entry) + ("/" if is_dir else ""))
        if not found:
            return f"nothing under {path!r} matches {pattern!r}"
        found.sort()
        shown = f"{self.max_results} of {len(found)} entries"
        return _capped(found, self.max_results, shown)

    def search_files(self, pattern: str, path: str = ".", regex: bool = False) -> str:
        """Find the lines of the workspace's text files that contain a text or match a regex.

        Each match is given as `path:line: text`, paths relative to the workspace root.

        Args:
            pattern: the text to look for (or a Python regular expression with regex=true).
            path: the folder (or file) to search, relative to the workspace root.
            regex: whether pattern is a regular expression rather than plain text.
        """
        if not pattern:
            raise ToolError("search_files needs a non-empty pattern")
        try:
            matcher = re.compile(pattern if regex else re.escape(pattern))
        except re.error as exc:
            raise ToolError(
                f"pattern {pattern!r} is not a valid regular expression: {exc}"
            ) from None
        target = self._existing(path)
        files = [target] if target.is_file() else [e for _, d, e in _walk(target, None) if not d]
        hits: list[str] = []
        skipped = 0
        for file in files:
            lines = self._text_lines(file)
            if lines is None:
                skipped += 1
                continue
            name = self._relative(file)
            hits.extend(
                f"{name}:{n}: {_clip(line)}"
                for n, line in enumerate(lines, 1)
                if matcher.search(line)
            )
            if len(hits) > self.max_results:
                break
        note = f"\n[skipped {skipped} binary, undecodable or oversize files]" if skipped else ""
        if not hits:
            return f"no line under {path!r} matches {pattern!r}{note}"
        shown = f"the first {self.max_results} matches"
        return _capped(hits, self.max_results, shown) + note

    def _resolve(self, path: str) -> Path:
        """`path` resolved against the root; an error unless it stays inside the root."""
        if "\0" in path:
            raise ToolError(f"path {path!r} contains a NUL character")
        try:
            target = (self.root / path).resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            raise ToolError(f"cannot resolve path {path!r}: {exc}") from None
        if not target.is_relative_to(self.root):
            raise ToolError(
                f"path {path!r} is outside the workspace root {str(self.root)!r}; give a path "
                "relative to the root, without '..' or links leading out of it"
            )
        return target

    def _existing(self, path: str) -> Path:
        target = self._resolve(path)
        if not self._exists(path, target):
            raise ToolError(
                f"{path!r} does not exist in the workspace {str(self.root)!r}; "
                "list_files shows what is there"
            )
        return target

    def _exists(self, path: str, target: Path) -> bool:
        try:
            return target.exists()
        except OSError as exc:  # say, a name too long
            raise _os_error("open", path, exc) from None

    def _folder(self, path: str) -> Path:
        target = self._existing(path)
        if not target.is_dir():
            raise ToolError(f"{path!r} is a file, not a folder; read it with read_file")
        return target

    def _relative(self, target: Path) -> str:
        return target.relative_to(self.root).as_posix() or "."

    def _text_lines(self, file: Path) -> list[str] | None:
        """The lines of `file` when it is a small UTF-8 text file inside the root, else None."""
        try:
            real = file.resolve()
            if not real.is_relative_to(self.root) or not real.is_file():
                return None
            if real.stat().st_size > self.max_bytes:
                return None
            data = real.read_bytes()
            if b"\0" in data[:_SNIFF_BYTES]:
                return None
            return data.decode().splitlines()
        except (OSError, RuntimeError, UnicodeDecodeError):
            return None


def workspace_tools(
    root: str | os.PathLike[str],
    *,
    writable: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_results: int = DEFAULT_MAX_RESULTS,
) -> list[Tool]:
    """The tools of a `Workspace` on `root`: read, list, search (and write) its files.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [t.name for t in workspace_tools(folder, writable=False)]
        ['read_file', 'list_files', 'search_files']
    """
    return Workspace(root, writable=writable, max_bytes=max_bytes, max_results=max_results).tools()


def _read_lines(file: BinaryIO, path: str, offset: int, limit: int | None) -> str:
    """Lines offset.. of `file`, at most `limit` and about `_READ_BUDGET` characters."""
    skipped = 0
    while skipped < offset:
        piece = file.readline(65536)
        if not piece:
            raise ToolError(
                f"offset {offset} is past the end of {path!r}, which has {skipped} lines"
            )
        skipped += piece.endswith(b"\n")
    decoder = codecs.getincrementaldecoder("utf-8")()
    taken: list[str] = []
    used = 0
    while limit is None or len(taken) < limit:
        wanted = _READ_BUDGET - used + 1
        raw = file.readline(wanted)
        if not raw:
            decoder.decode(b"", final=True)  # a truncated character at the end raises
            break
        line = decoder.decode(raw)
        whole = raw.endswith(b"\n") or len(raw) < wanted  # else a piece of a longer line
        if used + len(line) <= _READ_BUDGET and whole:
            taken.append(line)
            used += len(line)
            continue
        if not taken:  # one line longer than the budget: show its start
            return (
                f"{line[:_READ_BUDGET]}\n[line {offset + 1} of {path!r} is too long to show "
                f"whole; read on with offset={offset + 1}]"
            )
        end = offset + len(taken)
        return (
            "".join(taken) + f"\n[showing lines {offset + 1}-{end} of {path!r}; "
            f"read on with offset={end}]"
        )
    return "".join(taken)


def _walk(base: Path, depth: int | None) -> Iterator[tuple[tuple[str, ...], bool, Path]]:
    """(parts below `base`, is a folder, path) of everything under `base`, links not followed."""
    for folder, dirnames, filenames in os.walk(base):
        here = Path(folder)
        prefix = here.relative_to(base).parts
        dirnames.sort()
        for name in dirnames:
            yield (*prefix, name), True, here / name
        for name in sorted(filenames):
            yield (*prefix, name), False, here / name
        if depth is not None and len(prefix) + 1 >= depth:
            dirnames.clear()  # the pattern cannot match anything deeper


def _segments(pattern: str) -> list[str]:
    segments: list[str] = []
    for segment in pattern.strip("/").split("/"):
        if segment == "**" and segments[-1:] == ["**"]:
            continue  # '**/**' is '**'; keeps matching linear
        segments.append(segment)
    return segments


def _match(parts: Sequence[str], segments: Sequence[str]) -> bool:
    """Whether path `parts` match glob `segments`, where '**' matches any number of parts."""
    if not segments:
        return not parts
    if segments[0] == "**":
        return any(_match(parts[i:], segments[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], segments[0]) and _match(parts[1:], segments[1:])


def _capped(lines: list[str], cap: int, shown: str) -> str:
    if len(lines) <= cap:
        return "\n".join(lines)
    return "\n".join(lines[:cap]) + f"\n[showing {shown}; narrow the path or the pattern]"


def _clip(line: str) -> str:
    return line if len(line) <= _LINE_CHARS else line[:_LINE_CHARS] + "..."


def _os_error(action: str, path: str, exc: OSError) -> ToolError:
    reason = exc.strerror or type(exc).__name__
    return ToolError(f"cannot {action} {path!r}: {reason}")
