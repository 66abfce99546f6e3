"""The requester of `tests.forkserver`, which imports only what it needs (a few ms a start):

    python -I -S tests/forkrequest.py SOCKET -m MODULE ARG...
    python -I -S tests/forkrequest.py SOCKET PATH ARG...

It has the server on the Unix socket SOCKET fork a worker that runs MODULE as `python -m` would,
or the script at PATH, on this process's stdin, stdout, stderr, environment and working
directory, passes on the signals it can catch (SIGUSR2: SIGKILL the worker), and ends as the
worker ended. A request is a 4-byte length, then its `marshal`ed dict.
"""

import marshal
import os
import signal
import socket
import sys

PASSED_ON = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1)
KILL = signal.SIGUSR2
"""Sent to a requester: its worker is SIGKILLed (and the requester ends killed by SIGKILL)."""


def request(server: str, target: str, args: list[str]) -> None:
    """Have `server` run `target` (`-m MODULE` or a script's path) with `args` on this
    process's stdio; end as it ended."""
    with socket.socket(socket.AF_UNIX) as conn:

        def pass_on(signum: int, _frame: object) -> None:
            try:
                conn.sendall(f"{signal.SIGKILL if signum == KILL else signum}\n".encode())
            except OSError:  # not connected yet, or the server is gone
                os._exit(128 + signum)

        for signum in (*PASSED_ON, KILL):
            signal.signal(signum, pass_on)
        conn.connect(server)
        if target == "-m":
            asked = {"module": args[0], "args": args[1:]}
        else:
            asked = {"path": os.path.abspath(target), "args": args}
        asked |= {"env": dict(os.environ), "cwd": os.getcwd()}
        payload = marshal.dumps(asked)
        socket.send_fds(conn, [len(payload).to_bytes(4, "big") + payload], [0, 1, 2])
        status = b"".join(iter(lambda: conn.recv(64), b"")).decode()
    for signum in (*PASSED_ON, KILL):
        signal.signal(signum, signal.SIG_DFL)
    kind, _, value = status.partition(":")
    if kind == "signal":
        os.kill(os.getpid(), int(value))
        sys.exit(128 + int(value))  # a signal whose default is to go on
    sys.exit(int(value) if kind == "exit" else 1)


if __name__ == "__main__":
    request(sys.argv[1], sys.argv[2], sys.argv[3:])
