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

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import anyio

from raf.builders.roles.events import RoleEvent
from raf.builders.roles.program import MODERATOR_NODE, Role, RoleProgram
from raf.errors import AgentError, AppendConflict, CheckpointError, RoleStepFailed
from raf.messages import ChatMessage
from raf.stores.base import EventLog, SessionLocking

__all__ = ["DEFAULT_MAX_ATTEMPTS", "READ_ROLE", "TickRunner"]

logger = logging.getLogger("raf")

DEFAULT_MAX_ATTEMPTS = 3
"""Ticks in a row a topic's failing step is tried before the runner leaves it alone."""
DEFAULT_CONCURRENCY = 16
"""Topics a tick works on at once."""
READ_ROLE = "__log__"
"""The role `RoleStepFailed` names when the topic's thread cannot be read."""

_PAGE = 10_000  # changes read by one call
_BULK_READ = 64  # from this many topics on, a tick reads the whole log once, not each topic


@dataclass(frozen=True, slots=True)
class _Failure:
    """A topic's step that failed: where the thread stood, and how often in a row."""

    last_id: str | None
    error: RoleStepFailed


class TickRunner:
    """Advances every thread of a role workflow in an event log by one step per `tick()`.

    `tick()` reads only what was appended since the last tick (`EventLog.changes`), so an
    idle tick costs one query however many threads the log holds. For each topic that
    changed it rebuilds the thread and asks the moderator; for each step to take it holds the
    topic (the store's session lock, so several runners — processes — on one store take turns
    per topic), reads the thread again, plays the role, and appends its event after the one
    it read (`follows`): a step is played once, by one runner. A topic another runner holds is
    left for a later tick.

    One topic's failure stops no other: a role or moderator that raises, a damaged row, or
    a thread past `max_steps` becomes a `RoleStepFailed` (naming the topic and the role) in
    `failures` and on the `raf` logger; the other topics go on, and the failed step is tried
    again on the next ticks, `max_attempts` times in all (a thread past `max_steps` is not).

    Args:
        program: the role workflow (from `RoleWorkflowBuilder.build_tick_runner`).
        log: the event log the threads live in.
        max_attempts: how many ticks in a row a failing step is tried.
        concurrency: how many topics a tick works on at once.
    """

    def __init__(
        self,
        program: RoleProgram,
        log: EventLog,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        if max_attempts < 1 or concurrency < 1:
            raise ValueError("a tick runner's max_attempts and concurrency must be at least 1")
        self._program = program
        self._log = log
        self._max_attempts = max_attempts
        self._concurrency = concurrency
        self._cursor = 0  # the log position read up to
        self._pending: set[str] = set()  # topics the next tick looks at whatever changed
        self._again: set[str] = set()  # topics this tick leaves to the next (held, retries)
        self._failures: dict[str, _Failure] = {}

    @property
    def log(self) -> EventLog:
        """The event log the threads live in."""
        return self._log

    @property
    def failures(self) -> Mapping[str, RoleStepFailed]:
        """The topics whose last step failed, with the error (`final` once not retried)."""
        return MappingProxyType({topic: f.error for topic, f in self._failures.items()})

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
        """One step on every topic that changed (or waits for a retry); the events written,
        in topic id order. Failures are kept in `failures`, never raised."""
        program = self._program
        cold = self._cursor == 0
        changed: dict[str, None] = {}
        while True:
            page = await self._log.changes(self._cursor, limit=_PAGE)
            for change in page:
                if program.owns(change.kind):
                    changed[change.key] = None
            if page:
                self._cursor = page[-1].position
            if len(page) < _PAGE:
                break
        for topic in changed:  # a new event on the topic: its failure count starts over
            self._failures.pop(topic, None)
        earlier = sorted((self._pending | self._again) - changed.keys())
        topics = [*changed, *earlier]
        # Until this tick ends, each of its topics stays pending: a tick that is cancelled
        # half-way loses none of the changes it read past.
        self._pending, self._again = set(topics), set()
        chains = await self._bulk_chains(topics) if cold or len(topics) >= _BULK_READ else None
        written: dict[str, RoleEvent] = {}
        limiter = anyio.CapacityLimiter(self._concurrency)

        async def advance(topic: str, chain: list[RoleEvent] | None, role: Role | None) -> None:
            async with limiter:
                event = await self._advance(topic, chain, role)
            if event is not None:
                written[topic] = event

        async with anyio.create_task_group() as group:
            for topic in topics:
                chain = None if chains is None else chains.get(topic, [])
                role = None
                if chain is not None:  # read already: ask the moderator here, and spawn
                    role = await self._decide(topic, chain)  # only the steps to take
                    if role is None:
                        continue
                group.start_soon(advance, topic, chain, role)
        self._pending, self._again = self._again, set()
        return [written[topic] for topic in sorted(written)]

    async def _decide(self, topic: str, chain: list[RoleEvent]) -> Role | None:
        """The role to play next on a thread read in bulk; None at END or on a failure."""
        if not chain:
            return None
        try:
            role = await self._program.decide(chain, topic)
        except Exception as exc:
            self._failed(topic, None, chain[-1].id, exc)
            return None
        if role is None:
            self._failures.pop(topic, None)
        return role

    async def _bulk_chains(self, topics: list[str]) -> dict[str, list[RoleEvent]] | None:
        """Every topic's thread from one read of the whole log; None when a damaged row
        stops it (each topic is then read on its own, so the damage stays with its topic)."""
        if not topics:
            return {}
        try:
            return self._program.threads(await self._log.events())
        except CheckpointError:
            return None

    async def _advance(
        self, topic: str, chain: list[RoleEvent] | None, role: Role | None
    ) -> RoleEvent | None:
        """Take `topic`'s next step (`role` on `chain`, when the tick decided already),
        recording a failure instead of raising one."""
        program = self._program
        seen: str | None = None
        try:
            if chain is None:
                chain = (await program.read(self._log, topic)).chain
                if not chain:
                    return None
                seen = chain[-1].id
                role = await program.decide(chain, topic)
                if role is None:
                    self._failures.pop(topic, None)
                    return None
        except Exception as exc:
            self._failed(topic, None, seen, exc)
            return None
        assert role is not None and chain
        seen = chain[-1].id
        try:
            program.check_steps(chain, topic)
        except AgentError as exc:  # retrying cannot help: the thread is too long
            self._failed(topic, None, seen, exc, final=True)
            return None
        try:
            return await self._step(topic, role, chain[-1].id)
        except Exception as exc:
            self._failed(topic, role, seen, exc)
            return None

    async def _step(self, topic: str, role: Role, decided_on: str) -> RoleEvent | None:
        """Play `role` on `topic` while holding it, if the thread still ends at `decided_on`."""
        log, program = self._log, self._program
        lock = None
        if isinstance(log, SessionLocking):
            lock = await log.lock_session(topic, wait=False)
            if lock is None:
                self._again.add(topic)  # another runner (or run) has it: look again later
                return None
        try:
            snapshot = await program.read(log, topic)
            if not snapshot.chain or snapshot.chain[-1].id != decided_on:
                self._again.add(topic)  # it moved on since the tick read it: decide anew
                return None
            thread = await program.thread(log, snapshot.chain, topic)
            played = await program.play(role, thread)
            try:
                event = await program.record(log, topic, role, played, snapshot.last_id)
            except AppendConflict:
                return None  # a writer without the lock got there first; its event shows next
        finally:
            if lock is not None:
                await lock.release()
        self._failures.pop(topic, None)
        return event

    def _failed(
        self,
        topic: str,
        role: Role | None,
        seen: str | None,
        exc: Exception,
        *,
        final: bool = False,
    ) -> None:
        before = self._failures.get(topic)
        attempts = before.error.attempts + 1 if before and before.last_id == seen else 1
        if isinstance(exc, CheckpointError):
            name = READ_ROLE
        elif role is None:
            name = MODERATOR_NODE
        else:
            name = role.name
        retried = attempts < self._max_attempts and not final
        what = (
            f"tried again on the next tick (attempt {attempts} of {self._max_attempts})"
            if retried
            else "not tried again until the topic changes"
        )
        error = RoleStepFailed(
            f"role workflow {self._program.name!r}: the step of role {name!r} on topic "
            f"{topic!r} failed with {type(exc).__name__}: {exc}; the other topics went on, "
            f"this one is {what}",
            topic_id=topic,
            role=name,
            attempts=attempts,
            final=not retried,
        )
        error.__cause__ = exc
        self._failures[topic] = _Failure(seen, error)
        if retried:
            self._again.add(topic)
        logger.warning("%s", error, exc_info=exc)
