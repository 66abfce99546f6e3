"""The floor's handoff and group-chat workloads (scenarios H and I): plain anyio.

Handoff: each agent replies, then either records a handoff (an assistant call and a tool
result appended to the conversation) and passes control on, or ends the turn. Group chat: a
round-robin index picks the speaker; the chat ends after the rounds.
"""

from __future__ import annotations

from anyio.streams.memory import MemoryObjectSendStream

from bench.patterns import PatternRun
from bench.suites.base import PROMPT
from bench.suites.floor import FloorSuite, Item, Message


async def handoff(suite: FloorSuite, agents: int) -> PatternRun:
    ids = [f"agent{i}" for i in range(agents)]
    routes = dict(zip(ids, [*ids[1:], None], strict=True))

    async def turn(send: MemoryObjectSendStream[Item]) -> int:
        async with send:
            conversation: list[Message] = [("user", PROMPT, "")]
            active: str | None = ids[0]
            replies = 0
            while active is not None:
                conversation.append(await suite._agent(active, conversation, send.send))  # pyright: ignore[reportPrivateUsage]
                replies += 1
                target = routes[active]
                if target is not None:
                    conversation.append(("tool", f"handoff_to_{target}", active))
                active = target
        return replies

    return PatternRun(lambda: suite._consume(turn), lambda: suite.model.largest_input)  # pyright: ignore[reportPrivateUsage]


async def group_chat(suite: FloorSuite, members: int, rounds: int) -> PatternRun:
    ids = [f"member{i}" for i in range(members)]

    async def chat(send: MemoryObjectSendStream[Item]) -> int:
        async with send:
            transcript: list[Message] = [("user", PROMPT, "")]
            for index in range(rounds):
                speaker = ids[index % members]
                transcript.append(await suite._agent(speaker, transcript, send.send))  # pyright: ignore[reportPrivateUsage]
        return rounds

    return PatternRun(lambda: suite._consume(chat), lambda: suite.model.largest_input)  # pyright: ignore[reportPrivateUsage]
