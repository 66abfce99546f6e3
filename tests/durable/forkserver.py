"""Worker processes forked from one that imported them already (DBOS, the OpenAI client,
raf: ~3 CPU-s a process to import), each still a process of its own the tests SIGKILL.

    python -m tests.durable.forkserver serve SOCKET MODULE...
    python -I -S tests/durable/forkserver.py SOCKET MODULE ARG...

The first is the server: it imports the MODULEs, prints `ready`, then for each request on
the Unix socket SOCKET forks a process that runs a module as `python -m MODULE ARG...`
would, on the requester's stdin, stdout, stderr, environment and working directory. The
second is the requester (it imports only the standard library): it ends as the worker
ended, with its exit code or killed by its signal, so a test sees the worker's own end.
A forked worker is waited for by a process the server forked and waits for, so its CPU
time counts in the server's children, and the server's in the test process's.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import signal
import socket
import sys
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__)


def received(conn: socket.socket) -> bytes:
    """All the peer sends on `conn` until it shuts its side."""
    return b"".join(iter(lambda: conn.recv(65536), b""))


def command(server: str, module: str) -> list[str]:
    """The argv prefix that runs `module` (add its arguments) forked from `server`."""
    return [sys.executable, "-I", "-S", str(HERE), server, module]


def request(server: str, module: str, args: list[str]) -> None:
    """Have `server` run `module` with `args` on this process's stdio; end as it ended."""
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(server)
        socket.send_fds(conn, [b"r"], [0, 1, 2])
        asked = {"module": module, "args": args, "env": dict(os.environ), "cwd": os.getcwd()}
        conn.sendall(json.dumps(asked).encode())
        conn.shutdown(socket.SHUT_WR)
        status = received(conn).decode()
    kind, _, value = status.partition(":")
    if kind == "signal":
        if int(value) != signal.SIGKILL:  # SIGKILL has no handler to reset
            signal.signal(int(value), signal.SIG_DFL)
        os.kill(os.getpid(), int(value))
    sys.exit(int(value) if kind == "exit" else 1)


def run(module: str, args: list[str], env: dict[str, str], cwd: str) -> int:
    """In the forked worker: run `module` as `python -m` would; its exit code."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [module, *args]
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
        if not isinstance(exit.code, int | None):
            print(exit.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()  # pyright: ignore[reportPrivateUsage]
    return code


def answer(conn: socket.socket, fds: list[int], asked: dict[str, Any]) -> None:
    """In a process forked for one request: fork the worker, wait for it, say how it ended."""
    pid = os.fork()
    if pid == 0:
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        code = run(asked["module"], asked["args"], asked["env"], asked["cwd"])
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    for fd in fds:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        conn.sendall(f"signal:{os.WTERMSIG(status)}".encode())
    else:
        conn.sendall(f"exit:{os.waitstatus_to_exitcode(status)}".encode())
    conn.close()


def reap(*_signal: object) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def stop(*_signal: object) -> None:
    raise SystemExit(0)


def serve(path: str, modules: list[str]) -> None:
    for module in modules:
        importlib.import_module(module)
    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGTERM, stop)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    try:
        while True:
            conn, _ = listener.accept()
            _, fds, _, _ = socket.recv_fds(conn, 1, 3)
            asked = json.loads(received(conn))
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                listener.close()
                try:
                    answer(conn, fds, asked)
                finally:
                    os._exit(0)
            conn.close()
            for fd in fds:
                os.close(fd)
    finally:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        while True:  # wait for every worker still running (their CPU time counts)
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3:])
    else:
        request(sys.argv[1], sys.argv[2], sys.argv[3:])
