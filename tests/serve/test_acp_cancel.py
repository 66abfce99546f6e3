"""`session/cancel` on a `raf acp --store` server while the store is locked by another writer.

Another connection holds `BEGIN IMMEDIATE` on the store's file, so the prompt's save of its
session waits for it. The cancel arrives then; the writer lets go after it; the prompt ends
cancelled, with its turn kept, and the next prompt on the session runs as usual.

The writer must let go before the cancelled prompt is awaited: the save is shielded (a
cancelled prompt keeps its turn) and waits for the lock up to the store's busy timeout (30 s).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp.client.connection import ClientSideConnection
from acp.schema import AgentMessageChunk

from tests.serve.acp_support import (
    RecordingClient,
    acp_command,
    cancel_once_running,
    kept,
    on_asyncio,
    prompt,
)

__all__ = ["acp_command"]


@dataclass
class _AnswerWatcher(RecordingClient):
    answered: anyio.Event | None = None
    """Set at the agent's first message chunk; made on the SDK's loop by the scenario."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        await super().session_update(session_id, update, **kwargs)
        if isinstance(update, AgentMessageChunk) and self.answered is not None:
            self.answered.set()


@contextmanager
def _writer(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection to the SQLite file, holding its write lock until `rollback()`."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        yield connection
    finally:
        if connection.in_transaction:
            connection.rollback()
        connection.close()


async def _cancelled_on_a_locked_store(
    conn: ClientSideConnection, session_id: str, store: Path, running: anyio.Event
) -> tuple[str, bool]:
    """Prompt the session while another writer locks `store`, cancel it once `running` is
    set, then let the writer go: the prompt's stop reason, and whether it still ran when the
    cancel was sent."""
    with _writer(store) as writer:
        # The writer lets go only after the cancel: the prompt ends once its session is
        # saved, which waits for the writer.
        return await cancel_once_running(conn, session_id, "one", running, then=writer.rollback)


@pytest.mark.parametrize(
    ("target", "first_ends", "next_answer"),
    [
        # Once its answer is streamed, the prompt only has its save left, and keeps its turn.
        # Whether the server reads the cancel before that save gets the lock (the writer lets
        # go right after sending it) is a race, so either stop reason is right; the turn is
        # kept either way.
        ("counter", {"cancelled", "end_turn"}, "2 user messages"),
        # Its tool's thread blocks for a minute: the cancel cuts the run off.
        ("slow", {"cancelled"}, "finished"),
    ],
)
def test_a_prompt_cancelled_on_a_locked_store_ends_and_the_next_one_runs(
    tmp_path: Path, acp_command: list[str], target: str, first_ends: set[str], next_answer: str
) -> None:
    store = tmp_path / "sessions.db"
    client = _AnswerWatcher()
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        client.answered = client.tool_running = running = anyio.Event()
        async with kept(acp_command, target, client, store) as conn:
            session_id = (await conn.new_session(cwd="/w")).session_id
            seen["first"] = await _cancelled_on_a_locked_store(conn, session_id, store, running)
            client.updates.clear()
            seen["second"] = await prompt(conn, session_id, "two")
            seen["text"] = client.text()

    on_asyncio(scenario)
    reason, still_running = seen["first"]
    assert still_running, "the prompt had ended before the cancel was sent"
    assert reason in first_ends
    assert (seen["second"], seen["text"]) == ("end_turn", next_answer)
