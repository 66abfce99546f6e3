"""A group chat checkpointed into SQLite resumes mid-chat exactly; so does a waiting one."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from raf import FunctionAgent, GroupChatBuilder, MaxRounds, Session
from raf.engine import FunctionExecutor, NodeContext, Workflow, WorkflowBuilder
from raf.messages import ChatMessage, message_list_adapter
from raf.stores import SqliteCheckpointStore
from raf.updates import ExecutorInvoked, RequestInfoUpdate

pytestmark = pytest.mark.anyio


def build(calls: Counter[str]) -> Workflow:
    def member(agent_id: str) -> FunctionAgent:
        def answer(messages: list[ChatMessage]) -> str:
            calls[agent_id] += 1
            return f"{agent_id}({len(messages)})"

        return FunctionAgent(agent_id, answer)

    return (
        GroupChatBuilder(id="room")
        .add_agent(member("a"))
        .add_agent(member("b"))
        .add_agent(member("c"))
        .with_termination(MaxRounds(4))
        .build()
    )


async def test_a_checkpoint_mid_chat_resumes_exactly(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    path = tmp_path / "runs.sqlite"
    async with SqliteCheckpointStore(path) as store:
        session = Session(id="s1", store=store)
        first = await build(calls).run("topic", session)
        assert first.status == "completed"
        full = [m.text for m in first.outputs[-1]]
        assert full == ["a(1)", "b(2)", "c(3)", "a(4)"]
        position = session.get("selector#state")
        assert position == {"position": 1}  # a spoke again last: b is next
        checkpoints = await store.list("s1")
        saved = [await store.load(c) for c in checkpoints]
        # After each superstep: a selection, then a speaker, four times, and the end.
        assert [c.data["next"] for c in saved] == list(range(1, 10))
        assert all(json.loads(json.dumps(c.data)) == c.data for c in saved)

    calls.clear()
    async with SqliteCheckpointStore(path) as reopened:
        # After the selector chose the second speaker (b), before b spoke.
        middle = checkpoints[2]
        resumed_session = Session(id="s1", store=reopened)
        resumed = await build(calls).resume(middle, reopened, session=resumed_session)
    assert [m.text for m in resumed.outputs[-1]] == full
    assert calls == Counter({"b": 1, "c": 1, "a": 1})  # a spoke before the checkpoint
    assert resumed_session.get("selector#state") == position


class _Gate:
    """A workflow member that asks a human before it answers."""

    @staticmethod
    def build() -> Workflow:
        async def ask(message: Any, ctx: NodeContext) -> None:
            answer = await ctx.request_info({"question": "go on?"})
            await ctx.yield_output([ChatMessage.assistant(f"human said {answer}", author="gate")])

        return (
            WorkflowBuilder("gate")
            .add_executor(FunctionExecutor("ask", ask))
            .set_start("ask")
            .build()
        )


async def test_a_member_that_asks_a_human_makes_the_chat_wait(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()

    def talker(messages: list[ChatMessage]) -> str:
        calls["talker"] += 1
        return f"talker({len(messages)})"

    room = (
        GroupChatBuilder(id="room")
        .add_agent(FunctionAgent("talker", talker))
        .add_agent(_Gate.build().as_agent())
        .with_termination(MaxRounds(3))
        .build()
        .as_agent()
    )
    async with SqliteCheckpointStore(tmp_path / "hitl.sqlite") as store:
        session = Session(id="h1", store=store)
        async with room.run("start", session) as updates:
            items = [u async for u in updates]
        asked = [u for u in items if isinstance(u, RequestInfoUpdate)]
        assert [(r.request_id, r.payload) for r in asked] == [
            ("room/gate/ask@0#0", {"question": "go on?"})
        ]
        gate = [u for u in items if isinstance(u, ExecutorInvoked) and u.executor_id == "gate"]
        assert [u.status for u in gate] == ["waiting"]
        waiting = await room.run("not yet", Session(id="other", store=store)).collect()
        assert waiting.status == "waiting"
        assert [m.text for m in waiting.messages] == ["talker(1)"]  # what came before the gate
        done = await room.run("yes", session).collect()
    assert done.status == "completed"
    # The completing turn answers with the whole turn; the history holds each message once.
    assert [m.text for m in done.messages] == ["talker(1)", "human said yes", "talker(3)"]
    history = session.get_as("room#history", message_list_adapter)
    assert history is not None
    assert [m.text for m in history] == ["start", "talker(1)", "yes", "human said yes", "talker(3)"]
    assert calls == Counter({"talker": 3})  # twice here, once in the other session
