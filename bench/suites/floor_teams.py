"""The floor's Magentic and vote workloads (scenarios J and K): plain anyio.

Magentic: a loop in which a "manager" (a plain function over the transcript: who answered how
often) picks the next speaker until every round is done, then the answer is sent. Vote: a
task group with one cloned send end per voter, each in its own cancel scope, then a tally.
"""

from __future__ import annotations

from collections import Counter

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from bench.patterns import PatternRun
from bench.suites.base import PROMPT, TOKEN
from bench.suites.floor import FloorSuite, Item, Message


async def magentic(suite: FloorSuite, members: int, rounds: int) -> PatternRun:
    ids = [f"member{i}" for i in range(members)]

    async def task(send: MemoryObjectSendStream[Item]) -> int:
        async with send:
            transcript: list[Message] = [("user", PROMPT, "")]
            answered = 0
            while answered < rounds:
                speaker = ids[answered % members]
                transcript.append(("user", "go on", "team"))
                transcript.append(await suite._agent(speaker, transcript, send.send))  # pyright: ignore[reportPrivateUsage]
                answered += 1
            await send.send((("team",), TOKEN))
        return 1

    return PatternRun(lambda: suite._consume(task), lambda: suite.model.largest_input)  # pyright: ignore[reportPrivateUsage]


async def vote(suite: FloorSuite, voters: int) -> PatternRun:
    ids = [f"voter{i}" for i in range(voters)]

    async def poll(send: MemoryObjectSendStream[Item]) -> int:
        question: list[Message] = [("user", PROMPT, "")]
        ballots: dict[str, str] = {}

        async def voter(agent_id: str, voter_send: MemoryObjectSendStream[Item]) -> None:
            with anyio.CancelScope():
                async with voter_send:
                    reply = await suite._agent(agent_id, question, voter_send.send)  # pyright: ignore[reportPrivateUsage]
                    ballots[agent_id] = reply[1].strip()

        async with send:
            async with anyio.create_task_group() as tg:
                for agent_id in ids:
                    tg.start_soon(voter, agent_id, send.clone())
            tally = Counter(ballots[agent_id] for agent_id in ids)
            winner = tally.most_common(1)[0][0] if len(tally) == 1 else ""
            await send.send((("panel",), winner))
        return 1

    return PatternRun(lambda: suite._consume(poll), lambda: suite.model.largest_input)  # pyright: ignore[reportPrivateUsage]


__all__ = ["magentic", "vote"]
