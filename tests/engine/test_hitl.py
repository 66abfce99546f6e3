from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from raf.engine import (
    AgentExecutor,
    NodeCompleted,
    NodeContext,
    NodeFailed,
    NodeInvoking,
    NodeStreaming,
    RequestInfo,
    Workflow,
    WorkflowBuilder,
)
from raf.engine.codec import CheckpointValueError
from raf.session import Session
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore
from raf.updates import RequestInfoUpdate
from tests.engine.support import Calls

pytestmark = pytest.mark.anyio


def text_of(message: Any) -> str:
    return message if isinstance(message, str) else message[-1].text


def review_flow(calls: Calls, workflow_id: str = "flow") -> Workflow:
    """draft -> review (asks a human) -> publish, with a parallel `audit` beside `review`."""

    async def review(draft: str, ctx: NodeContext) -> None:
        await ctx.send("sent before asking")  # dropped while waiting, sent once on the re-run
        verdict = await ctx.request_info({"draft": draft})
        await ctx.send(f"{draft} ({verdict})")

    async def publish(message: str, ctx: NodeContext) -> None:
        await ctx.yield_output(message)

    return (
        WorkflowBuilder(workflow_id)
        .add_fan_out(
            calls.forward("draft", lambda m: f"draft of {text_of(m)}"),
            [calls.node("review", review), calls.forward("audit")],
        )
        .add_edge("review", calls.node("publish", publish))
        .set_start("draft")
        .build()
    )


async def test_a_request_ends_the_run_waiting_after_its_superstep() -> None:
    calls = Calls()
    result = await review_flow(calls).run("essay", Session(store=MemoryCheckpointStore()))
    assert result.status == "waiting"
    requests = [e for e in result.events if isinstance(e, RequestInfo)]
    assert requests == [RequestInfo("review@1#0", {"draft": "draft of essay"}, node_id="review")]
    assert result.requests == tuple(requests)
    assert calls.count == {"draft": 1, "review": 1, "audit": 1}  # the sibling finished normally
    assert result.checkpoint_id is not None
    assert result.outputs == []


async def test_resuming_with_the_answer_reruns_only_the_waiting_handling() -> None:
    store = MemoryCheckpointStore()
    calls = Calls()
    waiting = await review_flow(calls).run("essay", Session(id="s", store=store))
    again = Calls()
    done = await review_flow(again).resume(
        waiting.checkpoint_id or "", store, responses={"review@1#0": "approved"}
    )
    assert done.status == "completed"
    assert done.outputs == ["sent before asking", "draft of essay (approved)"]
    assert again.count == {"review": 1, "publish": 2}


async def test_resuming_without_the_answer_asks_again_with_the_same_id() -> None:
    store = MemoryCheckpointStore()
    waiting = await review_flow(Calls()).run("essay", Session(id="s", store=store))
    still = await review_flow(Calls()).resume(waiting.checkpoint_id or "", store)
    assert still.status == "waiting"
    assert [r.request_id for r in still.requests] == ["review@1#0"]
    done = await review_flow(Calls()).resume(
        still.checkpoint_id or "", store, responses={"review@1#0": "ok"}
    )
    assert done.outputs == ["sent before asking", "draft of essay (ok)"]


async def test_later_questions_of_one_handling_get_their_own_ids_and_keep_earlier_answers() -> None:
    async def interview(message: Any, ctx: NodeContext) -> None:
        name = await ctx.request_info("name?")
        age = await ctx.request_info("age?")
        await ctx.yield_output(f"{name} is {age}")

    calls = Calls()
    workflow = (
        WorkflowBuilder("w").add_executor(calls.node("ask", interview)).set_start("ask").build()
    )
    store = MemoryCheckpointStore()
    first = await workflow.run(None, Session(id="s", store=store))
    assert [r.request_id for r in first.requests] == ["ask@0#0"]
    second = await workflow.resume(first.checkpoint_id or "", store, responses={"ask@0#0": "Ada"})
    assert [(r.request_id, r.payload) for r in second.requests] == [("ask@0#1", "age?")]
    third = await workflow.resume(second.checkpoint_id or "", store, responses={"ask@0#1": 36})
    assert third.outputs == ["Ada is 36"]
    assert calls.count["ask"] == 3


async def _ask_own_id(message: Any, ctx: NodeContext) -> None:
    answer = await ctx.request_info(ctx.node_id)
    await ctx.yield_output((ctx.node_id, answer))


def two_askers(calls: Calls) -> Workflow:
    """start fans out to `left` and `right`, which each ask for their own id and output it."""
    return (
        WorkflowBuilder("w")
        .add_fan_out(
            calls.forward("start"),
            [calls.node("left", _ask_own_id), calls.node("right", _ask_own_id)],
        )
        .set_start("start")
        .build()
    )


