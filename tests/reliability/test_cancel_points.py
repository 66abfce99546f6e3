"""Runs left at any point on a SQLite store end promptly, and their session runs on afterwards.

A nested workflow four levels deep (concurrent and sequential, over function agents and a
scripted ReAct agent) checkpoints on a `SqliteCheckpointStore` while it runs. Whether its
consumer leaves after any update, a cancel scope cancels it after any number of checkpoints, its
timeout fires while a save waits for another writer's lock, or a branch fails while another
branch saves, the run ends within its deadline, and the same session then runs a full turn.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raf.agent import IAgent, RunOptions
from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.errors import AgentError, RunTimeout
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.react import ReactAgent
from raf.session import Session
from raf.stores import Checkpoint, SqliteCheckpointStore
from raf.testing.script import text
from raf.testing.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.anyio

_DEADLINE_SECONDS = 20.0
"""No run, cancelled or not, takes this long unless something waits without end."""
_PROMPT_SECONDS = 5.0
"""A timeout or failure during a blocked save ends the run well within this."""


def _leaf(agent_id: str) -> FunctionAgent:
    return FunctionAgent(agent_id, lambda messages: f"{agent_id} saw {len(messages)}")


def _react(agent_id: str) -> ReactAgent:
    provider = ScriptedProvider(lambda messages: text(f"{agent_id} read {len(messages)}"))
    return ReactAgent(agent_id, provider, "Answer.")


def _sequential(agent_id: str, *agents: IAgent) -> IAgent:
    builder = SequentialBuilder(id=agent_id)
    for agent in agents:
        builder.add_agent(agent)
    return builder.build().as_agent()


def _concurrent(agent_id: str, *agents: IAgent) -> IAgent:
    builder = ConcurrentBuilder(id=agent_id)
    for agent in agents:
        builder.add_agent(agent)
    return builder.build().as_agent()


def nested() -> IAgent:
    """Four levels of workflows: concurrent, sequential, concurrent, sequential."""
    innermost = _sequential("seq3", _leaf("a"), _react("thinker"))
    return _concurrent(
        "root",
        _sequential("seq1", _concurrent("con2", innermost, _leaf("b")), _leaf("c")),
        _sequential("seq2", _leaf("d"), _leaf("e")),
    )


@contextlib.asynccontextmanager
async def _store(path: Path) -> AsyncIterator[SqliteCheckpointStore]:
    async with SqliteCheckpointStore(path) as store:
        yield store


async def _full_turn(agent: IAgent, session: Session, authors: set[str]) -> None:
    """A turn on `session` runs to its end, with the last answers of every branch."""
    response = await agent.run("once more", session).collect()
    assert authors <= {m.author for m in response.messages}, response.messages


async def _updates_of_a_full_run(path: Path) -> int:
    async with _store(path) as store:
        session = Session(id="reference", store=store)
        with anyio.fail_after(_DEADLINE_SECONDS):
            async with nested().run("go", session) as stream:
                count = len([update async for update in stream])
        assert await store.latest("reference") is not None, "the run checkpoints"
    return count


async def test_leaving_a_run_after_any_update_frees_its_session(tmp_path: Path) -> None:
    total = await _updates_of_a_full_run(tmp_path / "reference.db")
    assert total > 20
    agent = nested()
    async with _store(tmp_path / "left.db") as store:
        for stop in range(total):
            session = Session(id=f"left-{stop}", store=store)
            with anyio.fail_after(_DEADLINE_SECONDS):
                seen = 0
                async with agent.run("go", session) as stream:
                    async for _ in stream:
                        seen += 1
                        if seen > stop:
                            break
                assert seen == stop + 1
                await _full_turn(agent, session, {"c", "e"})


@settings(
    max_examples=30,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(checkpoints=st.integers(0, 2000))
def test_a_run_cancelled_after_any_number_of_checkpoints_frees_its_session(
    tmp_path: Path, anyio_backend: str, checkpoints: int
) -> None:
    async def scenario() -> None:
        agent = nested()
        async with _store(tmp_path / "cancelled.db") as store:
            session = Session(id=f"cancelled-{checkpoints}", store=store)
            with anyio.fail_after(_DEADLINE_SECONDS):
                with anyio.CancelScope() as scope:
                    async with anyio.create_task_group() as group:

                        async def cancel_later() -> None:
                            for _ in range(checkpoints):
                                await anyio.lowlevel.checkpoint()
                            scope.cancel()

                        group.start_soon(cancel_later)
                        await agent.run("go", session).collect()
                await _full_turn(agent, session, {"c", "e"})

    anyio.run(scenario, backend=anyio_backend)


@contextlib.contextmanager
def _write_locked(path: Path) -> Iterator[None]:
    """Another connection holds the database's write lock until the block ends."""
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


class _SaveWatcher(SqliteCheckpointStore):
    """A SQLite store that says when a save begins while `watching`."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.watching = True
        self.saving = anyio.Event()

    async def save(self, checkpoint: Checkpoint) -> None:
        if self.watching:
            self.saving.set()
        await super().save(checkpoint)


async def test_a_timeout_during_a_blocked_save_ends_the_run_promptly(tmp_path: Path) -> None:
    path = tmp_path / "timeout.db"
    agent = nested()
    async with _SaveWatcher(path) as store:
        session = Session(id="timed", store=store)
        with anyio.fail_after(_DEADLINE_SECONDS):
            with _write_locked(path):
                started = anyio.current_time()
                with pytest.raises(RunTimeout):
                    await agent.run("go", session, RunOptions(timeout=0.5)).collect()
                elapsed = anyio.current_time() - started
                assert store.saving.is_set(), "the timeout fired during a save"
                assert elapsed < _PROMPT_SECONDS, f"the timeout took {elapsed:.1f} s to end it"
                assert await store.latest("timed") is None  # the blocked save left nothing
            await _full_turn(agent, session, {"c", "e"})


async def test_a_branch_failing_while_another_saves_ends_the_run_promptly(
    tmp_path: Path,
) -> None:
    path = tmp_path / "failing.db"
    calls = 0
    async with _SaveWatcher(path) as store:
        store.watching = False  # until the lock is taken
        holder = sqlite3.connect(path, isolation_level=None)

        def locking(messages: list[ChatMessage]) -> str:
            # The first turn's saver takes the write lock from under its own store once its
            # branch runs: the nested workflow's next save then waits for it.
            if not store.watching:
                holder.execute("BEGIN IMMEDIATE")
                store.watching = True
            return "locked"

        async def breaking(messages: list[ChatMessage]) -> AsyncIterator[str]:
            nonlocal calls
            calls += 1
            if calls == 1:  # fails once a save waits for the lock
                await store.saving.wait()
                raise RuntimeError("the branch broke")
            yield "mended"

        saver = _sequential("saver", FunctionAgent("locker", locking), _leaf("b"))
        agent = _concurrent("root", saver, FunctionAgent("breaker", breaking))
        session = Session(id="failing", store=store)
        try:
            with anyio.fail_after(_DEADLINE_SECONDS):
                started = anyio.current_time()
                with pytest.raises(AgentError, match="the branch broke"):
                    await agent.run("go", session).collect()
                elapsed = anyio.current_time() - started
                assert store.saving.is_set() and holder.in_transaction
                assert elapsed < _PROMPT_SECONDS, f"the failure took {elapsed:.1f} s to end it"
                holder.execute("ROLLBACK")
                await _full_turn(agent, session, {"b", "breaker"})
        finally:
            holder.close()
