"""`AcpSessions`: ACP sessions kept as threads of a store, so an editor can list and reload them.

Each ACP session is a thread (`raf.serve.threads`): a raf `Session` saved in the store after
every prompt, with what `session/list` shows (the working directory, a title from the first
prompt, when it last changed) under its `#acp` key. A prompt holds its session through the
store, so two editors (two `raf acp` processes on one store) never run one session at once.
`replay` gives a loaded session's conversation back as the message chunks the editor shows.

Example:
    >>> import anyio
    >>> from raf.stores import MemoryCheckpointStore
    >>> async def main() -> list[str]:
    ...     sessions = AcpSessions(MemoryCheckpointStore())
    ...     session_id = await sessions.create("/work")
    ...     return [info.cwd for info in await sessions.list()]
    >>> anyio.run(main)
    ['/work']
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import anyio
from acp import update_agent_message_text, update_user_message_text
from acp.schema import AgentMessageChunk, SessionInfo, UserMessageChunk
from pydantic import BaseModel, ConfigDict, ValidationError

from raf.messages import message_list_adapter
from raf.serve.threads import THREAD_EVENT, Thread, Threads, ThreadStore, thread_of

__all__ = ["AcpSessions", "SessionFacts"]

INFO_KEY = "#acp"
"""The session key of what `session/list` shows of a session."""

_TITLE_CHARS = 80


class SessionFacts(BaseModel):
    """What `session/list` shows of a session."""

    model_config = ConfigDict(frozen=True)

    cwd: str
    title: str | None = None
    updated_at: str
    """When its last prompt ended (ISO 8601, UTC)."""


class AcpSessions:
    """The ACP sessions of one store (an in-memory one when the server keeps none)."""

    def __init__(self, store: ThreadStore) -> None:
        self._threads = Threads(store)

    @property
    def store(self) -> ThreadStore:
        """Where the sessions are kept."""
        return self._threads.store

    async def create(self, cwd: str) -> str:
        """A new session in `cwd`, saved at once so it is listed; its id."""
        session_id = uuid.uuid4().hex
        async with self._threads.hold(session_id) as thread:
            _set_facts(thread, SessionFacts(cwd=cwd, updated_at=_now()))
            await self._threads.save(thread)
        return session_id

    async def facts(self, session_id: str) -> SessionFacts | None:
        """What the store says of `session_id`, or None when it holds no such ACP session."""
        if not session_id:
            return None
        return _facts_of(await self._threads.open(session_id))

    @asynccontextmanager
    async def hold(self, session_id: str, prompt: str) -> AsyncGenerator[Thread]:
        """The session, held for one prompt and saved when the block ends, however it ends.

        Raises:
            SessionBusy: another prompt holds the session (here, or in another process).
        """
        async with self._threads.hold(session_id) as thread:
            try:
                yield thread
            finally:
                old = _facts_of(thread)
                title = old.title if old is not None and old.title else _title(prompt)
                cwd = old.cwd if old is not None else ""
                _set_facts(thread, SessionFacts(cwd=cwd, title=title, updated_at=_now()))
                with anyio.CancelScope(shield=True):  # a cancelled prompt keeps its turn
                    await self._threads.save(thread)

    async def list(self, cwd: str | None = None) -> list[SessionInfo]:
        """Every ACP session of the store (in `cwd`, when given), most recently used first."""
        store = self._threads.store
        listed = (thread_of(e.key) for e in await store.events() if e.kind == THREAD_EVENT)
        found: list[SessionInfo] = []
        for session_id in {thread_id for thread_id in listed if thread_id is not None}:
            facts = await self.facts(session_id)
            if facts is None or (cwd is not None and facts.cwd != cwd):
                continue
            found.append(
                SessionInfo(
                    session_id=session_id,
                    cwd=facts.cwd,
                    title=facts.title,
                    updated_at=facts.updated_at,
                )
            )
        found.sort(key=lambda info: info.updated_at or "", reverse=True)
        return found

    async def replay(
        self, session_id: str, agent_id: str
    ) -> list[UserMessageChunk | AgentMessageChunk]:
        """The conversation of agent `agent_id` on the session, as the chunks an editor
        shows: the user's prompts and the agents' answers (nested agents' under their id)."""
        thread = await self._threads.open(session_id)
        history = thread.session.get_as(f"{agent_id}#history", message_list_adapter) or []
        chunks: list[UserMessageChunk | AgentMessageChunk] = []
        for message in history:
            text = message.text
            if not text:
                continue
            if message.role == "user":
                chunks.append(update_user_message_text(text))
            elif message.role == "assistant":
                author = message.author
                said = f"**{author}**: {text}" if author and author != agent_id else text
                chunks.append(update_agent_message_text(said))
        return chunks


def _facts_of(thread: Thread) -> SessionFacts | None:
    raw = thread.session.get(INFO_KEY)
    if raw is None:
        return None
    try:
        return SessionFacts.model_validate(raw)
    except ValidationError:
        return None


def _set_facts(thread: Thread, facts: SessionFacts) -> None:
    thread.session.set(INFO_KEY, facts.model_dump())


def _title(prompt: str) -> str | None:
    line = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    if not line:
        return None
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"


def _now() -> str:
    return datetime.now(UTC).isoformat()
