"""The executors a role workflow compiles to: opening a thread, the moderator, each role.

Between the nodes travels only the id of the thread's last event: the event log, not the
messages, holds the thread, so a run resumed from a checkpoint (or re-run after a crash)
reads the steps already written and never plays one twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from raf.adapters.role_context import playing_role
from raf.builders.roles.program import MODERATOR_NODE, Role, RoleProgram
from raf.engine.context import NodeContext
from raf.engine.executors import Executor, conversation_of
from raf.errors import AgentError, WorkflowError
from raf.stores.base import EventLog
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


class StartNode(_Node):
    """Opens a thread on the session's topic with the input messages."""

    kind: ClassVar[str] = "start"

    async def handle(self, message: Any, ctx: NodeContext) -> str:
        """Append the `__start__` event and hand the thread to the moderator."""
        messages = conversation_of(message, self.id)
        event = await self._program.start(self.log(ctx), ctx.session.id, messages)
        await ctx.send(event.id)
        return event.id


class ModeratorNode(_Node):
    """Asks the moderator which role acts next; at END, answers with the thread's outputs."""

    kind: ClassVar[str] = "moderator"

    def __init__(self, program: RoleProgram, log: EventLog, *, max_steps: int) -> None:
        super().__init__(MODERATOR_NODE, program, log)
        self._max_steps = max_steps

    def models(self) -> Sequence[type[BaseModel]]:
        """The roles' schemas: the value it yields is the last role's output."""
        return tuple(role.schema for role in self._program.roles.values())

    async def handle(self, message: Any, ctx: NodeContext) -> str | None:
        """Send the thread to the chosen role, or yield the response at END."""
        program = self._program
        topic = ctx.session.id
        chain = await program.chain(self.log(ctx), topic)
        role = await program.decide(chain, topic)
        if role is None:
            await ctx.yield_output(
                AgentResponse(messages=program.messages(chain), value=program.value(chain))
            )
            return None
        if len(chain) - 1 >= self._max_steps:
            raise WorkflowError(
                MODERATOR_NODE,
                message=(
                    f"role workflow {program.name!r} took {self._max_steps} steps on topic "
                    f"{topic!r} without the moderator returning END; raise with_max_steps() "
                    "or make the moderator end the thread"
                ),
            )
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
        log = self.log(ctx)
        topic = ctx.session.id
        chain = await program.chain(log, topic)
        if not chain or chain[-1].id != message:
            # The log moved past what the moderator saw: this step was written already (by a
            # run that stopped before its checkpoint). Never play it twice.
            await ctx.send(chain[-1].id if chain else message)
            return None
        thread = await program.thread(log, chain, topic)
        run = ctx.run_context.child(self._role.name)
        try:
            with playing_role(run):
                output = await program.play(self._role, thread)
        except AgentError as exc:
            exc.with_path(run.path)
            raise
        event = await program.record(log, topic, self._role, output)
        await ctx.send(event.id)
        return AgentResponse(messages=program.messages([chain[0], event]), value=output)
