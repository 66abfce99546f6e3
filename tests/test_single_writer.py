"""Sessions are single-writer: concurrent top-level runs are refused, or queued in order."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from raf.agent import BaseAgent, RunOptions
from raf.engine import FunctionExecutor, NodeContext, WorkflowBuilder
from raf.errors import SessionBusy
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.run import RunContext
from raf.session import Session
from raf.updates import AgentResponse

pytestmark = pytest.mark.anyio


class Gate:
    """An agent body that waits until released, counting the runs inside it."""

    def __init__(self) -> None:
        self.inside = 0
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self, messages: list[ChatMessage]) -> AsyncIterator[str]:
        self.inside += 1
        self.entered.set()
        await self.release.wait()
        yield f"{messages[-1].text}:{len(messages)}"


async def test_concurrent_runs_with_reject_let_exactly_one_through() -> None:
    gate = Gate()
    agent = FunctionAgent("a", gate)
    session = Session(id="s-1")
    outcomes: list[str] = []

    async def attempt(prompt: str) -> None:
        try:
            response = await agent.run(prompt, session).collect()
        except SessionBusy as busy:
            assert busy.session_id == "s-1" and "s-1" in str(busy)
            assert busy.path == ("a",)
            outcomes.append("busy")
        else:
            outcomes.append(response.text)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(attempt, "first")
            await gate.entered.wait()
            for index in range(4):
                tg.start_soon(attempt, f"other{index}")
            # The refused ones raise before running: only then let the first finish.
            while outcomes.count("busy") < 4:
                await anyio.lowlevel.checkpoint()
            gate.release.set()
    assert sorted(outcomes) == ["busy"] * 4 + ["first:1"]
    assert gate.inside == 1
    history = session.get("a#history")
    assert [m.text for m in history] == ["first", "first:1"]


async def test_wait_queues_runs_in_arrival_order_and_keeps_every_turn() -> None:
    gate = Gate()
    agent = FunctionAgent("a", gate)
    session = Session()
    queued = RunOptions(on_busy="wait")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: agent.run("p0", session, queued).collect())
            await gate.entered.wait()
            for index in range(1, 5):
                tg.start_soon(lambda i=index: agent.run(f"p{i}", session, queued).collect())
                # Each run queues before the next starts: arrival order is known.
                await wait_queued(session, index)
            assert gate.inside == 1
            gate.release.set()
    history = [m.text for m in session.get("a#history")]
    assert history[0::2] == ["p0", "p1", "p2", "p3", "p4"]
    assert history[1::2] == ["p0:1", "p1:3", "p2:5", "p3:7", "p4:9"]


async def wait_queued(session: Session, count: int) -> None:
    while len(session.writer._queue) < count:  # pyright: ignore[reportPrivateUsage]
        await anyio.lowlevel.checkpoint()


async def test_the_default_session_is_single_writer_too() -> None:
    gate = Gate()
    agent = FunctionAgent("a", gate)
    with anyio.fail_after(5):
        async with agent.run("one") as stream:
            await gate.entered.wait()
            with pytest.raises(SessionBusy):
                async with agent.run("two"):
                    pass
            gate.release.set()
            texts = [u.text async for u in stream if u.type == "text_delta"]
    assert texts == ["one:1"]
    # Free again once the first run ended.
    gate.release.set()
    assert (await agent.run("three").collect()).text == "three:3"


async def test_a_cancelled_waiter_leaves_the_queue_and_the_next_one_runs() -> None:
    gate = Gate()
    agent = FunctionAgent("a", gate)
    session = Session()
    queued = RunOptions(on_busy="wait")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: agent.run("p0", session, queued).collect())
            await gate.entered.wait()
            tg.start_soon(lambda: agent.run("kept", session, queued).collect())
            await wait_queued(session, 1)
            cancelled = anyio.CancelScope()

            async def abandoned() -> None:
                with cancelled:
                    await agent.run("dropped", session, queued).collect()

            tg.start_soon(abandoned)
            await wait_queued(session, 2)
            cancelled.cancel()
            await wait_queued_at_most(session, 1)
            gate.release.set()
    history = [m.text for m in session.get("a#history")]
    assert history == ["p0", "p0:1", "kept", "kept:3"]
    assert not session.writer.busy


async def wait_queued_at_most(session: Session, count: int) -> None:
    while len(session.writer._queue) > count:  # pyright: ignore[reportPrivateUsage]
        await anyio.lowlevel.checkpoint()


async def test_one_pending_request_takes_one_answer_and_the_next_step_runs_once() -> None:
    ran: list[object] = []
    acting, release = anyio.Event(), anyio.Event()

    async def ask(message: object, ctx: NodeContext) -> None:
        answer = await ctx.request_info({"approve": message})
        await ctx.send(answer)

    async def act(message: object, ctx: NodeContext) -> None:
        ran.append(message)
        acting.set()
        await release.wait()
        await ctx.yield_output(ChatMessage.assistant(f"did {message}"))

    workflow = (
        WorkflowBuilder("w")
        .add_executor(FunctionExecutor("ask", ask))
        .add_executor(FunctionExecutor("act", act))
        .add_edge("ask", "act")
        .set_start("ask")
        .build()
    )
    agent = workflow.as_agent()
    session = Session()
    first = await agent.run("go", session).collect()
    assert first.status == "waiting"
    outcomes: list[str] = []

    async def answer(text: str) -> None:
        try:
            response = await agent.run(text, session).collect()
        except SessionBusy:
            outcomes.append("busy")
        else:
            outcomes.append(response.status)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer, "yes")
            await acting.wait()
            await answer("no")
            release.set()
    assert outcomes == ["busy", "completed"]
    assert ran == ["yes"]


class MetadataRecorder(BaseAgent):
    """Records the metadata dict each run sees, and writes into it."""

    def __init__(self) -> None:
        super().__init__("recorder")
        self.seen: list[dict[str, Any]] = []

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        self.seen.append(ctx.options.metadata)
        ctx.options.metadata["written"] = len(self.seen)
        return AgentResponse(messages=[ChatMessage.assistant("ok")])


async def test_metadata_belongs_to_one_run() -> None:
    agent = MetadataRecorder()
    shared = RunOptions(metadata={"user": "ann"})
    await agent.run("x", Session(), shared).collect()
    await agent.run("y", Session(), shared).collect()
    await agent.run("z", Session()).collect()
    await agent.run("w", Session()).collect()
    first, second, third, fourth = agent.seen
    assert first == {"user": "ann", "written": 1} and second == {"user": "ann", "written": 2}
    assert shared.metadata == {"user": "ann"}
    assert third == {"written": 3} and fourth == {"written": 4}
    assert RunOptions().metadata == {}
