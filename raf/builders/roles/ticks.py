"""`TickRunner`: a role workflow driven in ticks over an event log, one step per topic a tick.

Example:
    >>> import anyio
    >>> from pydantic import BaseModel
    >>> from raf.adapters import AdapterBinding
    >>> from raf.builders.roles import END, RoleWorkflowBuilder
    >>> from raf.stores import MemoryCheckpointStore
    >>> class Note(BaseModel):
    ...     text: str
    >>> def adapter(prompt, schema):
    ...     async def role(thread):
    ...         return schema(text=f"{prompt} {len(thread.steps)}")
    ...     return role
    >>> def moderator(chain, topic_id):
    ...     return "writer" if len(chain) < 3 else END
    >>> builder = RoleWorkflowBuilder("notes").add_role("writer", "note", Note)
    >>> log = MemoryCheckpointStore()
    >>> runner = builder.with_moderator(moderator).build_tick_runner(AdapterBinding(adapter), log)
    >>> async def main():
    ...     await runner.start("topic-1", "Take notes.")
    ...     first, second, third = await runner.tick(), await runner.tick(), await runner.tick()
    ...     return [e.meta for e in first + second], third, await runner.tick()
    >>> anyio.run(main)
    ([{'text': 'note 0'}, {'text': 'note 1'}], [], [])
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from raf._streaming import single_exceptions
from raf.builders.roles.events import RoleEvent
from raf.builders.roles.program import RoleProgram
from raf.messages import ChatMessage
from raf.stores.base import EventLog

__all__ = ["TickRunner"]


class TickRunner:
    """Advances every thread of a role workflow in an event log by one step per `tick()`.

    `tick()` reads the log, rebuilds each topic's thread, and runs the moderator only for the
    topics whose thread changed since the runner last looked; for each it plays the chosen
    role and appends its event with its content in one transaction. A tick on an unchanged
    log does nothing; a process that dies mid-tick loses no step and repeats none (a step
    whose event was not written is played again by the next tick, once).

    One runner per log: two runners ticking the same topics at once could both play a step.

    Args:
        program: the role workflow (from `RoleWorkflowBuilder.build_tick_runner`).
        log: the event log the threads live in.
    """

    def __init__(self, program: RoleProgram, log: EventLog) -> None:
        self._program = program
        self._log = log
        self._seen: dict[str, str] = {}

    @property
    def log(self) -> EventLog:
        """The event log the threads live in."""
        return self._log

    async def start(
        self, topic_id: str, messages: str | ChatMessage | Sequence[ChatMessage]
    ) -> RoleEvent:
        """Open a thread on `topic_id` with `messages` (its `__start__` event)."""
        if isinstance(messages, str):
            opening = [ChatMessage.user(messages)]
        elif isinstance(messages, ChatMessage):
            opening = [messages]
        else:
            opening = list(messages)
        return await self._program.start(self._log, topic_id, opening)

    async def tick(self) -> list[RoleEvent]:
        """One step on every topic whose thread changed; the events written, by topic.

        Raises:
            WorkflowError: when a moderator raises or names an unknown role (after the other
                topics' steps of this tick are cancelled).
            AgentError: when a role fails.
        """
        program = self._program
        threads = program.threads(await self._log.events())
        written: dict[str, RoleEvent] = {}

        async def step(topic: str, chain: list[RoleEvent]) -> None:
            role = await program.decide(chain, topic)
            if role is not None:
                thread = await program.thread(self._log, chain, topic)
                output = await program.play(role, thread)
                written[topic] = await program.record(self._log, topic, role, output)
            self._seen[topic] = chain[-1].id

        with single_exceptions():
            async with anyio.create_task_group() as tg:
                for topic, chain in threads.items():
                    if self._seen.get(topic) != chain[-1].id:
                        tg.start_soon(step, topic, chain)
        return [written[topic] for topic in threads if topic in written]
