"""The process `shell_exec` runs a command under: it outlives the command and kills what it left.

Run as `python -I -S _reaper.py PROGRAM ARGS...` with a pipe on stdin. On Linux it makes
itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), so every process the command
starts, however it detaches (`setsid`, a double fork), is re-parented to it rather than to
init when its parent dies. When the command exits, or raf closes the pipe (a timeout, a
cancelled run, raf itself dying), it SIGKILLs every descendant it finds in /proc, reaps
them, and exits as the command did (the same code, or the same signal).

Where the subreaper is not available it still kills the descendants /proc shows it, and
raf kills the process group besides. It imports nothing of raf: it runs with `-I -S`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys

_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _descendants(root: int) -> list[int]:
    """The pids of the living descendants of `root`, from /proc (empty without /proc)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue  # it ended meanwhile
        # "pid (name) state ppid ...": the name may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_all(me: int) -> None:
    """SIGKILL every descendant and reap until none is left (orphans come back to us)."""
    while True:
        for pid in _descendants(me):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return  # no child left: as a subreaper, no descendant either
        except InterruptedError:
            continue


def _reap(leader: int) -> int | None:
    """Reap the children that have ended; the leader's wait status once it has."""
    status: int | None = None
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == leader:
            status = code


def _wake(signum: int, frame: object) -> None:
    """SIGCHLD handler: nothing to do, the wake-up fd tells the loop."""


def main(argv: list[str]) -> int:
    _become_subreaper()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, _wake)
    try:
        leader = os.fork()
    except OSError as exc:
        print(f"cannot start {argv[0]!r}: {exc.strerror}", file=sys.stderr)
        return 126
    if leader == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.closerange(3, 1 << 16)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"cannot run {argv[0]!r}: {exc.strerror}\n".encode())
            os._exit(127)
    status: int | None = None
    while status is None:
        readable, _, _ = select.select([0, wake_read], [], [])
        if 0 in readable and not os.read(0, 512):
            break  # raf closed the pipe: stop now
        if wake_read in readable:
            os.read(wake_read, 512)
        status = _reap(leader)
    _kill_all(os.getpid())
    if status is None:
        return 137
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
