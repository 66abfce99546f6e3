"""The command runner of `shell_exec`: one process group, bounded in time and output.

The command runs in a new session (its own process group) with no stdin. When it ends, times
out or its caller is cancelled, the whole group is killed with SIGKILL, so nothing it started
is left running; the kill and the reaping run shielded from cancellation. Output beyond the
cap is read and counted but not kept, and the report says how much was cut.

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
import os
import shlex
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

__all__ = ["DEFAULT_MAX_OUTPUT_BYTES", "DEFAULT_TIMEOUT", "CommandResult", "run_command"]

DEFAULT_TIMEOUT = 60.0
"""Seconds a command may run before its process group is killed."""
DEFAULT_MAX_OUTPUT_BYTES = 16_000
"""Bytes of stdout (and of stderr) kept; the rest is counted and reported as cut."""

_DRAIN_SECONDS = 1.0  # after the kill, how long the pipes may take to report their end
_REAP_SECONDS = 2.0  # how long the killed leader may take to be reaped


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
) -> CommandResult:
    """Run `command` (a shell string, or an argv list run without a shell) in `cwd`.

    Raises:
        OSError: when the command cannot be started (say, the program does not exist).
        ValueError: when `command` is empty.
    """
    shown = command if isinstance(command, str) else shlex.join(command)
    if not shown.strip():
        raise ValueError("the command is empty; give a shell command or a program and its args")
    out, err = _Capture(max_output), _Capture(max_output)
    # Shielded: a cancel while the process starts would kill only its leader (asyncio closes
    # a half-made transport that way) and leave what it started running; the cleanup below
    # kills the whole group, and the next await sees the cancel.
    started: Process | None = None
    with anyio.CancelScope(shield=True):
        started = await anyio.open_process(
            command if isinstance(command, str) else list(command),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
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
                await process.wait()
            timed_out = deadline.cancelled_caught
            _kill_group(process)  # what the command left running goes too
            with anyio.move_on_after(_DRAIN_SECONDS):
                await out.ended.wait()
                await err.ended.wait()
            readers.cancel_scope.cancel()  # a process that left the group keeps no pipe open
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process)
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


def _kill_group(process: Process) -> None:
    """SIGKILL the command's process group (its pid: it leads a new session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(process.pid, signal.SIGKILL)


async def _stop(process: Process) -> None:
    """Kill the group, reap the leader and close the pipes; shielded by the caller."""
    _kill_group(process)
    with anyio.move_on_after(_REAP_SECONDS):
        await process.aclose()  # closes the pipes, then reaps the leader
