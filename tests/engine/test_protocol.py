"""The run protocol through every layer: ask, wait, answer and resume, raf's agents or not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.engine import FunctionExecutor, NodeContext, WorkflowAgent, WorkflowBuilder
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.session import Session
from raf.stores import SqliteCheckpointStore
from raf.updates import AgentUpdate, ExecutorInvoked, ExecutorInvoking, RequestInfoUpdate
from tests.engine.support import Calls
from tests.helpers import Foreign

pytestmark = pytest.mark.anyio


def gate(workflow_id: str, calls: Calls, *, before: Any = None) -> WorkflowAgent:
    """A workflow that asks a human to approve the conversation, then says the verdict."""

    async def ask(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        if before is not None:
            await before(ctx)
        verdict = await ctx.request_info({"approve": conversation[-1].text})
        await ctx.yield_output(ChatMessage.assistant(f"verdict: {verdict}", author=workflow_id))

    return (
        WorkflowBuilder(workflow_id)
        .add_executor(calls.node("ask", ask))
        .set_start("ask")
        .build()
        .as_agent()
    )


async def collect(agent: Any, messages: Any, session: Session) -> list[AgentUpdate]:
    async with agent.run(messages, session) as stream:
        return [u async for u in stream]


async def test_an_agent_that_is_not_rafs_makes_its_parent_wait_and_gets_the_answer() -> None:
    calls = Calls()
    after = Calls()
    wrapped = Foreign(gate("inner", calls))
    publish = FunctionAgent("publish", lambda m: f"published after {m[-1].text}")
    outer = SequentialBuilder(id="outer").add_agent(wrapped).add_agent(publish).build().as_agent()
    session = Session()
    first = await collect(outer, "draft", session)
    asks = [u for u in first if isinstance(u, RequestInfoUpdate)]
    # The id carries the full path from the root: unique in the whole tree.
    assert [(u.request_id, u.path) for u in asks] == [("outer/inner/ask@0#0", ("outer", "inner"))]
    # The parent waits: its next step did not run, unapproved.
    assert not any(u.type == "text_delta" and u.path[-1] == "publish" for u in first)
    response = await outer.run("yes", session).collect()
    assert [m.text for m in response.messages] == ["verdict: yes", "published after verdict: yes"]
    assert calls.count["ask"] == 2  # asked, then re-run with the answer
    del after


async def test_a_typed_answer_reaches_an_agent_that_is_not_rafs() -> None:
    calls = Calls()
    outer = SequentialBuilder(id="outer").add_agent(Foreign(gate("inner", calls))).build()
    agent = outer.as_agent()
    session = Session()
    waiting = await agent.run("draft", session).collect()
    (request,) = waiting.pending
    answer = ChatMessage.tool_result(request.request_id, json.dumps({"ok": True}))
    done = await agent.run(answer, session).collect()
    assert done.text == "verdict: {'ok': True}"
    history = session.get("outer#history")
    # A typed answer enters the history as a user message, never as an orphan tool message.
    assert [(m.role, m.text) for m in history] == [
        ("user", "draft"),
        ("user", '{"ok": true}'),
        ("assistant", "verdict: {'ok': True}"),
    ]


async def test_parallel_branches_wrapping_one_workflow_id_ask_with_distinct_ids() -> None:
    calls = Calls()
    team = (
        ConcurrentBuilder(id="team")
        .add_agent(
            SequentialBuilder(id="s1").add_agent(Foreign(gate("inner", calls))).build().as_agent()
        )
        .add_agent(
            SequentialBuilder(id="s2").add_agent(Foreign(gate("inner", calls))).build().as_agent()
        )
        .build()
        .as_agent()
    )
    session = Session()
    waiting = await team.run("draft", session).collect()
    ids = sorted(r.request_id for r in waiting.pending)  # in stream order, which may vary
    assert ids == ["team/s1/inner/ask@0#0", "team/s2/inner/ask@0#0"]
    answers = [
        ChatMessage.tool_result(ids[1], json.dumps("second")),
        ChatMessage.tool_result(ids[0], json.dumps("first")),
    ]
    done = await team.run(answers, session).collect()
    assert sorted(m.text for m in done.messages) == ["verdict: first", "verdict: second"]


async def test_a_plain_text_answer_goes_to_the_oldest_request_in_stream_order() -> None:
    asked_b = anyio.Event()

    async def wait_for_b(ctx: NodeContext) -> None:
        if not asked_b.is_set():
            await asked_b.wait()

    async def b_asks(ctx: NodeContext) -> None:
        asked_b.set()

    team = (
        ConcurrentBuilder(id="team")
        .add_agent(gate("a", Calls(), before=wait_for_b))
        .add_agent(gate("b", Calls(), before=b_asks))
        .build()
        .as_agent()
    )
    session = Session()
    with anyio.fail_after(5):
        first = await collect(team, "draft", session)
    streamed = [u.request_id for u in first if isinstance(u, RequestInfoUpdate)]
    assert streamed == ["team/b/ask@0#0", "team/a/ask@0#0"]  # b asked first
    waiting = await team.run("to the first asker", session).collect()
    assert [r.request_id for r in waiting.pending] == ["team/a/ask@0#0"]
    assert [m.text for m in waiting.messages] == ["verdict: to the first asker"]
    done = await team.run("to the second", session).collect()
    # The whole answer, as an uninterrupted turn would give it; the history has it once.
    assert [m.text for m in done.messages] == [
        "verdict: to the second",
        "verdict: to the first asker",
    ]
    assert [m.text for m in session.get("team#history")] == [
        "draft",
        "to the first asker",
        "verdict: to the first asker",
        "to the second",
        "verdict: to the second",
    ]


async def test_answers_enter_the_history_after_what_the_waiting_turn_produced() -> None:
    writer = FunctionAgent("writer", lambda m: f"a draft on {m[0].text}")
    publish = FunctionAgent("publish", lambda m: "published")
    review = gate("review", Calls())
    pipeline = (
        SequentialBuilder(id="p")
        .add_agent(writer)
        .add_agent(review)
        .add_agent(publish)
        .build()
        .as_agent()
    )
    session = Session()
    waiting = await pipeline.run("cats", session).collect()
    assert [m.text for m in waiting.messages] == ["a draft on cats"]
    done = await pipeline.run("approved", session).collect()
    assert [m.text for m in done.messages] == ["a draft on cats", "verdict: approved", "published"]
    # The turn's messages enter the history once: the draft before the answer, the rest after.
    history = [m.text for m in session.get("p#history")]
    assert history == ["cats", "a draft on cats", "approved", "verdict: approved", "published"]


async def test_every_executor_invoking_is_closed_also_when_the_step_waits() -> None:
    outer = (
        SequentialBuilder(id="outer")
        .add_agent(FunctionAgent("first", lambda m: "one"))
        .add_agent(Foreign(gate("inner", Calls())))
        .build()
        .as_agent()
    )
    session = Session()
    for prompt in ("go", "yes"):
        updates = await collect(outer, prompt, session)
        opened = [(u.path, u.executor_id) for u in updates if isinstance(u, ExecutorInvoking)]
        closed = [(u.path, u.executor_id) for u in updates if isinstance(u, ExecutorInvoked)]
        assert sorted(opened) == sorted(closed)
    first = await collect(outer, "again", session)
    waits = [u for u in first if isinstance(u, ExecutorInvoked) and u.status == "waiting"]
    assert [(u.path, u.executor_id) for u in waits] == [
        (("outer", "inner"), "ask"),
        (("outer",), "inner"),
    ]


async def test_resuming_a_failed_agent_turn_writes_it_into_the_history_once(
    tmp_path: Path,
) -> None:
    failures = {"count": 1}

    async def flaky(message: Any, ctx: NodeContext) -> None:
        if failures["count"]:
            failures["count"] -= 1
            raise RuntimeError("a passing fault")
        await ctx.yield_output(ChatMessage.assistant("second", author="b"))

    async def first(message: Any, ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant("first", author="a"))
        await ctx.send(message)

    workflow = (
        WorkflowBuilder("w")
        .add_executor(FunctionExecutor("a", first))
        .add_executor(FunctionExecutor("b", flaky))
        .add_edge("a", "b")
        .set_start("a")
        .build()
    )
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    session = Session(id="chat", store=store)
    session.set("notes#mine", {"kept": True})
    with pytest.raises(Exception, match="a passing fault"):
        await workflow.as_agent().run("go", session).collect()
    checkpoint = await store.latest("chat")
    assert checkpoint is not None
    result = await workflow.resume(checkpoint, store, session=session)
    assert result.status == "completed"
    history = [(m.role, m.text) for m in session.get("w#history")]
    assert history == [("user", "go"), ("assistant", "first"), ("assistant", "second")]
    # Session state the checkpoint does not hold is kept.
    assert session.get("notes#mine") == {"kept": True}
    # The agent continues from the resumed turn.
    again = await workflow.as_agent().run("next", session).collect()
    assert [m.text for m in again.messages] == ["first", "second"]
    assert [m.text for m in session.get("w#history")][:4] == ["go", "first", "second", "next"]


async def test_resuming_a_waiting_agent_turn_with_responses_records_it_in_order(
    tmp_path: Path,
) -> None:
    writer = FunctionAgent("writer", lambda m: "a draft")
    pipeline = SequentialBuilder(id="p").add_agent(writer).add_agent(gate("review", Calls()))
    workflow = pipeline.build()
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    session = Session(id="chat", store=store)
    waiting = await workflow.as_agent().run("cats", session).collect()
    (request,) = waiting.pending
    checkpoint = await store.latest("chat")
    assert checkpoint is not None
    fresh = Session(id="chat", store=store)
    result = await workflow.resume(checkpoint, store, {request.request_id: "ok"}, session=fresh)
    assert result.status == "completed"
    history = [m.text for m in fresh.get("p#history")]
    assert history == ["cats", "a draft", "ok", "verdict: ok"]
    assert not [k for k in fresh.keys("") if k.endswith("#pending")]
