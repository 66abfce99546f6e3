"""Runs their clients abort at random points leave a server with a SQLite store working.

A real uvicorn serves nested agents on a `SqliteCheckpointStore`; clients on several threads
start 500 runs and close each connection at a random point of its stream (before any event
at times). Afterwards every thread, and a new one, completes a normal run, and the server
stops promptly.

The app, and so its store, is made on the server's event loop (a store's locks belong to the
loop they are made on), and the store is the app's own default one, closed as the server stops.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from raf.agent import IAgent
from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.function_agent import FunctionAgent
from raf.react import ReactAgent
from raf.serve import create_app
from raf.serve.agui.app import DEFAULT_STORE_PATH
from raf.serve.threads import Threads
from raf.stores import SqliteCheckpointStore
from raf.testing.script import text
from raf.testing.scripted_provider import ScriptedProvider
from tests.serve.events import parse
from tests.serve.servers import running
from tests.serve.trees import run_input, user

pytestmark = pytest.mark.anyio

_RUNS = 500
_CLIENTS = 4
_THREADS_PER_CLIENT = 3
_LONGEST_STREAM = 40
"""Events a client reads at most before it aborts (a run streams about 20 to 40)."""
_DEADLINE_SECONDS = 60.0
_FREE_WITHIN_SECONDS = 10.0
"""An aborted run's thread is free again within this (its run ends, cancelled)."""


def _leaf(agent_id: str) -> FunctionAgent:
    return FunctionAgent(agent_id, lambda messages: f"{agent_id} saw {len(messages)}")


def _react(agent_id: str) -> ReactAgent:
    provider = ScriptedProvider(lambda messages: text(f"{agent_id} read {len(messages)}"))
    return ReactAgent(agent_id, provider, "Answer.")


def _agents() -> list[IAgent]:
    pair = SequentialBuilder(id="pair").add_agent(_leaf("a")).add_agent(_leaf("b"))
    inner = SequentialBuilder(id="inner").add_agent(_leaf("x")).add_agent(_react("reader"))
    fan = ConcurrentBuilder(id="fan").add_agent(inner.build().as_agent()).add_agent(_leaf("y"))
    return [pair.build().as_agent(), fan.build().as_agent(), _react("thinker")]


def _request(agent_id: str, body: dict[str, Any]) -> bytes:
    encoded = json.dumps(body).encode()
    return (
        f"POST /agents/{agent_id}/run HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
        + b"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        # A stream shorter than the client means to read ends at EOF, not at keep-alive's end.
        + b"Connection: close\r\n"
        + f"Content-Length: {len(encoded)}\r\n\r\n".encode()
        + encoded
    )


async def _aborted(port: int, request: bytes, events: int) -> bool:
    """Send `request`, read until `events` SSE events arrived (or the stream ended), leave;
    whether the client left before the stream's end (a run cut off)."""
    received = b""
    async with await anyio.connect_tcp("127.0.0.1", port) as client:
        await client.send(request)
        while received.count(b"\n\n") < events:
            try:
                received += await client.receive()
            except anyio.EndOfStream:
                return False
            if b"RUN_FINISHED" in received or b"RUN_ERROR" in received:
                return False
    return True


async def _completed(http: httpx2.AsyncClient, agent_id: str, thread_id: str, n: int) -> None:
    """A run on `thread_id` finishes, once the thread's last aborted run let it go."""
    deadline = anyio.current_time() + _FREE_WITHIN_SECONDS
    while True:
        body = run_input(thread_id, user(f"final-{n}", "and now in full"))
        response = await http.post(f"/agents/{agent_id}/run", json=body)
        events = parse(response.text)
        busy = events[-1]["type"] == "RUN_ERROR" and "busy" in events[-1]["message"]
        if not busy or anyio.current_time() > deadline:
            break
        await anyio.sleep(0.05)  # polls the thread's state; bounded by the deadline
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]


async def test_a_server_survives_hundreds_of_aborted_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where the app's default store goes
    agents = _agents()
    rng = random.Random(19)  # the abort points are the same every time
    plans = [
        [
            (agents[rng.randrange(len(agents))], rng.randrange(_THREADS_PER_CLIENT), events)
            for events in (rng.randrange(_LONGEST_STREAM) for _ in range(_RUNS // _CLIENTS))
        ]
        for _ in range(_CLIENTS)
    ]
    threads_used: set[tuple[str, str]] = set()
    cut: list[bool] = []
    fresh = {(agent.id, f"{agent.id}-fresh") for agent in agents}
    with running(lambda: create_app(agents)) as url:
        port = int(url.rsplit(":", 1)[1])
        with anyio.fail_after(_DEADLINE_SECONDS):

            async def client(index: int) -> None:
                for n, (agent, thread, events) in enumerate(plans[index]):
                    thread_id = f"{agent.id}-{index}-{thread}"
                    threads_used.add((agent.id, thread_id))
                    body = run_input(thread_id, user(f"u-{index}-{n}", f"turn {n}"))
                    cut.append(await _aborted(port, _request(agent.id, body), events))

            async with anyio.create_task_group() as group:
                for index in range(_CLIENTS):
                    group.start_soon(client, index)
            async with httpx2.AsyncClient(base_url=url, timeout=20) as http:
                for n, (agent_id, thread_id) in enumerate(sorted(threads_used | fresh)):
                    await _completed(http, agent_id, thread_id, n)
        stopping = time.perf_counter()
    stopped = time.perf_counter() - stopping
    assert not [t for t in threading.enumerate() if t.name == "uvicorn"], "the server hangs on"
    assert stopped < 5, f"the server took {stopped:.1f} s to stop"
    assert len(threads_used) > 10
    assert sum(cut) > _RUNS // 4, f"only {sum(cut)} of {_RUNS} runs were cut off mid-stream"
    async with SqliteCheckpointStore(tmp_path / DEFAULT_STORE_PATH) as store:
        for n, (_, thread_id) in enumerate(sorted(threads_used | fresh)):
            saved = await Threads(store).open(thread_id)
            assert f"final-{n}" in saved.seen, f"thread {thread_id!r} lost its last turn"
