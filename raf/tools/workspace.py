"""Builtin workspace tools: read, write, patch, list and search the files under one root
folder, and (when enabled) run commands in it.

Every path a model gives is resolved against the root, symlinks included. A path leading
outside the root, a missing, binary or oversize file, a bad pattern, a patch whose text is
absent or repeated: each comes back as an error result naming the path (and the root), so
the model can correct itself. Nothing outside the root is read or written by these tools;
`shell_exec` runs its commands with their working folder inside the root, which confines
where they start, not what they may do (it is off unless `shell=True`).

Example:
    >>> import anyio, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> workspace = Workspace(folder.name)
    >>> [t.name for t in workspace.tools()]
    ['read_file', 'write_file', 'patch_file', 'list_files', 'search_files']
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

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated

from pydantic import Field

from raf.errors import ToolError
from raf.tools._files import (
    SNIFF_BYTES,
    capped,
    os_error,
    read_lines,
    walk,
)
from raf.tools._glob import Glob
from raf.tools._writes import PathLocks, refuse_unsafe_target, replace_file
from raf.tools.cancellation import check_not_cancelled
from raf.tools.patch import replace_once
from raf.tools.search import Search, SkipReason, line_matcher
from raf.tools.shell import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT, command_env, run_command
from raf.tools.tool import Tool

DEFAULT_MAX_BYTES = 256 * 1024
"""Files larger than this are read only by ranges of lines, and never searched or patched."""
DEFAULT_MAX_RESULTS = 200
"""At most this many entries from `list_files`, matching lines from `search_files`."""
DEFAULT_SEARCH_SECONDS = 10.0
"""How long `search_files` searches before it answers with what it found so far."""
MAX_SHELL_TIMEOUT = 600.0
"""The longest timeout a model may give `shell_exec`, in seconds."""


class Workspace:
    """A folder whose files a model may read, list, search and (optionally) write and patch,
    and in which it may (optionally) run commands.

    Args:
        root: the folder; it must exist. Every tool path is relative to it.
        writable: whether `tools()` includes `write_file` and `patch_file`.
        shell: whether `tools()` includes `shell_exec`. Commands start inside the root but
            can reach anything the process can: enable it only for a root you would let
            the model's author work in.
        max_bytes: files larger than this must be read by ranges of lines; they are skipped
            by `search_files` and refused by `patch_file`.
        max_results: the most entries `list_files` and matching lines `search_files` return.
        max_output_bytes: how much of a command's stdout (and of its stderr) `shell_exec`
            shows.
        env: variables `shell_exec` commands get on top of the allow-listed few of this
            process (PATH, HOME, LANG, TERM, ...: `raf.tools.shell.SAFE_ENV_NAMES`); no other
            variable of this process (API keys, passwords) reaches a command.
        search_seconds: how long `search_files` searches before it answers with what it
            has found (saying it stopped early).
        vcs_writable: whether `write_file` and `patch_file` may write under `.git/`, `.hg/`
            or `.svn/` (whose files can make the user's next `git status` run a command).

    Attributes:
        root: the root folder, symlinks resolved.

    Raises:
        ToolError: when `root` is not an existing folder.
        ValueError: when `max_bytes`, `max_results` or `max_output_bytes` is below 1.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [t.name for t in Workspace(folder, writable=False).tools()]
        ['read_file', 'list_files', 'search_files']
    """

    __slots__ = (
        "_env",
        "_locks",
        "_tools",
        "max_bytes",
        "max_output_bytes",
        "max_results",
        "root",
        "search_seconds",
        "shell",
        "vcs_writable",
        "writable",
    )

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        writable: bool = True,
        shell: bool = False,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_results: int = DEFAULT_MAX_RESULTS,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        env: Mapping[str, str] | None = None,
        vcs_writable: bool = False,
        search_seconds: float = DEFAULT_SEARCH_SECONDS,
    ) -> None:
        if min(max_bytes, max_results, max_output_bytes) < 1:
            raise ValueError(
                f"Workspace({os.fspath(root)!r}): max_bytes, max_results and max_output_bytes "
                f"must be at least 1, not {max_bytes}, {max_results} and {max_output_bytes}"
            )
        if search_seconds <= 0:
            raise ValueError(
                f"Workspace({os.fspath(root)!r}): search_seconds must be positive, "
                f"not {search_seconds}"
            )
        resolved = Path(root).resolve()
        if not resolved.is_dir():
            raise ToolError(f"workspace root {os.fspath(root)!r} is not an existing folder")
        self.root = resolved
        self.writable = writable
        self.vcs_writable = vcs_writable
        self.search_seconds = search_seconds
        self._locks = PathLocks()
        self.max_bytes = max_bytes
        self.max_results = max_results
        self.shell = shell
        self.max_output_bytes = max_output_bytes
        self._env = command_env(env)
        writers = [self.write_file, self.patch_file] if writable else []
        runner = [self.shell_exec] if shell else []
        methods = [self.read_file, *writers, self.list_files, self.search_files, *runner]
        self._tools = tuple(Tool(method) for method in methods)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r}, writable={self.writable}, shell={self.shell})"

    def tools(self) -> list[Tool]:
        """The tools a model can call on this workspace (`write_file` and `patch_file` only
        when writable, `shell_exec` only with `shell=True`)."""
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
                if b"\0" in file.read(SNIFF_BYTES):
                    raise ToolError(f"{path!r} is a binary file; only text files can be read")
                file.seek(0)
                return read_lines(file, path, offset, limit)
        except UnicodeDecodeError as exc:
            raise ToolError(f"{path!r} is not UTF-8 text ({exc.reason})") from None
        except OSError as exc:
            raise os_error("read", path, exc) from None

    def write_file(self, path: str, content: str) -> str:
        """Write a UTF-8 text file in the workspace, replacing it, creating its folders.

        Args:
            path: the file, relative to the workspace root.
            content: the whole new text of the file.
        """
        target = self._writable(path, existing=False)
        data = content.encode()
        with self._locks(target):
            if self._exists(path, target) and not target.is_file():
                raise ToolError(f"{path!r} exists and is not a regular file; choose another path")
            self._refuse_unsafe(path, target)
            try:
                check_not_cancelled()
                target.parent.mkdir(parents=True, exist_ok=True)
                replace_file(target, data)
            except OSError as exc:
                raise os_error("write", path, exc) from None
        return f"wrote {len(data)} bytes to {self._relative(target)!r}"

    def patch_file(self, path: str, old_text: str, new_text: str) -> str:
        """Replace one exact piece of a workspace text file with new text.

        old_text must occur exactly once in the file; when it is absent or occurs several
        times nothing changes and the error says where (line numbers), so include enough
        surrounding lines to make it unique.

        Args:
            path: the file, relative to the workspace root.
            old_text: the exact text to replace, whitespace and indentation included.
            new_text: the text to put in its place (empty to delete it).
        """
        target = self._writable(path, existing=True)
        with self._locks(target):  # read, change and write with no other write between
            if not target.is_file():
                raise ToolError(f"{path!r} is not a file; patch_file changes text files")
            self._refuse_unsafe(path, target)
            text = self._small_text(target)
            if not isinstance(text, str):
                raise ToolError(
                    f"{path!r} is not a UTF-8 text file of at most {self.max_bytes:,} bytes; "
                    "patch_file changes text files (write_file replaces a file whole)"
                )
            changed = replace_once(text, old_text, new_text, path)
            try:
                replace_file(target, changed.encode())
            except OSError as exc:
                raise os_error("write", path, exc) from None
        line = text.count("\n", 0, text.index(old_text)) + 1
        return (
            f"patched {self._relative(target)!r} at line {line}: replaced "
            f"{old_text.count(chr(10)) + 1} line(s) with {new_text.count(chr(10)) + 1}"
        )

    def list_files(self, path: str = ".", pattern: str = "*") -> str:
        """List the files and folders of a workspace folder, one path a line (folders end in /).

        Args:
            path: the folder to list, relative to the workspace root.
            pattern: a glob matched against paths below the folder: '*' lists its entries,
                '*.py' its Python files, '**/*.py' those of every subfolder too.
        """
        base = self._folder(path)
        glob = Glob(pattern)
        found = [
            self._relative(entry) + ("/" if is_dir else "") for entry, is_dir in glob.walk(base)
        ]
        if not found:
            return f"nothing under {path!r} matches {pattern!r}"
        found.sort()
        shown = f"{self.max_results} of {len(found)} entries"
        return capped(found, self.max_results, shown)

    def search_files(self, pattern: str, path: str = ".", regex: bool = False) -> str:
        """Find the lines of the workspace's text files that contain a text or match a regex.

        Each match is given as `path:line: text`, paths relative to the workspace root.

        Args:
            pattern: the text to look for (or, with regex=true, a regular expression in
                RE2 syntax: Python's, without backreferences or lookaround).
            path: the folder (or file) to search, relative to the workspace root.
            regex: whether pattern is a regular expression rather than plain text.
        """
        search = Search(
            line_matcher(pattern, regex=regex),
            max_results=self.max_results,
            seconds=self.search_seconds,
        )
        target = self._existing(path)
        files = [target] if target.is_file() else [e for _, d, e in walk(target, None) if not d]
        for file in files:
            if not search.goes_on():
                break
            text = self._small_text(file)
            if isinstance(text, str):
                search.scan(self._relative(file), text)
            else:
                search.skip(text.reason)
        return search.report(path, pattern)

    async def shell_exec(
        self,
        command: str | list[str],
        cwd: str = ".",
        timeout: Annotated[float, Field(gt=0, le=MAX_SHELL_TIMEOUT)] = DEFAULT_TIMEOUT,
    ) -> str:
        """Run a command in the workspace and report its exit code, stdout and stderr.

        The command and everything it starts are killed when it times out. Long output is
        cut, with a note saying how much.

        Args:
            command: a shell command line (run by /bin/sh), or a program and its arguments
                as a list (run without a shell).
            cwd: the folder to run it in, relative to the workspace root.
            timeout: seconds before the command is killed.
        """
        if not self.shell:
            raise ToolError(f"the workspace {str(self.root)!r} does not run commands")
        folder = self._folder(cwd)
        try:
            result = await run_command(
                command,
                cwd=folder,
                timeout=timeout,
                max_output=self.max_output_bytes,
                env=self._env,
            )
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        except OSError as exc:
            raise ToolError(
                f"cannot run {command!r}: {exc.strerror or exc}; check the program name "
                "(list_files shows the workspace, or give a shell command line)"
            ) from None
        if not result.ok:
            raise ToolError(result.report())
        return result.report()

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

    def _writable(self, path: str, *, existing: bool) -> Path:
        """`path` resolved for a write (an `existing` file); an error when read-only."""
        if not self.writable:
            raise ToolError(f"the workspace {str(self.root)!r} is read-only")
        return self._existing(path) if existing else self._resolve(path)

    def _refuse_unsafe(self, path: str, target: Path) -> None:
        relative = PurePosixPath(target.relative_to(self.root).as_posix())
        refuse_unsafe_target(path, relative, target, vcs=self.vcs_writable)

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
            raise os_error("open", path, exc) from None

    def _folder(self, path: str) -> Path:
        target = self._existing(path)
        if not target.is_dir():
            raise ToolError(f"{path!r} is a file, not a folder; read it with read_file")
        return target

    def _relative(self, target: Path) -> str:
        return target.relative_to(self.root).as_posix() or "."

    def _small_text(self, file: Path) -> str | _Skipped:
        """The text of `file` when it is a small UTF-8 text file inside the root, else why not."""
        try:
            real = file.resolve()
            if not real.is_relative_to(self.root) or not real.is_file():
                return _Skipped("link")
            if real.stat().st_size > self.max_bytes:
                return _Skipped("oversize")
            data = real.read_bytes()
            if b"\0" in data[:SNIFF_BYTES]:
                return _Skipped("binary")
            return data.decode()
        except UnicodeDecodeError:
            return _Skipped("undecodable")
        except (OSError, RuntimeError):
            return _Skipped("unreadable")


@dataclass(frozen=True, slots=True)
class _Skipped:
    reason: SkipReason


def workspace_tools(
    root: str | os.PathLike[str],
    *,
    writable: bool = True,
    shell: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_results: int = DEFAULT_MAX_RESULTS,
) -> list[Tool]:
    """The tools of a `Workspace` on `root`: read, list, search (write and patch) its files
    (and run commands in it, with `shell=True`).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [t.name for t in workspace_tools(folder, writable=False)]
        ['read_file', 'list_files', 'search_files']
    """
    workspace = Workspace(
        root, writable=writable, shell=shell, max_bytes=max_bytes, max_results=max_results
    )
    return workspace.tools()
