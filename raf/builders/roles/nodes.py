"""The executors a role workflow compiles to: opening a thread, the moderator, each role.

Between the nodes travels only the id of the thread's last event: the event log, not the
messages, holds the thread, so a run resumed from a checkpoint (or re-run after a crash)
reads the steps already written and never plays one twice.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from typing import Any, ClassVar

from pydantic import BaseModel

from raf.adapters.role_context import playing_role
from raf.builders.roles.program import MODERATOR_NODE, Role, RoleProgram
from raf.builders.roles.program import message as message_of
from raf.engine.context import NodeContext
from raf.engine.executors import Executor, conversation_of
from raf.errors import AgentError, AppendConflict
from raf.stores.base import EventLog, SessionLocking
from raf.updates import AgentResponse

__all__ = ["MODERATOR_NODE", "ModeratorNode", "RoleNode", "StartNode"]


class _Node(Executor):
    """What the role workflow's nodes share: the program and the fallback log."""

    def __init__(self, id: str, program: RoleProgram, log: EventLog) -> None:
        super().__init__(id)
        self._program = program
        self._log = log

    def log(self, ctx: NodeContext) -> EventLog:
        """The session store when it is an event log, else the workflow's own log."""
        store = ctx.session.store
        return store if isinstance(store, EventLog) else self._log

    @asynccontextmanager
    async def topic(self, ctx: NodeContext) -> AsyncGenerator[EventLog]:
        """The log, with the topic held in it while the block runs.

        A session store is held already (by the top-level run); another log that locks
        sessions is locked on the topic here, so a tick runner on it and this run take turns.
        """
        log = self.log(ctx)
        if isinstance(ctx.session.store, EventLog) or not isinstance(log, SessionLocking):
            yield log
            return
        lock = await log.lock_session(ctx.session.id, wait=True)
        try:
            yield log
        finally:
            if lock is not None:
                await lock.release()


class StartNode(_Node):
    """Opens a thread on the session's topic with the input messages."""

    kind: ClassVar[str] = "start"

    async def handle(self, message: Any, ctx: NodeContext) -> str:
        """Append the `__start__` event and hand the thread to the moderator."""
        messages = conversation_of(message, self.id)
        async with self.topic(ctx) as log:
            event = await self._program.start(log, ctx.session.id, messages)
        await ctx.send(event.id)
        return event.id


class ModeratorNode(_Node):
    """Asks the moderator which role acts next; at END, answers with the thread's outputs."""

    kind: ClassVar[str] = "moderator"

    def __init__(self, program: RoleProgram, log: EventLog) -> None:
        super().__init__(MODERATOR_NODE, program, log)

    def models(self) -> Sequence[type[BaseModel]]:
        """The roles' schemas: the value it yields is the last role's output."""
        return tuple(role.schema for role in self._program.roles.values())

    async def handle(self, message: Any, ctx: NodeContext) -> str | None:
        """Send the thread to the chosen role, or yield the response at END."""
        program = self._program
        topic = ctx.session.id
        log = self.log(ctx)
        chain = (await program.read(log, topic)).chain
        role = await program.decide(chain, topic)
        if role is None:
            await ctx.yield_output(
                AgentResponse(
                    messages=await program.messages(log, chain),
                    value=await program.value(log, chain),
                )
            )
            return None
        program.check_steps(chain, topic)
        await ctx.send(chain[-1].id, to=role.name)
        return role.name


class RoleNode(_Node):
    """Plays one role on the thread and appends its step, streaming on the role's path."""

    kind: ClassVar[str] = "role"

    def __init__(self, role: Role, program: RoleProgram, log: EventLog) -> None:
        super().__init__(role.name, program, log)
        self._role = role

    def models(self) -> Sequence[type[BaseModel]]:
        """The role's schema: its output is a value of it."""
        return (self._role.schema,)

    async def handle(self, message: Any, ctx: NodeContext) -> AgentResponse | None:
        """Play the role unless its step is already in the log; then back to the moderator."""
        program = self._program
        topic = ctx.session.id
        async with self.topic(ctx) as log:
            snapshot = await program.read(log, topic)
            chain = snapshot.chain
            if not chain or chain[-1].id != message:
                # The log moved past what the moderator saw: this step was written already (by
                # a run that stopped before its checkpoint). Never play it twice.
                await ctx.send(chain[-1].id if chain else message)
                return None
            thread = await program.thread(log, chain, topic)
            run = ctx.run_context.child(self._role.name)
            try:
                with playing_role(run):
                    played = await program.play(self._role, thread)
            except AgentError as exc:
                exc.with_path(run.path)
                raise
            try:
                event = await program.record(log, topic, self._role, played, snapshot.last_id)
            except AppendConflict:
                # Another writer appended to the topic meanwhile: its step stands, ours is
                # dropped, and the moderator decides again from what the log holds.
                fresh = (await program.read(log, topic)).chain
                await ctx.send(fresh[-1].id if fresh else message)
                return None
        await ctx.send(event.id)
        return AgentResponse(
            messages=[message_of(self._role.name, played.content)], value=played.output
        )
