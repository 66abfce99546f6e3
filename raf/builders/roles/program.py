"""The moderated role workflow's steps, shared by its graph executors and its tick runner.

A thread (topic) is the chain of events from its latest `{name}.__start__` event on. A step
reads the chain, asks the moderator which role acts next, runs that role on the thread, and
appends the role's event with its content in one transaction (content first, event last), so
a crash leaves the step done or not done, never half. Every append names the key's last event
as the writer read it: a writer that lost the race gets `AppendConflict` and writes nothing.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pydantic_core
from pydantic import BaseModel, TypeAdapter, ValidationError

from raf.adapters.thread import RoleFn, RoleResult, Step, ThreadContext
from raf.builders.roles.events import START_ROLE, End, Moderator, RoleEvent
from raf.errors import AppendConflict, SchemaValidationError, WorkflowError
from raf.messages import ChatMessage
from raf.stores._records import content_digest, damaged_event
from raf.stores.base import EventLog, Follows, StoredEvent
from raf.stores.ids import new_id
from raf.tools.arguments import describe_validation_error

__all__ = [
    "MAX_META_BYTES",
    "MODERATOR_NODE",
    "Played",
    "Role",
    "RoleProgram",
    "Snapshot",
    "message",
    "signals",
]

MODERATOR_NODE = "__moderator__"
"""The node id of the moderator in the compiled graph."""

MAX_META_BYTES = 16_384
"""The most JSON a step's `meta` may hold: it is for the moderator's small signals."""

_SIGNAL_TEXT = 200  # strings up to this long count as signals when a typed role is split
_START_ATTEMPTS = 3  # opening a thread races other writers at most this often

_MESSAGES: TypeAdapter[list[ChatMessage]] = TypeAdapter(list[ChatMessage])


@dataclass(frozen=True, slots=True)
class Role:
    """One role: its prompt, output schema, and the function the binding made of them."""

    name: str
    prompt: str
    schema: type[BaseModel]
    fn: RoleFn[BaseModel | RoleResult]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A topic as a writer read it: its latest thread, and the key's last event id (what an
    append of the next step follows)."""

    chain: list[RoleEvent]
    last_id: str | None


@dataclass(frozen=True, slots=True)
class Played:
    """A role's answer, ready for the log: the validated output, its JSON, its signals."""

    output: BaseModel
    content: bytes
    meta: dict[str, Any]


def signals(output: BaseModel) -> dict[str, Any]:
    """A typed output's default `meta`: its scalar fields (booleans, numbers, None, strings
    of at most 200 characters)."""
    return {
        name: value
        for name, value in output.model_dump(mode="json").items()
        if value is None
        or isinstance(value, bool | int | float)
        or (isinstance(value, str) and len(value) <= _SIGNAL_TEXT)
    }


