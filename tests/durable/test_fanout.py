"""Fan-out over workers: the branches of a superstep are node steps on the run's DBOS queue.

Two worker processes on PostgreSQL, one node step at a time each; both branches wait at a
barrier in the test until the other arrived, so they run on two workers at once (which
worker ran which branch is in the effects file). Then the worker that started the run is
SIGKILLed inside its branch, after the barrier: the other worker resumes the run and the
dead worker's branch. The scripted model server counts requests: no completed call is made
again, and completed node steps (the code of `plan`) do not run again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process, SocketAttribute, SocketStream, TaskGroup
from anyio.streams.text import TextReceiveStream

from raf.messages import ChatMessage
from raf.testing import ScriptedOpenAIServer, text, tool_calls
from raf.testing.script import Turn
from tests.durable.fanout_worker import BRANCHES, prompt
from tests.durable.test_recovery import postgres_db as postgres_db  # the fixture

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the test drives processes; the workers are asyncio (DBOS is)


def script(messages: list[ChatMessage]) -> Turn:
    branch = next(b for b in BRANCHES if messages[0].text == prompt(b))
    if any(m.role == "tool" for m in messages):
        return text(f"{branch} reporting")
    return tool_calls(("meet", {"branch": branch}))


class Barrier:
    """Lets the branches on until both arrived (and any later arrival at once)."""

    def __init__(self) -> None:
        self.arrived: list[str] = []
        self.open = anyio.Event()

    async def serve(self, stream: SocketStream) -> None:
        async with stream:
            self.arrived.append((await stream.receive()).decode().strip())
            if len(set(self.arrived)) == len(BRANCHES):
                self.open.set()
            await self.open.wait()
            await stream.send(b"go\n")


async def listen(tg: TaskGroup, barrier: Barrier) -> int:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)

    async def serve() -> None:
        async with listener:
            await listener.serve(barrier.serve)

    tg.start_soon(serve)
    return listener.extra(SocketAttribute.local_port)


class Worker:
    def __init__(self, process: Process) -> None:
        self.process = process
        assert process.stdout is not None
        self.lines = TextReceiveStream(process.stdout)
        self.buffer = ""

    async def line(self) -> dict[str, Any]:
        while "\n" not in self.buffer:
            self.buffer += await self.lines.receive()
        line, _, self.buffer = self.buffer.partition("\n")
        return json.loads(line) if line.startswith("{") else await self.line()

    async def tell(self, command: str) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(f"{command}\n".encode())


async def spawn(
    run_id: str, db: str, url: str, executor: str, mode: str, port: int, tmp: Path, *extra: str
) -> Worker:
    argv = [sys.executable, "-m", "tests.durable.fanout_worker", db, url, executor, run_id]
    argv += [mode, str(port), "--effects", str(tmp / "effects.txt"), *extra]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    return Worker(await anyio.open_process(argv, env=env, cwd=os.getcwd()))


def requests_of(server: ScriptedOpenAIServer) -> list[str]:
    """The requests, sorted, their tool call ids left out (the server numbers them in the
    order the branches ask, which differs from run to run)."""
    found = [json.dumps([m.model_dump() for m in r.messages]) for r in server.requests]
    return sorted(re.sub(r'"call_id": "[^"]*"', "", text) for text in found)


async def fan_out(
    run_id: str, db: str, tmp: Path, *, die: bool
) -> tuple[dict[str, Any], list[str], str]:
    """Run `run_id` over two workers: its result, the model requests, the effects."""
    barrier = Barrier()
    async with ScriptedOpenAIServer(script) as server, anyio.create_task_group() as tg:
        port = await listen(tg, barrier)
        standing = await spawn(run_id, db, server.base_url, "b", "stand", port, tmp)
        assert await standing.line() == {"ready": True}
        starter = await spawn(
            run_id,
            db,
            server.base_url,
            "a",
            "start",
            port,
            tmp,
            *(["--die-in-meet"] if die else []),
        )
        if die:
            assert await starter.process.wait() == -signal.SIGKILL
            await standing.tell("resume")
            result = (await standing.line())["result"]
        else:
            assert await starter.line() == {"turn": "completed"}
            result = (await starter.line())["result"]
            await starter.process.wait()
            await standing.tell("stop")
        assert await standing.process.wait() == 0
        tg.cancel_scope.cancel()
    return result, requests_of(server), (tmp / "effects.txt").read_text()


async def test_branches_run_on_two_workers_and_a_dead_workers_branch_goes_on_elsewhere(
    tmp_path: Path, postgres_db: str
) -> None:
    (tmp_path / "base").mkdir()
    db = postgres_db
    base, base_requests, effects = await fan_out("team:base:0", db, tmp_path / "base", die=False)
    response = base["response"]
    assert response["status"] == "completed"
    assert response["messages"][-1]["contents"][0]["text"] == "north reporting | south reporting"
    met = {line.split(":")[1]: line.split(":")[2] for line in effects.split() if "meet" in line}
    assert sorted(met) == ["north", "south"] and sorted(met.values()) == ["a", "b"]
    assert len(base_requests) == 4  # per branch: the call of `meet`, then the report

    result, requests, effects = await fan_out("team:killed:0", db, tmp_path, die=True)
    assert result["response"] == response
    assert requests == base_requests  # no completed model call was made again
    lines = effects.split()
    assert lines.count("plan") == 1 and lines.count("merge") == 1  # completed node steps skipped
    died = next(line.split(":")[1] for line in lines if line.endswith(":a"))
    assert f"meet:{died}:b" in lines  # the dead worker's branch went on in the other
