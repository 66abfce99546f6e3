"""The command runner of `shell_exec`: bounded in time, output, environment and reach.

The command runs under a small reaper process (`_reaper.py`) in a new session, with no stdin
and only an allow-listed environment (`command_env`). When the command ends, times out or its
caller is cancelled, the reaper SIGKILLs every process the command started, including those
that left its session (`setsid`, a double fork: on Linux the reaper is their subreaper), and
raf kills the process group besides; the stopping runs shielded from cancellation. Output
beyond the cap is read and counted but not kept, and the report says how much was cut.

Example:
    >>> import anyio, tempfile
    >>> from pathlib import Path
    >>> result = anyio.run(lambda: run_command("echo hi; echo oops >&2; exit 3",
    ...                                        cwd=Path(tempfile.gettempdir())))
    >>> result.exit_code, result.stdout, result.stderr
    (3, 'hi\\n', 'oops\\n')
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT",
    "SAFE_ENV_NAMES",
    "CommandResult",
    "command_env",
    "run_command",
]

DEFAULT_TIMEOUT = 60.0
"""Seconds a command may run before its process group is killed."""
DEFAULT_MAX_OUTPUT_BYTES = 16_000
"""Bytes of stdout (and of stderr) kept; the rest is counted and reported as cut."""

_DRAIN_SECONDS = 1.0  # after the kill, how long the pipes may take to report their end
_REAP_SECONDS = 2.0  # how long the reaper may take to kill the command's processes and end
_REAPER = str(Path(__file__).with_name("_reaper.py"))

SAFE_ENV_NAMES = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR"}
    | {"LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_NUMERIC", "LC_TIME"}
)
"""The variables of raf's own environment a command sees; everything else (API keys,
passwords, tokens) stays out unless the workspace is given it (`Workspace(env=...)`)."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    """How a command ended and what it wrote."""

    command: str
    """The command as a shell would show it."""
    exit_code: int | None
    """Its exit status (negative: killed by that signal); None when it timed out."""
    stdout: str
    """What it wrote to stdout (the first `max_output` bytes)."""
    stderr: str
    """What it wrote to stderr (the first `max_output` bytes)."""
    stdout_bytes: int
    """How many bytes it wrote to stdout in all."""
    stderr_bytes: int
    """How many bytes it wrote to stderr in all."""
    timed_out: bool
    """True when the timeout ended it."""
    timeout: float
    """The timeout it ran under, in seconds."""

    @property
    def ok(self) -> bool:
        """Whether it ran to the end and exited with status 0."""
        return self.exit_code == 0 and not self.timed_out

    def report(self) -> str:
        """The result as text for a model: how it ended, then stdout and stderr, cuts noted."""
        if self.timed_out:
            ending = (
                f"timed out after {self.timeout:g} s; its process group was killed "
                "(give a larger timeout, or run less at once)"
            )
        else:
            ending = f"exit code {self.exit_code}"
        parts = [f"$ {self.command}", ending]
        for name, text, total in (
            ("stdout", self.stdout, self.stdout_bytes),
            ("stderr", self.stderr, self.stderr_bytes),
        ):
            if not total:
                continue
            parts.append(f"--- {name} ---\n{text.rstrip(chr(10))}")
            kept = len(text.encode())
            if kept < total:
                parts.append(f"[{name} truncated: showing {kept:,} of {total:,} bytes]")
        return "\n".join(parts)


class _Capture:
    """Reads a pipe to its end, keeping the first `limit` bytes."""

    __slots__ = ("chunks", "ended", "kept", "limit", "total")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.kept = 0
        self.total = 0
        self.ended = anyio.Event()

    async def drain(self, stream: ByteReceiveStream) -> None:
        try:
            async for chunk in stream:
                self.total += len(chunk)
                room = self.limit - self.kept
                if room > 0:
                    piece = chunk[:room]
                    self.chunks.append(piece)
                    self.kept += len(piece)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the run is over: closed by `_stop`
        finally:
            self.ended.set()

    def text(self) -> str:
        # A multi-byte character cut at the cap is dropped rather than shown as garbage.
        return b"".join(self.chunks).decode(
            errors="ignore" if self.total > self.kept else "replace"
        )


async def run_command(
    command: str | Sequence[str],
    *,
    cwd: Path,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT_BYTES,
    env: Mapping[str, str] | None = None,
) -> CommandResult:
    """Run `command` (a shell string, or an argv list run without a shell) in `cwd`.

    `env` is the whole environment of the command (`command_env()` by default: PATH, HOME,
    LANG, TERM and the like of this process, nothing else).

    Raises:
        OSError: when the command cannot be started (say, the program does not exist).
        ValueError: when `command` is empty.
    """
    shown = command if isinstance(command, str) else shlex.join(command)
    if not shown.strip():
        raise ValueError("the command is empty; give a shell command or a program and its args")
    environment = dict(command_env() if env is None else env)
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    _check_program(argv[0], cwd, environment.get("PATH", os.defpath))
    out, err = _Capture(max_output), _Capture(max_output)
    # Shielded: a cancel while the process starts would kill only its leader (asyncio closes
    # a half-made transport that way) and leave what it started running; the cleanup below
    # stops the reaper, which kills everything, and the next await sees the cancel.
    started: Process | None = None
    with anyio.CancelScope(shield=True):
        started = await anyio.open_process(
            [sys.executable, "-I", "-S", _REAPER, *argv],
            cwd=cwd,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    process = started
    assert process is not None  # a shielded scope lets nothing else through
    timed_out = False
    try:
        async with anyio.create_task_group() as readers:
            assert process.stdout is not None and process.stderr is not None
            readers.start_soon(out.drain, process.stdout)
            readers.start_soon(err.drain, process.stderr)
            with anyio.move_on_after(timeout) as deadline:
                await process.wait()  # the reaper exits once the command and all it left are gone
            timed_out = deadline.cancelled_caught
            with anyio.CancelScope(shield=True):
                await _stop(process)
            with anyio.move_on_after(_DRAIN_SECONDS):
                await out.ended.wait()
                await err.ended.wait()
            readers.cancel_scope.cancel()  # a process stuck in the kernel keeps no pipe open
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process)
            with anyio.move_on_after(_REAP_SECONDS):
                await process.aclose()  # closes the pipes, reaps the reaper
    return CommandResult(
        command=shown,
        exit_code=None if timed_out else process.returncode,
        stdout=out.text(),
        stderr=err.text(),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        timed_out=timed_out,
        timeout=timeout,
    )


def command_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command runs with: the allow-listed variables of this process
    (`SAFE_ENV_NAMES`) and `extra`, nothing else, so no API key or password leaks to it.

    Example:
        >>> sorted(command_env({"CI": "1"}).keys() - SAFE_ENV_NAMES)
        ['CI']
    """
    environment = {name: value for name, value in os.environ.items() if name in SAFE_ENV_NAMES}
    environment.setdefault("PATH", os.defpath)
    environment.update(extra or {})
    return environment


def _check_program(program: str, cwd: Path, path: str) -> None:
    """Raise `FileNotFoundError` when `program` is not an executable (found on `path`)."""
    found = (
        os.access(cwd / program, os.X_OK) if "/" in program else shutil.which(program, path=path)
    )
    if not found:
        raise FileNotFoundError(errno.ENOENT, "No such program", program)


async def _stop(process: Process) -> None:
    """End the run: close the reaper's pipe, so it kills everything the command left, and
    wait for it; when it does not end in time, kill its process group. Shielded by the caller."""
    if process.returncode is None and process.stdin is not None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
        with anyio.move_on_after(_REAP_SECONDS):
            await process.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(process.pid, signal.SIGKILL)
