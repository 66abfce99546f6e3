"""A store keeps a session single-writer between its store objects (and so between processes):
`lock_session`, and the runs that take it."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raf import FunctionAgent, RunOptions, Session, SessionBusy
from raf.engine import FunctionExecutor, NodeContext, Workflow, WorkflowBuilder
from raf.messages import ChatMessage
from raf.stores import SqliteCheckpointStore
from raf.stores.base import SessionLock, SessionLocking
from tests.stores.conftest import Backing, Store

pytestmark = pytest.mark.anyio


async def lock(store: Store, session_id: str, *, wait: bool = False) -> SessionLock | None:
    return await store.lock_session(session_id, wait=wait)


def test_every_store_locks_sessions(backing: Backing) -> None:
    assert isinstance(backing.open(), SessionLocking)


async def test_a_held_session_is_refused_until_released(backing: Backing) -> None:
    async with backing.open() as first, backing.open() as second:
        held = await lock(first, "s-1")
        assert held is not None
        assert await lock(second, "s-1") is None
        assert await lock(first, "s-1") is None  # one store object too
        other = await lock(second, "s-2")  # another session is free
        assert other is not None
        await held.release()
        await held.release()  # idempotent: it does not free the next holder's hold
        again = await lock(second, "s-1")
        assert again is not None
        assert await lock(first, "s-1") is None
        for hold in (again, other):
            await hold.release()


async def test_a_waiting_lock_gets_the_session_once_it_is_released(backing: Backing) -> None:
    async with backing.open() as first, backing.open() as second:
        held = await lock(first, "s-1")
        assert held is not None
        got: list[SessionLock] = []

        async def wait_for_it() -> None:
            waited = await lock(second, "s-1", wait=True)
            assert waited is not None
            got.append(waited)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_for_it)
                await anyio.wait_all_tasks_blocked()
                assert got == []
                await held.release()
        assert await lock(first, "s-1") is None
        await got[0].release()
        assert await lock(first, "s-1") is not None


async def test_a_cancelled_wait_leaves_no_lock_behind(backing: Backing) -> None:
    async with backing.open() as first, backing.open() as second:
        held = await lock(first, "s-1")
        assert held is not None
        with anyio.fail_after(10):
            with anyio.move_on_after(0.2) as scope:
                await lock(second, "s-1", wait=True)
        assert scope.cancelled_caught
        await held.release()
        for store in (second, first):
            hold = await lock(store, "s-1")
            assert hold is not None, f"{store} cannot take the session after a cancelled wait"
            await hold.release()


async def test_a_cancelled_lock_never_waits_for_worker_threads_busy_elsewhere(
    durable_backing: Backing,
) -> None:
    # Another store holds the session, so the take waits; every worker thread of the default
    # limiter is taken by work that ends only when a timer lets it (so that a store that
    # waits for them fails this test instead of hanging it). The cancelled take must come
    # back at once all the same, and take nothing.
    async with durable_backing.open() as store, durable_backing.open() as other:
        held = await lock(other, "busy")
        assert held is not None
        await lock(store, "warm-up")  # connected before the threads are taken
        limiter = anyio.to_thread.current_default_thread_limiter()
        release = threading.Event()
        timer = threading.Timer(8, release.set)
        timer.start()
        try:
            async with anyio.create_task_group() as group:
                for _ in range(int(limiter.total_tokens)):
                    group.start_soon(anyio.to_thread.run_sync, release.wait)
                while limiter.borrowed_tokens < limiter.total_tokens:
                    await anyio.lowlevel.checkpoint()
                started = anyio.current_time()
                with anyio.move_on_after(0.1) as scope:
                    await lock(store, "busy", wait=True)
                waited = anyio.current_time() - started
                release.set()
        finally:
            release.set()
            timer.cancel()
        assert scope.cancelled_caught
        assert waited < 4, f"the cancelled take waited {waited:.1f} s for busy worker threads"
        await held.release()
        hold = await lock(other, "busy")
        assert hold is not None, "the cancelled take left the session held"
        await hold.release()


async def test_closing_a_store_drops_its_locks(durable_backing: Backing) -> None:
    async with durable_backing.open() as other:
        closing = durable_backing.open()
        held = await lock(closing, "s-1")
        assert held is not None
        assert await lock(other, "s-1") is None
        await closing.aclose()
        with anyio.fail_after(10):
            taken = await lock(other, "s-1", wait=True)
        assert taken is not None
        await held.release()  # after the close: harmless, and leaves the new hold alone
        with pytest.raises(anyio.ClosedResourceError):
            await lock(closing, "s-1")
        assert await lock(other, "s-1") is None
        await taken.release()


async def test_a_memory_sqlite_store_locks_within_its_object() -> None:
    async with SqliteCheckpointStore(":memory:") as store:
        held = await store.lock_session("s-1", wait=False)
        assert held is not None
        assert await store.lock_session("s-1", wait=False) is None
        await held.release()
        assert await store.lock_session("s-1", wait=False) is not None


class Gate:
    """An agent body that waits until released."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()
        self.order: list[str] = []

    async def __call__(self, messages: list[ChatMessage]) -> AsyncIterator[str]:
        self.order.append(f"start {messages[-1].text}")
        self.entered.set()
        await self.release.wait()
        self.order.append(f"end {messages[-1].text}")
        yield "done"