async def test_parallel_branches_get_distinct_ids_and_an_answered_branch_is_not_rerun() -> None:
    calls = Calls()
    workflow = two_askers(calls)
    store = MemoryCheckpointStore()
    first = await workflow.run(None, Session(id="s", store=store))
    assert [r.request_id for r in first.requests] == ["left@1#0", "right@1#0"]
    second = await workflow.resume(first.checkpoint_id or "", store, responses={"right@1#0": "R"})
    assert second.status == "waiting"
    assert [r.request_id for r in second.requests] == ["left@1#0"]
    calls.count.clear()
    third = await workflow.resume(second.checkpoint_id or "", store, responses={"left@1#0": "L"})
    assert third.status == "completed"
    assert calls.count == {"left": 1}
    assert third.outputs == [("right", "R"), ("left", "L")]


async def test_a_request_survives_a_process_restart_with_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "hitl.db"
    async with SqliteCheckpointStore(path) as store:
        waiting = await review_flow(Calls()).run("essay", Session(id="chat-9", store=store))
    assert waiting.status == "waiting"
    calls = Calls()
    async with SqliteCheckpointStore(path) as reopened:
        latest = await reopened.latest("chat-9")
        assert latest == waiting.checkpoint_id
        done = await review_flow(calls).resume(
            latest or "", reopened, responses={"review@1#0": "yes"}
        )
    assert done.outputs == ["sent before asking", "draft of essay (yes)"]
    assert calls.count == {"review": 1, "publish": 2}


async def test_a_nested_workflow_request_surfaces_with_its_path_and_resumes_inside() -> None:
    inner_calls = Calls()
    inner = review_flow(inner_calls, "inner").as_agent()

    async def to_text(message: Any, ctx: NodeContext) -> None:
        await ctx.yield_output(message)

    outer_calls = Calls()
    outer = (
        WorkflowBuilder("outer")
        .add_edge(outer_calls.forward("prep"), AgentExecutor(inner))
        .add_edge("inner", outer_calls.node("show", to_text))
        .set_start("prep")
        .build()
    )
    store = MemoryCheckpointStore()
    first = await outer.run("essay", Session(id="s", store=store))
    assert first.status == "waiting"
    assert [(r.request_id, r.node_id) for r in first.requests] == [("inner/review@1#0", "inner")]
    streamed = [e.update for e in first.events if isinstance(e, NodeStreaming)]
    asked = [u for u in streamed if isinstance(u, RequestInfoUpdate)]
    assert [(u.request_id, u.path) for u in asked] == [("inner/review@1#0", ("inner",))]
    assert inner_calls.count == {"draft": 1, "review": 1, "audit": 1}

    inner_calls.count.clear()
    outer_calls.count.clear()
    done = await outer.resume(
        first.checkpoint_id or "", store, responses={"inner/review@1#0": "fine"}
    )
    assert done.status == "completed"
    assert inner_calls.count == {"review": 1, "publish": 2}
    assert outer_calls.count == {"show": 1}
    assert [e.node_id for e in done.events if isinstance(e, NodeInvoking)] == ["inner", "show"]
    (inner_done,) = [e for e in done.events if isinstance(e, NodeCompleted)][:1]
    assert inner_done.node_id == "inner"
    assert inner_done.output.value == "draft of essay (fine)"  # the inner workflow's last output
    (conversation,) = done.outputs
    assert [m.text for m in conversation] == ["essay"]


async def test_a_payload_without_a_json_form_fails_its_node_and_asks_nothing() -> None:
    async def ask(message: Any, ctx: NodeContext) -> None:
        await ctx.request_info(object())

    workflow = WorkflowBuilder("w").add_executor(Calls().node("ask", ask)).set_start("ask").build()
    result = await workflow.run(None)
    assert result.status == "failed"
    assert not [e for e in result.events if isinstance(e, RequestInfo)]
    (failed,) = [e for e in result.events if isinstance(e, NodeFailed)]
    assert failed.node_id == "ask"
    assert isinstance(failed.error, CheckpointValueError)
    assert "the payload of request 'ask@0#0'" in str(failed.error)


async def test_resuming_runs_only_handlings_whose_requests_are_all_answered() -> None:
    calls = Calls()
    workflow = two_askers(calls)
    store = MemoryCheckpointStore()
    first = await workflow.run(None, Session(id="s", store=store))
    calls.count.clear()
    second = await workflow.resume(first.checkpoint_id or "", store, responses={"right@1#0": "R"})
    assert calls.count == {"right": 1}  # `left` has no answer yet: it does not run
    assert second.status == "waiting"
    asked = [e for e in second.events if isinstance(e, RequestInfo)]
    assert asked == [RequestInfo("left@1#0", "left", node_id="left")]
    assert second.requests == tuple(asked)
    assert second.outputs == [("right", "R")]
    nobody = await workflow.resume(second.checkpoint_id or "", store)
    assert nobody.status == "waiting" and [r.request_id for r in nobody.requests] == ["left@1#0"]
    assert calls.count == {"right": 1}
    third = await workflow.resume(nobody.checkpoint_id or "", store, responses={"left@1#0": "L"})
    assert third.status == "completed"
    assert calls.count == {"right": 1, "left": 1}
    assert third.outputs == [("right", "R"), ("left", "L")]
