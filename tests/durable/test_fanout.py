"""Fan-out over workers: the branches of a superstep are node steps on the run's DBOS queue.

Two worker processes on PostgreSQL, one node step at a time each; both branches wait at a
barrier in the test until the other arrived, so they run on two workers at once (which
worker ran which branch is in the effects file). Then the worker that started the run is
SIGKILLed inside its branch, after the barrier: the other worker resumes the run and the
dead worker's branch. The scripted model server counts requests: against the same run done
locally, no completed call is made again, completed node steps (the code of `plan`) do not
run again, and the response and session are the same.
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process, SocketAttribute, SocketStream, TaskGroup
from anyio.streams.text import TextReceiveStream

from raf import Session
from raf.messages import ChatMessage
from raf.providers.openai import OpenAIProvider, create_client
from raf.testing import ScriptedOpenAIServer, text, tool_calls
from raf.testing.script import Turn
from tests.durable.fanout_worker import BRANCHES, graph, prompt
from tests.forkserver import command

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
    forks: str,
    run_id: str,
    db: str,
    url: str,
    executor: str,
    mode: str,
    port: int,
    tmp: Path,
    *extra: str,
) -> Worker:
    argv = [*command(forks, "tests.durable.fanout_worker"), db, url, executor, run_id]
    argv += [mode, str(port), "--effects", str(tmp / "effects.txt"), *extra]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    return Worker(await anyio.open_process(argv, env=env, cwd=os.getcwd()))


def requests_of(server: ScriptedOpenAIServer) -> list[str]:
    """The requests, sorted, their tool call ids left out (the server numbers them in the
    order the branches ask, which differs from run to run)."""
    found = [json.dumps([m.model_dump() for m in r.messages]) for r in server.requests]
    return sorted(re.sub(r'"call_id": "[^"]*"', "", text) for text in found)


async def uninterrupted(server: ScriptedOpenAIServer, tmp: Path) -> tuple[Any, Any, list[str]]:
    """The run done locally in this process (its branches meet here): response, session state
    and model requests."""
    barrier = Barrier()
    async with anyio.create_task_group() as tg:
        port = await listen(tg, barrier)
        client = create_client(server.base_url, "test-key")
        agent = graph(OpenAIProvider(client, "scripted"), tmp / "local.txt", "local", port, False)
        session = Session(id="killed")
        response = await agent.run("Report, both of you.", session)
        await client.close()
        tg.cancel_scope.cancel()  # the barrier's listener
        state = json.loads(session.to_json())["state"]
        # `paths` is what `run()` adds from the stream it read, not the workflow's response.
        return response.model_dump(mode="json", exclude={"paths"}), state, requests_of(server)
    raise AssertionError("the barrier's listener ended before the local run")


async def test_branches_run_on_two_workers_and_a_dead_workers_branch_goes_on_elsewhere(
    forkserver: str, tmp_path: Path, postgres_db: str
) -> None:
    barrier = Barrier()
    async with ScriptedOpenAIServer(script) as server, anyio.create_task_group() as tg:
        response, state, local_requests = await uninterrupted(server, tmp_path)
        assert (
            response["messages"][-1]["contents"][0]["text"] == "north reporting | south reporting"
        )
        assert len(local_requests) == 4  # per branch: the call of `meet`, then the report
        server.requests.clear()
        port = await listen(tg, barrier)
        run_id = "team:killed:0"
        standing = await spawn(
            forkserver, run_id, postgres_db, server.base_url, "b", "stand", port, tmp_path
        )
        assert await standing.line() == {"ready": True}
        starter = await spawn(
            forkserver,
            run_id,
            postgres_db,
            server.base_url,
            "a",
            "start",
            port,
            tmp_path,
            "--die-in-meet",
        )
        assert await starter.process.wait() == -signal.SIGKILL
        lines = (tmp_path / "effects.txt").read_text().split()
        # Each worker took one branch (one node step at a time each), both at once.
        met = {line.split(":")[1]: line.split(":")[2] for line in lines if "meet" in line}
        assert sorted(met) == ["north", "south"] and sorted(met.values()) == ["a", "b"]
        await standing.tell("resume")
        said = (await standing.line())["said"]
        result = (await standing.line())["result"]
        # Both branches' messages reached the run's stream, the dead worker's branch's too.
        assert ["team/north", "north reporting"] in said
        assert ["team/south", "south reporting"] in said
        assert await standing.process.wait() == 0
        tg.cancel_scope.cancel()  # the barrier's listener
        assert {k: v for k, v in result["response"].items() if k != "paths"} == response
        kept = json.loads(result["session"])["state"]
        assert {k: v for k, v in kept.items() if "#durable" not in k} == state
        assert requests_of(server) == local_requests  # no completed model call was made again
    lines = (tmp_path / "effects.txt").read_text().split()
    assert lines.count("plan") == 1 and lines.count("merge") == 1  # completed node steps skipped
    died = next(line.split(":")[1] for line in lines if line.endswith(":a"))
    assert f"meet:{died}:b" in lines  # the dead worker's branch went on in the other
