"""Python processes forked from one that made their imports already (raf, the OpenAI client,
DBOS, the ACP SDK: 0.3 to 3 CPU-s a process), each still a process of its own.

    python -m tests.forkserver SOCKET MODULE...
    python -I -S tests/forkrequest.py SOCKET -m MODULE ARG...
    python -I -S tests/forkrequest.py SOCKET PATH ARG...

The first is the server: it imports the MODULEs, prints `ready`, then for each request on the
Unix socket SOCKET forks a worker that runs a module as `python -m MODULE ARG...` would, or a
script as `python PATH ARG...` would (`sys.path[0]` the working directory, or the script's
folder), on the requester's stdin, stdout, stderr, environment and working directory. The
others are requesters (`tests/forkrequest.py`, a few ms a start): a requester ends as its worker
ended, with its exit code or killed by its signal, so a test sees the worker's own end.

A requester passes the signals it can catch (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1) on to
its worker; SIGUSR2 SIGKILLs the worker (`kill`), since SIGKILL itself cannot be passed on;
a requester gone (SIGKILLed, say) SIGKILLs its worker. A worker is waited for by a process the
server forked and waits for, so its CPU time counts in the server's children, and the
server's in the test process's.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import marshal
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from tests.forkrequest import KILL

HERE = Path(__file__)
REQUESTER = str(HERE.parent / "forkrequest.py")
RUNNING = [
    "anyio._backends._asyncio",
    "anyio._core._fileio",
    "importlib.metadata",
    "pydantic._internal._dataclasses",
    "pydantic.plugin._loader",
    "sqlite3",
    *(["anyio._backends._trio"] if find_spec("trio") else []),
    *(["psycopg", "raf.stores._pg_locks", "raf.stores._pg_sql"] if find_spec("psycopg") else []),
]
"""What a raf run in a child imports lazily once it runs (its event loop, pydantic's and the
stores' parts), to add to a server's preload; trio and psycopg only where installed (the tests
needing them skip otherwise)."""


def command(server: str, module: str) -> list[str]:
    """The argv prefix that runs `module` (add its arguments) forked from `server`."""
    return [sys.executable, "-I", "-S", REQUESTER, server, "-m", module]


def script(server: str, path: str | Path) -> list[str]:
    """The argv prefix that runs the script at `path` (add its arguments) forked from
    `server`."""
    return [sys.executable, "-I", "-S", REQUESTER, server, str(path)]


def kill(process: Any) -> None:
    """SIGKILL the worker of requester `process` (a `Popen` or an anyio `Process`); the
    requester then ends killed by SIGKILL, once the worker is gone."""
    process.send_signal(KILL)


@contextmanager
def running(socket_path: str | Path, preload: list[str]) -> Iterator[str]:
    """A server on `socket_path` that imported `preload`; yields the socket path, and stops
    the server after its workers (SIGKILLing what is left after a minute)."""
    argv = [sys.executable, "-m", "tests.forkserver", str(socket_path), *preload]
    server = subprocess.Popen(
        argv,
        cwd=HERE.parent.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert server.stdout is not None
    try:
        assert server.stdout.readline() == b"ready\n", "the fork server did not start"
        yield str(socket_path)
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:  # a worker of a failed test still running
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        server.stdout.close()


class ForkServers:
    """A worker's fork servers, one per set of modules to preload, each started when first
    asked for (`get`) and stopped by `close`."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._servers: dict[tuple[str, ...], str] = {}
        self._stack = ExitStack()

    def get(self, *preload: str) -> str:
        """The socket of the server that preloaded `preload`."""
        if preload not in self._servers:
            path = self._folder / f"fork{len(self._servers)}.socket"
            self._servers[preload] = self._stack.enter_context(running(path, list(preload)))
        return self._servers[preload]

    def close(self) -> None:
        self._stack.close()


# The worker.


def run(asked: dict[str, Any]) -> int:
    """In the forked worker: run what `asked` names as `python` would; its exit code."""
    os.chdir(asked["cwd"])
    os.environ.clear()
    os.environ.update(asked["env"])
    for signum in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    python_path = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    sys.path[1:1] = [os.path.abspath(entry) for entry in python_path if entry]
    code = 0
    try:
        if "module" in asked:
            sys.path[0] = os.getcwd()
            sys.argv = [asked["module"], *asked["args"]]
            sys.modules.pop(asked["module"], None)  # preloaded: runpy would warn it runs again
            runpy.run_module(asked["module"], run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.realpath(asked["path"]))
            sys.argv = [asked["path"], *asked["args"]]
            runpy.run_path(asked["path"], run_name="__main__")
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
        if not isinstance(exit.code, int | None):
            print(exit.code, file=sys.stderr)
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # pyright: ignore[reportAttributeAccessIssue]  # as Python's own exit
    atexit._run_exitfuncs()  # pyright: ignore[reportPrivateUsage]
    sys.stdout.flush()
    sys.stderr.flush()
    if code == -signal.SIGINT:  # as Python ends on an uncaught KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


# The server.


def read_request(conn: socket.socket) -> tuple[list[int], dict[str, Any]]:
    """The stdio descriptors and the request a requester sent on `conn`."""
    data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        more = conn.recv(65536)
        if not more:
            raise EOFError("the requester left before it asked")
        data += more
    return fds, marshal.loads(data[4:])


def answer(conn: socket.socket, fds: list[int], asked: dict[str, Any]) -> None:
    """In a process forked for one request: fork the worker, pass on the requester's signals
    until it ends (SIGKILL it if the requester goes), say how it ended."""
    pid = os.fork()
    if pid == 0:
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os._exit(run(asked) & 0xFF)  # sys.exit(-1) ends with 255, as in Python
    for fd in fds:
        os.close(fd)
    ended = os.pidfd_open(pid)
    pending = b""
    while ended not in select.select([conn, ended], [], [])[0]:
        received = conn.recv(64)
        if not received:  # the requester is gone
            os.kill(pid, signal.SIGKILL)
            break
        pending += received
        *signals, pending = pending.split(b"\n")
        for signum in signals:
            os.kill(pid, int(signum))
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        report = f"signal:{os.WTERMSIG(status)}"
    else:
        report = f"exit:{os.waitstatus_to_exitcode(status)}"
    with suppress(OSError):  # the requester is gone
        conn.sendall(report.encode())
    conn.close()


def reap() -> None:
    """Reap the answering processes that ended."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(path: str, modules: list[str]) -> None:
    """Fork a worker for each request on `path` until SIGTERM; then wait for the workers.
    Signals wake the loop through a pipe (`signal.set_wakeup_fd`): a signal arriving just
    before a blocking call would otherwise be handled only after it, that is never."""
    for module in modules:
        importlib.import_module(module)
    gc.freeze()  # what the server made stays unscanned, and so unwritten, in every fork
    stopping: list[int] = []
    wakeups, wake = os.pipe()
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that it wakes the loop
    signal.signal(signal.SIGTERM, lambda signum, _: stopping.append(signum))
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    while not stopping:
        ready, _, _ = select.select([listener, wakeups], [], [])
        if wakeups in ready:
            os.read(wakeups, 4096)
            reap()
        if listener not in ready:
            continue
        conn, _ = listener.accept()
        try:
            fds, asked = read_request(conn)
        except (EOFError, ValueError, OSError):
            conn.close()
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            for fd in (wakeups, wake, listener.detach()):
                os.close(fd)
            try:
                answer(conn, fds, asked)
            finally:
                os._exit(0)
        conn.close()
        for fd in fds:
            os.close(fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:  # wait for every worker still running (their CPU time counts)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