@dataclass(frozen=True, slots=True)
class RoleProgram:
    """A built role workflow's roles and moderator; holds no run state."""

    name: str
    roles: Mapping[str, Role]
    moderator: Moderator
    code_rev: str | None = None
    max_steps: int = 32

    def kind(self, role: str) -> str:
        """The event kind of `role`'s steps."""
        return f"{self.name}.{role}"

    def owns(self, kind: str) -> bool:
        """Whether `kind` is an event kind of this workflow."""
        prefix = f"{self.name}."
        return kind.startswith(prefix) and "." not in kind[len(prefix) :]

    async def start(
        self, log: EventLog, topic_id: str, messages: Sequence[ChatMessage]
    ) -> RoleEvent:
        """Open a thread on `topic_id` with `messages`: append its `__start__` event.

        When the topic's latest thread is this very opening, with no step yet (a run that
        stopped before its checkpoint opened it), that thread is the one returned: a
        re-run opens no second, empty thread.

        Raises:
            AppendConflict: when other writers kept appending to the topic meanwhile.
        """
        content = _MESSAGES.dump_json(list(messages))
        conflict: AppendConflict | None = None
        for _ in range(_START_ATTEMPTS):
            snapshot = await self.read(log, topic_id)
            chain = snapshot.chain
            if len(chain) == 1 and chain[0].hash == content_digest(content):
                return chain[0]
            try:
                return await self._append(log, topic_id, START_ROLE, {}, content, snapshot.last_id)
            except AppendConflict as exc:
                conflict = exc
        assert conflict is not None
        raise conflict

    async def read(self, log: EventLog, topic_id: str) -> Snapshot:
        """The topic's latest thread of this workflow and the key's last event id.

        Raises:
            CheckpointError: naming the event, when a row of the topic is damaged.
        """
        events = await log.events(key=topic_id)
        last = events[-1].id if events else None
        return Snapshot(self.threads(events).get(topic_id, []), last)

    def threads(self, events: Sequence[StoredEvent]) -> dict[str, list[RoleEvent]]:
        """Each topic's latest thread of this workflow among `events` (in log order)."""
        opening = self.kind(START_ROLE)
        found: dict[str, list[RoleEvent]] = {}
        for event in events:
            if not self.owns(event.kind):
                continue
            if event.kind == opening:
                found[event.key] = []
            elif event.key not in found:
                continue  # a step without an opening: not a thread of this workflow
            found[event.key].append(RoleEvent.model_validate(event, from_attributes=True))
        return found

    async def decide(self, chain: list[RoleEvent], topic_id: str) -> Role | None:
        """The role that acts next on the thread, or None when the moderator says END.

        Raises:
            WorkflowError: naming the workflow and the last role, when the moderator raises,
                names a role this workflow does not have.
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

    def check_steps(self, chain: list[RoleEvent], topic_id: str) -> None:
        """Refuse another step on a thread that has taken `max_steps` already.

        Raises:
            WorkflowError: naming the workflow, topic and limit.
        """
        if len(chain) - 1 >= self.max_steps:
            raise WorkflowError(
                MODERATOR_NODE,
                message=(
                    f"role workflow {self.name!r} took {self.max_steps} steps on topic "
                    f"{topic_id!r} without the moderator returning END; raise with_max_steps() "
                    "or make the moderator end the thread"
                ),
            )

    async def thread(self, log: EventLog, chain: list[RoleEvent], topic_id: str) -> ThreadContext:
        """What a role sees: the thread's opening messages and the steps so far.

        Raises:
            CheckpointError: naming the event whose content is missing or not what raf wrote.
        """
        opening = chain[0]
        data = await _content(log, opening)
        try:
            start = _MESSAGES.validate_json(data)
        except ValidationError as exc:
            problem = describe_validation_error(exc)
            raise damaged_event(
                opening.id, f"its content is not the input messages: {problem}"
            ) from exc
        steps: list[Step] = []
        for event in chain[1:]:
            value = _json(event, await _content(log, event))
            steps.append(Step(role=event.role, value=value, at=event.occurred_at, meta=event.meta))
        return ThreadContext(thread_id=topic_id, depth=len(steps), start=start, steps=steps)

    async def play(self, role: Role, thread: ThreadContext) -> Played:
        """Run `role` on `thread`: its output, validated against its schema, and its signals.

        Raises:
            SchemaValidationError: naming the workflow and role, when the output does not
                validate or its `meta` is not small JSON.
        """
        value: Any = await role.fn(thread)
        where = f"role {role.name!r} of role workflow {self.name!r}"
        if isinstance(value, RoleResult):
            output = self._validated(role, value.content)
            try:
                meta: dict[str, Any] = pydantic_core.to_jsonable_python(value.meta)
            except pydantic_core.PydanticSerializationError as exc:
                raise SchemaValidationError(
                    f"{where} returned meta that is not JSON: {exc}"
                ) from exc
        else:
            output = self._validated(role, value)
            meta = signals(output)
        size = len(pydantic_core.to_json(meta))
        if size > MAX_META_BYTES:
            raise SchemaValidationError(
                f"{where} returned {size:,} bytes of meta (at most {MAX_META_BYTES:,}); meta "
                "is for the moderator's small signals: put the rest in RoleResult.content"
            )
        return Played(output, output.model_dump_json().encode(), meta)

    def _validated(self, role: Role, value: Any) -> BaseModel:
        if isinstance(value, role.schema):
            return value
        try:
            return role.schema.model_validate(value)
        except ValidationError as exc:
            raise SchemaValidationError(
                f"role {role.name!r} of role workflow {self.name!r} returned output that is not "
                f"a {role.schema.__name__}: {describe_validation_error(exc)}; its adapter must "
                "return the role's schema (or a RoleResult whose content is one)"
            ) from exc

    async def record(
        self, log: EventLog, topic_id: str, role: Role, played: Played, follows: Follows
    ) -> RoleEvent:
        """Append `role`'s step after `follows` (the key's last event as the step read it).

        Raises:
            AppendConflict: another writer appended to the topic first; nothing was written.
        """
        return await self._append(log, topic_id, role.name, played.meta, played.content, follows)

    async def value(self, log: EventLog, chain: list[RoleEvent]) -> BaseModel | None:
        """The last step's output as its role's model, if the thread has a step."""
        if len(chain) < 2:
            return None
        last = chain[-1]
        role = self.roles.get(last.role)
        if role is None:
            return None
        try:
            return role.schema.model_validate_json(await _content(log, last))
        except ValidationError as exc:
            problem = describe_validation_error(exc)
            raise damaged_event(
                last.id, f"its content is not a {role.schema.__name__}: {problem}"
            ) from exc

    async def messages(self, log: EventLog, chain: list[RoleEvent]) -> list[ChatMessage]:
        """One assistant message per step, authored by its role, its text the output JSON."""
        return [message(event.role, await _content(log, event)) for event in chain[1:]]

    async def _append(
        self,
        log: EventLog,
        topic_id: str,
        role: str,
        meta: dict[str, Any],
        content: bytes,
        follows: Follows,
    ) -> RoleEvent:
        event = RoleEvent(
            id=_id_after(follows),
            occurred_at=datetime.now(UTC),
            kind=self.kind(role),
            key=topic_id,
            hash=content_digest(content),
            meta=meta,
            code_rev=self.code_rev,
        )
        await log.append(event, content, follows=follows)
        return event


def message(role: str, content: bytes) -> ChatMessage:
    """The assistant message of a step of `role` whose content is `content`."""
    return ChatMessage.assistant(content.decode("utf-8", "replace"), author=role)


def _id_after(follows: Follows) -> str:
    """A new id sorting after `follows` (an id another process wrote may be ahead of ours)."""
    if isinstance(follows, str):
        try:
            return new_id(after=follows)
        except ValueError:
            pass  # not an id of raf's layout: the store says whether the new one sorts after
    return new_id()


async def _content(log: EventLog, event: RoleEvent) -> bytes:
    if event.hash is None:
        raise damaged_event(event.id, "it names no content")
    try:
        return await log.get(event.hash)
    except KeyError as exc:
        raise damaged_event(event.id, f"its content sha256 {event.hash!r} is missing") from exc


def _json(event: RoleEvent, data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise damaged_event(event.id, f"its content is not JSON ({exc})") from exc
