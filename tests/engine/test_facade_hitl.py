from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from raf.engine import FunctionExecutor, NodeContext, WorkflowAgent, WorkflowBuilder
from raf.engine.codec import CheckpointValueError
from raf.errors import WorkflowError as WorkflowFailure
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.session import Session
from raf.updates import AgentUpdate, ExecutorInvoking, RequestInfoUpdate, TextDelta
from tests.engine.support import Calls

pytestmark = pytest.mark.anyio


def approval(calls: Calls, workflow_id: str = "wf") -> WorkflowAgent:
    """write (an agent) -> review (asks a human) -> publish."""

    async def review(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        verdict = await ctx.request_info({"draft": conversation[-1].text})
        await ctx.send(f"{conversation[-1].text}: {verdict}")

    async def publish(text: str, ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant(text, author=ctx.node_id))

    writer = FunctionAgent("writer", lambda m: f"draft on {m[0].text}")
    return (
        WorkflowBuilder(workflow_id)
        .add_edge(calls.forward("intake"), writer)
        .add_edge(writer, calls.node("review", review))
        .add_edge("review", calls.node("publish", publish))
        .set_start("intake")
        .build()
        .as_agent()
    )


async def stream(
    agent: WorkflowAgent, messages: Any, session: Session | None = None
) -> list[AgentUpdate]:
    async with agent.run(messages, session=session) as updates:
        return [u async for u in updates]


async def test_a_plain_text_answer_resumes_the_waiting_run() -> None:
    calls = Calls()
    agent = approval(calls)
    first = await stream(agent, "cats")
    asks = [u for u in first if isinstance(u, RequestInfoUpdate)]
    assert [(u.request_id, u.payload, u.path) for u in asks] == [
        ("wf/review@2#0", {"draft": "draft on cats"}, ("wf",))
    ]
    second = await stream(agent, "looks good")
    texts = [u.text for u in second if isinstance(u, TextDelta)]
    assert texts == []  # the writer did not run again
    assert calls.count == {"intake": 1, "review": 2, "publish": 1}
    third = await stream(agent, "next topic")  # a fresh turn after completion asks again
    assert [u.request_id for u in third if isinstance(u, RequestInfoUpdate)] == ["wf/review@2#0"]
    assert calls.count["intake"] == 2


async def test_the_answering_turn_returns_the_completed_response() -> None:
    agent = approval(Calls())
    session = Session()
    waiting = await agent.run("cats", session).collect()
    # What its agents produced before it asked; the history shows it until the turn ends.
    assert [m.text for m in waiting.messages] == ["draft on cats"]
    assert waiting.status == "waiting"
    assert [(r.request_id, r.path) for r in waiting.pending] == [("wf/review@2#0", ("wf",))]
    assert [m.text for m in session.get("wf#history")] == ["cats", "draft on cats"]
    done = await agent.run("ship it", session).collect()
    assert [m.text for m in done.messages] == ["draft on cats: ship it"]
    assert (done.status, done.pending) == ("completed", [])
    # The draft was not part of the workflow's answer: the history ends as an uninterrupted
    # turn's would, with the answer where it was given.
    history = [m.text for m in session.get("wf#history")]
    assert history == ["cats", "ship it", "draft on cats: ship it"]


async def test_a_typed_tool_message_answers_that_request() -> None:
    agent = approval(Calls())
    session = Session()
    await agent.run("cats", session).collect()
    answer = ChatMessage.tool_result("wf/review@2#0", json.dumps({"approved": True, "score": 9}))
    done = await agent.run(answer, session).collect()
    assert done.text == "draft on cats: {'approved': True, 'score': 9}"


async def test_a_waiting_session_survives_json_round_trip() -> None:
    agent = approval(Calls())
    session = Session(id="chat")
    await agent.run("cats", session).collect()
    restored = Session.from_json(session.to_json())
    done = await agent.run("fine", restored).collect()
    assert done.text == "draft on cats: fine"


async def test_plain_text_answers_the_oldest_of_several_requests() -> None:
    async def ask(message: Any, ctx: NodeContext) -> None:
        answer = await ctx.request_info(f"question from {ctx.node_id}")
        await ctx.yield_output(ChatMessage.assistant(f"{ctx.node_id}={answer}"))

    calls = Calls()
    agent = (
        WorkflowBuilder("wf")
        .add_fan_out(calls.forward("start"), [calls.node("a", ask), calls.node("b", ask)])
        .set_start("start")
        .build()
        .as_agent()
    )
    first = await stream(agent, "go")
    assert [u.request_id for u in first if isinstance(u, RequestInfoUpdate)] == [
        "wf/a@1#0",
        "wf/b@1#0",
    ]
    second = await stream(agent, "first answer")
    assert [u.request_id for u in second if isinstance(u, RequestInfoUpdate)] == ["wf/b@1#0"]
    assert calls.count == {"start": 1, "a": 2, "b": 1}  # b, not answered yet, did not run
    final = await agent.run("second answer").collect()
    # The whole turn's answer, as if it had never stopped.
    assert [m.text for m in final.messages] == ["a=first answer", "b=second answer"]
    assert calls.count == {"start": 1, "a": 2, "b": 2}


async def test_a_nested_request_is_reported_once_and_answered_from_the_top() -> None:
    inner_calls = Calls()
    inner = approval(inner_calls, "inner")
    outer_calls = Calls()
    outer = (
        WorkflowBuilder("outer")
        .add_edge(outer_calls.forward("prep"), inner)
        .add_edge(inner, FunctionExecutor("wrap", _wrap))
        .set_start("prep")
        .build()
        .as_agent()
    )
    session = Session()
    first = await stream(outer, "dogs", session)
    asks = [u for u in first if isinstance(u, RequestInfoUpdate)]
    assert [(u.request_id, u.path) for u in asks] == [
        ("outer/inner/review@2#0", ("outer", "inner"))
    ]
    writer_tokens = [u.path for u in first if isinstance(u, TextDelta)]
    assert writer_tokens == [("outer", "inner", "writer")]

    second = await stream(outer, "approved", session)
    assert not any(isinstance(u, TextDelta) and u.path[-1] == "writer" for u in second)
    assert inner_calls.count == {"intake": 1, "review": 2, "publish": 1}
    assert outer_calls.count == {"prep": 1}
    invoked = [
        (u.type, getattr(u, "executor_id", None), u.path)
        for u in second
        if u.type.startswith("executor")
    ]
    assert invoked == [
        ("executor_invoking", "inner", ("outer",)),
        ("executor_invoking", "review", ("outer", "inner")),
        ("executor_invoked", "review", ("outer", "inner")),
        ("executor_invoking", "publish", ("outer", "inner")),
        ("executor_invoked", "publish", ("outer", "inner")),
        ("executor_invoked", "inner", ("outer",)),
        ("executor_invoking", "wrap", ("outer",)),
        ("executor_invoked", "wrap", ("outer",)),
    ]
    assert session.keys("") and not [k for k in session.keys("") if k.endswith("#pending")]
    again = await outer.run("again", session).collect()
    assert again.status == "waiting" and [m.text for m in again.messages] == ["draft on dogs"]
    assert inner_calls.count["intake"] == 2  # a fresh turn runs the inner workflow from its start
    done = await outer.run("yes", session).collect()
    assert done.text == "wrapped: draft on dogs: yes"


async def _wrap(conversation: list[ChatMessage], ctx: NodeContext) -> None:
    await ctx.yield_output(ChatMessage.assistant(f"wrapped: {conversation[-1].text}"))


async def test_a_stale_nested_wait_does_not_leak_into_a_fresh_run() -> None:
    """A sibling failure while the inner workflow waits leaves no half-state behind."""

    failures = ["sibling broke"]

    async def fail_once(message: Any, ctx: NodeContext) -> None:
        if failures:
            await anyio.wait_all_tasks_blocked()  # the inner workflow has ended waiting by now
            raise RuntimeError(failures.pop())

    inner_calls = Calls()
    inner = approval(inner_calls, "inner")
    outer = (
        WorkflowBuilder("outer")
        .add_fan_out(
            FunctionExecutor("split", _forward), [inner, FunctionExecutor("broken", fail_once)]
        )
        .set_start("split")
        .build()
        .as_agent()
    )
    session = Session()
    with pytest.raises(Exception, match="sibling broke"):
        await outer.run("dogs", session).collect()
    # The failed turn is taken back whole: no level keeps a wait from it.
    assert [k for k in session.keys("") if k.endswith("#pending")] == []
    updates = await stream(outer, "fresh topic", session)
    asks = [u for u in updates if isinstance(u, RequestInfoUpdate)]
    assert [u.payload for u in asks] == [{"draft": "draft on fresh topic"}]
    assert inner_calls.count["intake"] == 2


async def _forward(message: Any, ctx: NodeContext) -> None:
    await ctx.send(message)


async def test_parallel_nested_requests_have_distinct_ids_and_are_answered_by_id() -> None:
    first_calls, second_calls = Calls(), Calls()
    outer = (
        WorkflowBuilder("outer")
        .add_fan_out(
            FunctionExecutor("split", _forward),
            [approval(first_calls, "first"), approval(second_calls, "second")],
        )
        .set_start("split")
        .build()
        .as_agent()
    )
    session = Session()
    updates = await stream(outer, "owls", session)
    asks = sorted((u.request_id, u.path) for u in updates if isinstance(u, RequestInfoUpdate))
    assert asks == [
        ("outer/first/review@2#0", ("outer", "first")),
        ("outer/second/review@2#0", ("outer", "second")),
    ]
    answer = ChatMessage.tool_result("outer/second/review@2#0", json.dumps("second ok"))
    partial = await stream(outer, answer, session)
    again = [u.request_id for u in partial if isinstance(u, RequestInfoUpdate)]
    assert again == ["outer/first/review@2#0"]
    assert second_calls.count["publish"] == 1 and first_calls.count["publish"] == 0
    assert first_calls.count["review"] == 1  # not answered: it did not run again
    done = await outer.run("first ok", session).collect()
    assert sorted(m.text for m in done.messages) == [
        "draft on owls: first ok",
        "draft on owls: second ok",
    ]
    history = [m.text for m in session.get("outer#history")]
    assert history.count("draft on owls: second ok") == 1
    assert first_calls.count == {"intake": 1, "review": 2, "publish": 1}
    assert second_calls.count == {"intake": 1, "review": 2, "publish": 1}


async def test_an_agent_run_checkpoints_and_its_checkpoint_resumes_directly() -> None:
    from raf.stores import MemoryCheckpointStore

    calls = Calls()
    agent = approval(calls)
    store = MemoryCheckpointStore()
    session = Session(id="chat", store=store)
    await agent.run("cats", session).collect()
    latest = await store.latest("chat")
    assert latest is not None
    checkpoint = await store.load(latest)
    assert checkpoint.data["scope"] == ["wf"]
    done = await agent.workflow.resume(latest, store, responses={"wf/review@2#0": "printed"})
    assert done.status == "completed"
    assert [m.text for m in done.outputs] == ["draft on cats: printed"]
    assert calls.count == {"intake": 1, "review": 2, "publish": 1}


def approval_then(after: Any) -> WorkflowAgent:
    """review (asks a human) -> after (the given handler)."""

    async def review(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        verdict = await ctx.request_info({"draft": conversation[-1].text})
        await ctx.send(verdict)

    return (
        WorkflowBuilder("wf")
        .add_edge(FunctionExecutor("review", review), FunctionExecutor("after", after))
        .set_start("review")
        .build()
        .as_agent()
    )


async def test_an_answering_turn_that_fails_keeps_the_run_waiting_for_the_next_answer() -> None:
    failures = ["publisher down"]

    async def publish(verdict: str, ctx: NodeContext) -> None:
        if failures:
            raise RuntimeError(failures.pop())
        await ctx.yield_output(ChatMessage.assistant(f"published: {verdict}"))

    agent = approval_then(publish)
    session = Session()
    await agent.run("draft", session).collect()
    with pytest.raises(WorkflowFailure, match="publisher down"):
        await agent.run("yes", session).collect()
    assert session.get("wf#pending") is not None
    done = await agent.run("yes again", session).collect()
    assert done.text == "published: yes again"
    assert session.get("wf#pending") is None


async def test_an_answering_turn_that_is_cancelled_keeps_the_run_waiting() -> None:
    outer = anyio.CancelScope()
    cancelled = [True]

    async def publish(verdict: str, ctx: NodeContext) -> None:
        if cancelled:
            cancelled.pop()
            outer.cancel()
            await anyio.lowlevel.checkpoint()
        await ctx.yield_output(ChatMessage.assistant(f"published: {verdict}"))

    agent = approval_then(publish)
    session = Session()
    await agent.run("draft", session).collect()
    with outer:
        await agent.run("yes", session).collect()
    assert outer.cancelled_caught
    updates = await stream(agent, "yes again", session)
    assert not [u for u in updates if isinstance(u, RequestInfoUpdate)]
    assert [u.executor_id for u in updates if isinstance(u, ExecutorInvoking)] == [
        "review",
        "after",
    ]
    assert session.get("wf#pending") is None


class _Opaque:
    """A payload with no JSON form."""


async def test_a_payload_without_a_json_form_fails_the_node_before_anything_is_asked() -> None:
    async def ask(message: Any, ctx: NodeContext) -> None:
        await ctx.request_info(_Opaque())

    agent = WorkflowBuilder("wf").add_executor(FunctionExecutor("ask", ask)).set_start("ask")
    updates: list[AgentUpdate] = []
    with pytest.raises(WorkflowFailure) as info:
        async with agent.build().as_agent().run("hi") as stream:
            updates.extend([u async for u in stream])
    error = info.value
    assert (error.executor_id, error.path) == ("ask", ("wf",))
    assert isinstance(error.__cause__, CheckpointValueError)
    assert "the payload of request 'wf/ask@0#0'" in str(error)
    assert not [u for u in updates if isinstance(u, RequestInfoUpdate)]


async def test_a_nested_workflow_waits_until_all_its_requests_are_answered() -> None:
    async def ask(message: Any, ctx: NodeContext) -> None:
        answer = await ctx.request_info(f"question from {ctx.node_id}")
        await ctx.yield_output(ChatMessage.assistant(f"{ctx.node_id}={answer}"))

    calls = Calls()
    inner = (
        WorkflowBuilder("inner")
        .add_fan_out(calls.forward("start"), [calls.node("a", ask), calls.node("b", ask)])
        .set_start("start")
        .build()
        .as_agent()
    )
    outer = (
        WorkflowBuilder("outer")
        .add_edge(FunctionExecutor("split", _forward), inner)
        .set_start("split")
        .build()
        .as_agent()
    )
    session = Session()
    first = await stream(outer, "go", session)
    assert [u.request_id for u in first if isinstance(u, RequestInfoUpdate)] == [
        "outer/inner/a@1#0",
        "outer/inner/b@1#0",
    ]
    second = await stream(outer, "answer for a", session)
    asked = [(u.request_id, u.path) for u in second if isinstance(u, RequestInfoUpdate)]
    assert asked == [("outer/inner/b@1#0", ("outer", "inner"))]
    assert calls.count == {"start": 1, "a": 1, "b": 1}  # nothing ran
    done = await outer.run("answer for b", session).collect()
    assert sorted(m.text for m in done.messages) == ["a=answer for a", "b=answer for b"]
    assert calls.count == {"start": 1, "a": 2, "b": 2}
