"""The floor: plain anyio doing the same logical work as the frameworks, and nothing more.

A conversation is a list of `(role, text, author)` tuples; an "agent" looks at the whole list,
sends its one token down a memory object stream to the consumer and appends its reply; a
fan-out is a task group with one cloned send end per agent; nesting is one async callback per
level that prefixes the item's path; a checkpoint is one JSON row written to SQLite (WAL) on a
worker thread.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from bench.suites.base import PROMPT, TOKEN, Checkpointed, Outcome, Run, now

Message = tuple[str, str, str]
Item = tuple[tuple[str, ...], str]
Emit = Callable[[Item], Awaitable[None]]

_BUFFER = 256


class _Model:
    """Counts what it is given; answers `TOKEN`."""

    def __init__(self) -> None:
        self.largest_input = 0
        self.stamp = 0.0

    def answer(self, conversation: list[Message]) -> str:
        if len(conversation) > self.largest_input:
            self.largest_input = len(conversation)
        self.stamp = now()
        return TOKEN


class FloorSuite:
    """Plain anyio; see the module docstring."""

    name = "floor"
    modules = ("anyio",)

    def __init__(self) -> None:
        self.model = _Model()

    def version(self) -> str:
        from importlib.metadata import version

        return f"anyio {version('anyio')}"

    def details(self) -> dict[str, str]:
        return {"program": "plain anyio: list appends, memory object streams, task groups"}

    async def _agent(self, agent_id: str, conversation: list[Message], emit: Emit) -> Message:
        text = self.model.answer(conversation)
        await emit(((agent_id,), text))
        return ("assistant", text, agent_id)

    async def _chain(self, agents: list[str], send: MemoryObjectSendStream[Item]) -> int:
        async with send:
            conversation: list[Message] = [("user", PROMPT, "")]
            for agent_id in agents:
                conversation.append(await self._agent(agent_id, conversation, send.send))
        return len(conversation) - 1

    async def _consume(
        self, produce: Callable[[MemoryObjectSendStream[Item]], Awaitable[int]]
    ) -> Outcome:
        send, receive = anyio.create_memory_object_stream[Item](_BUFFER)
        replies: list[int] = []

        async def producer() -> None:
            replies.append(await produce(send))

        tokens = 0
        async with anyio.create_task_group() as tg, receive:
            tg.start_soon(producer)
            async for _path, text in receive:
                if text == TOKEN:
                    tokens += 1
        return Outcome(tokens, replies[0])

    async def chain(self, agents: int) -> Run:
        ids = [f"agent{i}" for i in range(agents)]

        async def run() -> Outcome:
            return await self._consume(lambda send: self._chain(ids, send))

        return run

    async def fan_out(self, agents: int) -> Run:
        ids = [f"agent{i}" for i in range(agents)]

        async def branches(send: MemoryObjectSendStream[Item]) -> int:
            conversation: list[Message] = [("user", PROMPT, "")]
            results: dict[str, Message] = {}

            async def branch(agent_id: str, branch_send: MemoryObjectSendStream[Item]) -> None:
                async with branch_send:
                    results[agent_id] = await self._agent(agent_id, conversation, branch_send.send)

            async with send, anyio.create_task_group() as tg:
                for agent_id in ids:
                    tg.start_soon(branch, agent_id, send.clone())
            joined = [results[agent_id] for agent_id in ids]
            return len(joined)

        async def run() -> Outcome:
            return await self._consume(branches)

        return run

    async def sessions(self, sessions: int, agents: int) -> Run:
        one = await self.chain(agents)

        async def run() -> Outcome:
            outcomes: list[Outcome] = []

            async def session() -> None:
                outcomes.append(await one())

            async with anyio.create_task_group() as tg:
                for _ in range(sessions):
                    tg.start_soon(session)
            return Outcome(sum(o.tokens for o in outcomes), sum(o.replies for o in outcomes))

        return run

    async def nested(self, depth: int) -> Callable[[], Awaitable[float]]:
        levels = tuple(f"level{i}" for i in range(depth))

        def wrap(emit: Emit, level: str) -> Emit:
            async def forward(item: Item) -> None:
                await emit(((level, *item[0]), item[1]))

            return forward

        async def run() -> float:
            send, receive = anyio.create_memory_object_stream[Item](_BUFFER)

            async def producer() -> None:
                async with send:
                    emit: Emit = send.send
                    for level in levels:
                        emit = wrap(emit, level)
                    await self._agent("leaf", [("user", PROMPT, "")], emit)

            latency = 0.0
            async with anyio.create_task_group() as tg, receive:
                tg.start_soon(producer)
                async for _path, text in receive:
                    if text == TOKEN:
                        latency = now() - self.model.stamp
            return latency

        return run

    async def checkpointed(self, agents: int, directory: str) -> Checkpointed:
        import json
        import os
        import sqlite3

        path = os.path.join(directory, "floor.sqlite")
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, session TEXT, data TEXT)")
        ids = [f"agent{i}" for i in range(agents)]
        lock = anyio.Lock()

        def save(session_id: str, data: str) -> None:
            db.execute("INSERT INTO checkpoints (session, data) VALUES (?, ?)", (session_id, data))

        async def chain(send: MemoryObjectSendStream[Item], session_id: str | None) -> int:
            async with send:
                conversation: list[Message] = [("user", PROMPT, "")]
                for step, agent_id in enumerate(ids):
                    conversation.append(await self._agent(agent_id, conversation, send.send))
                    if session_id is not None:
                        data = json.dumps({"version": 1, "step": step, "messages": conversation})
                        async with lock:
                            await anyio.to_thread.run_sync(save, session_id, data)
            return len(conversation) - 1

        counter = iter(range(1 << 30))

        async def plain() -> Outcome:
            return await self._consume(lambda send: chain(send, None))

        async def with_store() -> Outcome:
            session_id = f"s{next(counter)}"
            return await self._consume(lambda send: chain(send, session_id))

        async def checkpoints() -> int:
            session_id = f"s{next(counter)}"
            await self._consume(lambda send: chain(send, session_id))
            row = db.execute("SELECT COUNT(*) FROM checkpoints WHERE session = ?", (session_id,))
            return int(row.fetchone()[0])

        return Checkpointed(plain, with_store, checkpoints)
