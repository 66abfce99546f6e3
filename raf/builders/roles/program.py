"""The moderated role workflow's steps, shared by its graph executors and its tick runner.

A thread (topic) is the chain of events from its latest `{name}.__start__` event on. A step
reads the chain, asks the moderator which role acts next, runs that role on the thread, and
appends the role's event with its content in one transaction (content first, event last), so
a crash leaves the step done or not done, never half.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pydantic_core
from pydantic import BaseModel, TypeAdapter, ValidationError
from ulid import ULID

from raf.adapters.thread import RoleFn, Step, ThreadContext
from raf.builders.roles.events import START_ROLE, End, Moderator, RoleEvent
from raf.errors import SchemaValidationError, WorkflowError
from raf.messages import ChatMessage
from raf.stores._records import content_digest
from raf.stores.base import EventLog, StoredEvent
from raf.tools.arguments import describe_validation_error

__all__ = ["MODERATOR_NODE", "Role", "RoleProgram"]

MODERATOR_NODE = "__moderator__"
"""The node id of the moderator in the compiled graph."""

_MESSAGES: TypeAdapter[list[ChatMessage]] = TypeAdapter(list[ChatMessage])


@dataclass(frozen=True, slots=True)
class Role:
    """One role: its prompt, output schema, and the function the binding made of them."""

    name: str
    prompt: str
    schema: type[BaseModel]
    fn: RoleFn[BaseModel]


@dataclass(frozen=True, slots=True)
class RoleProgram:
    """A built role workflow's roles and moderator; holds no run state."""

    name: str
    roles: Mapping[str, Role]
    moderator: Moderator
    code_rev: str | None = None

    def kind(self, role: str) -> str:
        """The event kind of `role`'s steps."""
        return f"{self.name}.{role}"

    async def start(
        self, log: EventLog, topic_id: str, messages: Sequence[ChatMessage]
    ) -> RoleEvent:
        """Open a thread on `topic_id` with `messages`: append its `__start__` event.

        When the topic's latest thread is this very opening, with no step yet (a run that
        stopped before its checkpoint opened it), that thread is the one returned: a
        re-run opens no second, empty thread.
        """
        content = _MESSAGES.dump_json(list(messages))
        chain = await self.chain(log, topic_id)
        if len(chain) == 1 and chain[0].hash == content_digest(content):
            return chain[0]
        return await self._append(log, topic_id, START_ROLE, {}, content)

    async def chain(self, log: EventLog, topic_id: str) -> list[RoleEvent]:
        """The events of the topic's latest thread of this workflow, oldest first."""
        return self.threads(await log.events(key=topic_id)).get(topic_id, [])

    def threads(self, events: Sequence[StoredEvent]) -> dict[str, list[RoleEvent]]:
        """Each topic's latest thread of this workflow among `events` (in log order)."""
        prefix = f"{self.name}."
        opening = self.kind(START_ROLE)
        found: dict[str, list[RoleEvent]] = {}
        for event in events:
            if not event.kind.startswith(prefix) or "." in event.kind[len(prefix) :]:
                continue
            if event.kind == opening:
                found[event.key] = []
            elif event.key not in found:
                continue  # a step without an opening: not a thread of this workflow
            found[event.key].append(RoleEvent.model_validate(event.model_dump()))
        return found

    async def decide(self, chain: list[RoleEvent], topic_id: str) -> Role | None:
        """The role that acts next on the thread, or None when the moderator says END.

        Raises:
            WorkflowError: naming the workflow and the last role, when the moderator raises
                or names a role this workflow does not have.
        """
        last = chain[-1].role if chain else START_ROLE
        try:
            choice: Any = self.moderator(list(chain), topic_id)
            if inspect.isawaitable(choice):
                choice = await choice
        except Exception as exc:
            raise WorkflowError(
                MODERATOR_NODE,
                exc,
                message=(
                    f"role workflow {self.name!r}: the moderator raised "
                    f"{type(exc).__name__}: {exc} on topic {topic_id!r} after role {last!r}; "
                    "fix the moderator (it gets the chain and the topic id, and returns a role "
                    "name or END)"
                ),
            ) from exc
        if isinstance(choice, End):
            return None
        role = self.roles.get(choice) if isinstance(choice, str) else None
        if role is None:
            names = ", ".join(repr(name) for name in self.roles)
            raise WorkflowError(
                MODERATOR_NODE,
                message=(
                    f"role workflow {self.name!r}: the moderator chose {choice!r} after role "
                    f"{last!r} on topic {topic_id!r}, which is not a role of it; return one of "
                    f"{names}, or END"
                ),
            )
        return role

    async def thread(self, log: EventLog, chain: list[RoleEvent], topic_id: str) -> ThreadContext:
        """What a role sees: the thread's opening messages and the steps so far."""
        opening = chain[0]
        start: list[ChatMessage] = []
        if opening.hash is not None:
            start = _MESSAGES.validate_json(await log.get(opening.hash))
        steps = [Step(role=e.role, value=e.meta, at=e.occurred_at) for e in chain[1:]]
        return ThreadContext(thread_id=topic_id, depth=len(steps), start=start, steps=steps)

    async def play(self, role: Role, thread: ThreadContext) -> BaseModel:
        """Run `role` on `thread` and return its output, validated against its schema.

        Raises:
            SchemaValidationError: naming the workflow and role, when the output does not
                validate.
        """
        value: Any = await role.fn(thread)
        if isinstance(value, role.schema):
            return value
        try:
            return role.schema.model_validate(value)
        except ValidationError as exc:
            raise SchemaValidationError(
                f"role {role.name!r} of role workflow {self.name!r} returned output that is not "
                f"a {role.schema.__name__}: {describe_validation_error(exc)}; its adapter must "
                "return the role's schema"
            ) from exc

    async def record(
        self, log: EventLog, topic_id: str, role: Role, output: BaseModel
    ) -> RoleEvent:
        """Append `role`'s step with `output` as its content and meta."""
        meta = output.model_dump(mode="json")
        return await self._append(log, topic_id, role.name, meta, pydantic_core.to_json(meta))

    def value(self, chain: list[RoleEvent]) -> BaseModel | None:
        """The last step's output as its role's model, if the thread has a step."""
        if len(chain) < 2:
            return None
        last = chain[-1]
        role = self.roles.get(last.role)
        return None if role is None else role.schema.model_validate(last.meta)

    def messages(self, chain: list[RoleEvent]) -> list[ChatMessage]:
        """One assistant message per step, authored by its role, its text the output JSON."""
        return [
            ChatMessage.assistant(pydantic_core.to_json(e.meta).decode(), author=e.role)
            for e in chain[1:]
        ]

    async def _append(
        self, log: EventLog, topic_id: str, role: str, meta: dict[str, Any], content: bytes
    ) -> RoleEvent:
        event = RoleEvent(
            id=str(ULID()),
            occurred_at=datetime.now(UTC),
            kind=self.kind(role),
            key=topic_id,
            hash=content_digest(content),
            meta=meta,
            code_rev=self.code_rev,
        )
        await log.append(event, content)
        return event
