"""Several worker processes on one database: a session is single-writer among them.

Each worker is a real process (`session_worker.py`) running a turn on the same session id of a
shared SQLite file or PostgreSQL schema. While one holds the session, another's run gets
`SessionBusy`, or with `on_busy="wait"` runs only after the first one's turn ended; a worker
killed with SIGKILL lets the session go. The order of turns is read from a log the workers
append to, never from timing. The workers are forked from a server that made their imports
already (`tests.forkserver`).
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from raf import FunctionAgent, RunOptions, Session, SessionBusy
from tests.forkserver import command, kill
from tests.reliability.processes import open_store, read_line

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SESSION = "shared-1"


def worker(server: str, spec: str, name: str, mode: str, log: Path, backend: str) -> list[str]:
    """The command of a worker forked from `server`."""
    module = command(server, "tests.reliability.session_worker")
    return [*module, spec, SESSION, name, mode, str(log), backend]


async def start(server: str, spec: str, name: str, mode: str, log: Path, backend: str) -> Process:
    """A worker process, its stdin and stdout piped."""
    return await anyio.open_process(
        worker(server, spec, name, mode, log, backend),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )


@asynccontextmanager
async def holding(server: str, spec: str, log: Path, backend: str) -> AsyncIterator[Process]:
    """A worker that holds the session until a line is written to its stdin."""
    async with await start(server, spec, "A", "hold", log, backend) as process:
        assert await read_line(process) == "HOLDING"
        yield process


def turns(log: Path) -> list[str]:
    return log.read_text().splitlines()


async def test_a_second_worker_is_refused_or_queued_while_the_first_holds_the_session(
    forkserver: str, store_spec: str, tmp_path: Path, anyio_backend: str
) -> None:
    log = tmp_path / "turns.log"
    with anyio.fail_after(60):
        async with holding(forkserver, store_spec, log, anyio_backend) as first:
            refused = await anyio.run_process(
                worker(forkserver, store_spec, "B", "reject", log, anyio_backend),
                cwd=ROOT,
                check=False,
            )
            assert refused.returncode == 3, refused.stderr.decode()
            assert refused.stdout.decode().split() == ["BUSY", SESSION]
            # This process is a worker too: refused as well.
            async with open_store(store_spec) as store:
                agent = FunctionAgent("worker", lambda messages: "never")
                with pytest.raises(SessionBusy):
                    await agent.run("x", Session(id=SESSION, store=store)).collect()
            async with await start(
                forkserver, store_spec, "C", "wait", log, anyio_backend
            ) as queued:
                assert await read_line(queued) == "ASKING"
                assert first.stdin is not None
                await first.stdin.send(b"go\n")
                assert await read_line(first) == "DONE"
                assert await read_line(queued) == "DONE"
                assert await queued.wait() == 0
            assert await first.wait() == 0
    assert turns(log) == ["A:start", "A:end", "C:start", "C:end"]


async def test_a_killed_worker_lets_the_session_go(
    forkserver: str, store_spec: str, tmp_path: Path, anyio_backend: str
) -> None:
    log = tmp_path / "turns.log"
    with anyio.fail_after(60):
        async with (
            holding(forkserver, store_spec, log, anyio_backend) as first,
            open_store(store_spec) as store,
        ):
            agent = FunctionAgent("worker", lambda messages: "mine")
            with pytest.raises(SessionBusy):
                await agent.run("x", Session(id=SESSION, store=store)).collect()
            kill(first)  # its requester ends once the worker is gone
            assert await first.wait() == -signal.SIGKILL
            # The lock goes with the process (PostgreSQL ends its connection's backend as
            # soon as it sees the connection close): a waiting run gets the session.
            session = Session(id=SESSION, store=store)
            response = await agent.run("x", session, RunOptions(on_busy="wait")).collect()
            assert response.text == "mine"
    assert turns(log) == ["A:start"]
