"""Load: many sessions of one built workflow at once in one process, and many sessions over
real HTTP against a faulty model endpoint.

Memory is read from `/proc/self/status` (VmRSS) and open sockets from `/proc/self/fd`, so
these tests run on Linux only.
"""

from __future__ import annotations

import gc
import os
import random
import re
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import anyio
import pytest

from raf import (
    AgentResponse,
    ChatMessage,
    ConcurrentBuilder,
    FunctionAgent,
    IAgent,
    ProviderError,
    ReactAgent,
    RetryPolicy,
    SequentialBuilder,
    Session,
)
from raf.providers.base import LlmProvider
from raf.providers.openai import OpenAIProvider, create_client
from raf.testing import ScriptedOpenAIServer, ScriptedProvider, Turn, error, text

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)"),
]

_MARK = re.compile(r"session-\d+")


def marker(messages: list[ChatMessage]) -> str:
    """The session's marker, from the first user message of the conversation."""
    first = next(m.text for m in messages if m.role == "user")
    found = _MARK.search(first)
    assert found is not None, first
    return found.group()


def echo(agent_id: str) -> ScriptedProvider:
    """A model answering `<agent>:<marker>` for every call, whatever the conversation."""
    return ScriptedProvider(lambda messages: text(f"{agent_id}:{marker(messages)}"))


def depth_three() -> IAgent:
    """sequential [lead, concurrent [side, sequential [inner, tail]]]: leaves at depth 3."""
    inner = (
        SequentialBuilder(id="inner")
        .add_agent(ReactAgent("deep", echo("deep"), "Answer."))
        .add_agent(FunctionAgent("tail", lambda m: f"tail:{marker(m)}"))
        .build()
        .as_agent()
    )
    middle = (
        ConcurrentBuilder(id="middle")
        .add_agent(ReactAgent("side", echo("side"), "Answer."))
        .add_agent(inner)
        .build()
        .as_agent()
    )
    return (
        SequentialBuilder(id="outer")
        .add_agent(ReactAgent("lead", echo("lead"), "Answer."))
        .add_agent(middle)
        .build()
        .as_agent()
    )


def rss_kib() -> int:
    status = Path("/proc/self/status").read_text()
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    assert found is not None
    return int(found.group(1))


def open_sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with suppress(FileNotFoundError):  # the fd of the listing itself, closed already
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return count


async def run_sessions(agent: IAgent, count: int) -> None:
    """`count` sessions at once; each output holds its own marker and no other."""
    responses: dict[int, AgentResponse] = {}

    async def one(index: int) -> None:
        session = Session()
        responses[index] = await agent.run(f"task of session-{index}", session).collect()

    async with anyio.create_task_group() as group:
        for index in range(count):
            group.start_soon(one, index)
    for index, response in responses.items():
        texts = [m.text for m in response.messages]
        mine = f"session-{index}"
        assert texts == [f"lead:{mine}", f"side:{mine}", f"tail:{mine}"], texts
    assert len(responses) == count


async def test_a_thousand_sessions_at_once_keep_their_own_outputs_and_give_memory_back() -> None:
    agent = depth_three()
    with anyio.fail_after(60):
        await run_sessions(agent, 1000)  # warm-up: caches, allocator arenas, imports
        gc.collect()
        baseline = rss_kib()
        await run_sessions(agent, 1000)
        gc.collect()
        after = rss_kib()
    print(f"RSS after a warm-up of 1,000 sessions: {baseline} KiB; after 1,000 more: {after} KiB")
    assert after <= baseline * 1.10, f"RSS grew from {baseline} KiB to {after} KiB"


FAST_RETRIES = RetryPolicy(max_attempts=3, initial_delay=0.001, max_delay=0.004, jitter=False)


def faulty(seed: int) -> tuple[list[str], Callable[[list[ChatMessage]], Turn]]:
    """A script answering with random faults (429, 500, a reset connection) or the marker."""
    rng = random.Random(seed)
    faults: list[str] = []

    def answer(messages: list[ChatMessage]) -> Turn:
        roll = rng.random()
        if roll < 0.15:
            faults.append("429")
            return error(429, headers={"retry-after": "0"})
        if roll < 0.3:
            faults.append("500")
            return error(500)
        if roll < 0.4:
            faults.append("reset")
            return error(reset=True)
        return text(f"answer:{marker(messages)}")

    return faults, answer


async def test_two_hundred_sessions_over_http_with_faults_end_completed_or_failed() -> None:
    sockets = open_sockets()
    faults, script = faulty(seed=13)
    completed: list[int] = []
    failed: list[int] = []
    with anyio.fail_after(60):
        async with (
            ScriptedOpenAIServer(script) as server,
            create_client(server.base_url, "key") as client,
        ):
            provider: LlmProvider = OpenAIProvider(client, "scripted", retry=FAST_RETRIES)
            agent = ReactAgent("leaf", provider, "Answer.")

            async def one(index: int) -> None:
                try:
                    response = await agent.run(f"question of session-{index}", Session()).collect()
                except ProviderError:
                    failed.append(index)
                else:
                    assert response.text == f"answer:session-{index}"
                    completed.append(index)

            async with anyio.create_task_group() as group:
                for index in range(200):
                    group.start_soon(one, index)
    assert sorted(completed + failed) == list(range(200))
    assert completed
    assert {"429", "500", "reset"} <= set(faults)
    print(f"{len(completed)} completed, {len(failed)} failed after retries; {len(faults)} faults")
    gc.collect()
    assert open_sockets() == sockets