async def test_runs_on_two_session_objects_with_one_id_and_store_take_turns(
    backing: Backing,
) -> None:
    gate = Gate()
    agent = FunctionAgent("a", gate)
    async with backing.open() as first, backing.open() as second:
        holder = Session(id="chat-1", store=first)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(agent.run("one", holder).collect)
                await gate.entered.wait()
                with pytest.raises(SessionBusy) as busy:
                    await agent.run("two", Session(id="chat-1", store=second)).collect()
                assert busy.value.session_id == "chat-1" and busy.value.path == ("a",)
                # Another session of the same store is free.
                free = FunctionAgent("b", lambda messages: "free")
                response = await free.run("x", Session(id="chat-2", store=second)).collect()
                assert response.text == "free"
                waiting = Session(id="chat-1", store=second)
                options = RunOptions(on_busy="wait")
                tg.start_soon(agent.run("three", waiting, options).collect)
                await anyio.wait_all_tasks_blocked()
                assert gate.order == ["start one"]
                gate.release.set()
        assert gate.order == ["start one", "end one", "start three", "end three"]


def asking_workflow() -> Workflow:
    """One node that asks a human, then outputs the value with the answer."""

    async def ask(value: str, ctx: NodeContext) -> None:
        answer = await ctx.request_info({"question": value})
        await ctx.yield_output(f"{value}:{answer}")

    node = FunctionExecutor("ask", ask)
    return WorkflowBuilder("wf").add_executor(node).set_start(node).build()


async def test_a_session_held_elsewhere_refuses_workflow_run_and_resume(backing: Backing) -> None:
    workflow = asking_workflow()
    async with backing.open() as first, backing.open() as second:
        session = Session(id="wf-1", store=first)
        result = await workflow.run("go", session)
        assert result.status == "waiting"
        checkpoint_id = await first.latest("wf-1")
        assert checkpoint_id is not None
        held = await lock(second, "wf-1")
        assert held is not None
        with pytest.raises(SessionBusy) as busy:
            await workflow.run("again", session)
        assert busy.value.session_id == "wf-1"
        request_id = result.requests[0].request_id
        with pytest.raises(SessionBusy):
            await workflow.resume(checkpoint_id, first, {request_id: "yes"})
        await held.release()
        resumed = await workflow.resume(checkpoint_id, first, {request_id: "yes"})
        assert resumed.outputs == ["go:yes"]
        assert await lock(second, "wf-1") is not None


async def test_a_workflow_run_or_resume_told_to_wait_runs_once_the_session_is_free(
    backing: Backing,
) -> None:
    workflow = asking_workflow()
    async with backing.open() as first, backing.open() as second:
        result = await workflow.run("go", Session(id="wf-2", store=first))
        checkpoint_id = await first.latest("wf-2")
        assert checkpoint_id is not None
        held = await lock(second, "wf-2")
        assert held is not None
        outcome: list[object] = []

        async def resume() -> None:
            answers = {result.requests[0].request_id: "yes"}
            resumed = await workflow.resume(checkpoint_id, first, answers, on_busy="wait")
            outcome.append(resumed.outputs)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(resume)
                await anyio.wait_all_tasks_blocked()
                assert outcome == []
                await held.release()
        assert outcome == [["go:yes"]]


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from(["a", "b"]), st.booleans()),
        min_size=1,
        max_size=16,
    )
)
def test_locks_taken_and_released_at_random_match_a_model(
    backing: Backing, anyio_backend: str, steps: list[tuple[int, str, bool]]
) -> None:
    """Any sequence of takes and releases from three store objects on one backing: a take
    succeeds exactly when no hold on that id is live, and a release frees only its own."""

    async def scenario() -> None:
        stores = [backing.open() for _ in range(3)]
        holds: dict[str, tuple[int, SessionLock]] = {}
        try:
            for index, session_id, take in steps:
                if take:
                    got = await lock(stores[index], session_id)
                    assert (got is not None) == (session_id not in holds), (index, session_id)
                    if got is not None:
                        holds[session_id] = (index, got)
                elif session_id in holds:
                    _, hold = holds.pop(session_id)
                    await hold.release()
            for _, hold in holds.values():
                await hold.release()
            for session_id in ("a", "b"):
                final = await lock(stores[0], session_id)
                assert final is not None
                await final.release()
        finally:
            if backing.kind != "memory":
                for store in stores:
                    await store.aclose()

    anyio.run(scenario, backend=anyio_backend)


async def test_a_postgres_store_holds_many_sessions_on_one_connection(
    postgres_dsn: str, postgres_schema: str
) -> None:
    import psycopg

    from raf.stores import PostgresCheckpointStore

    async with PostgresCheckpointStore(postgres_dsn, schema=postgres_schema) as store:
        holds = [await lock(store, f"s-{index}") for index in range(30)]
        assert all(hold is not None for hold in holds)
        connection = store._advisory._connection  # pyright: ignore[reportPrivateUsage]
        assert connection is not None
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            rows = admin.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s",
                (connection.info.backend_pid,),
            ).fetchone()
        assert rows == (30,)  # every session's lock, on the store's one lock connection
        for hold in holds:
            assert hold is not None
            await hold.release()
