"""Nested workflows checkpoint their own supersteps, and a resume continues inside them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from raf.engine import (
    CheckpointSaved,
    FunctionExecutor,
    NodeContext,
    Workflow,
    WorkflowBuilder,
)
from raf.errors import WorkflowError as WorkflowFailure
from raf.messages import ChatMessage
from raf.session import Session
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore
from tests.engine.support import Calls

pytestmark = pytest.mark.anyio


def steps(calls: Calls, workflow_id: str, failures: list[str]) -> Workflow:
    """a -> b -> c, where c fails while `failures` holds a message."""

    async def last(message: Any, ctx: NodeContext) -> None:
        if failures:
            raise RuntimeError(failures.pop())
        await ctx.yield_output(ChatMessage.assistant(f"done {text_of(message)}"))

    return (
        WorkflowBuilder(workflow_id)
        .add_edge(calls.forward("a"), calls.forward("b"))
        .add_edge("b", calls.node("c", last))
        .set_start("a")
        .build()
    )


def text_of(message: Any) -> str:
    return message if isinstance(message, str) else message[-1].text


def around(calls: Calls, inner: Workflow, workflow_id: str = "outer") -> Workflow:
    """start -> the inner workflow's agent."""
    return (
        WorkflowBuilder(workflow_id)
        .add_edge(calls.forward("start"), inner.as_agent())
        .set_start("start")
        .build()
    )


async def test_a_resume_continues_inside_the_nested_workflow_through_sqlite(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    inner_calls, outer_calls = Calls(), Calls()
    failures = ["c crashed"]

    def build() -> Workflow:
        return around(outer_calls, steps(inner_calls, "inner", failures))

    async with SqliteCheckpointStore(path) as store:
        failed = await build().run([ChatMessage.user("hi")], Session(id="s", store=store))
        assert failed.status == "failed"
        assert isinstance(failed.error, WorkflowFailure)
        saved = [e.superstep for e in failed.events if isinstance(e, CheckpointSaved)]
        assert saved == [0, 0, 0]  # after `start`; then inside superstep 1, after a and after b
    assert inner_calls.count == {"a": 1, "b": 1, "c": 1}

    async with SqliteCheckpointStore(path) as reopened:
        latest = await reopened.latest("s")
        assert latest is not None
        checkpoint = await reopened.load(latest)
        assert checkpoint.data["next"] == 1  # the outer superstep running `inner` re-runs
        assert "inner#running" in checkpoint.data["session"]
        done = await build().resume(latest, reopened)
    assert done.status == "completed"
    assert inner_calls.count == {"a": 1, "b": 1, "c": 2}  # only the failed node runs again
    assert outer_calls.count == {"start": 1}
    assert [m.text for m in done.outputs[-1].messages] == ["done hi"]


async def test_every_level_of_a_deeper_tree_continues_where_it_was() -> None:
    calls = Calls()
    failures = ["deep crash"]
    innermost = steps(calls, "inner", failures)
    middle = (
        WorkflowBuilder("middle")
        .add_edge(calls.forward("m1"), innermost.as_agent())
        .set_start("m1")
        .build()
    )
    outer = around(calls, middle)
    store = MemoryCheckpointStore()
    session = Session(id="s", store=store)
    failed = await outer.run([ChatMessage.user("hi")], session)
    assert failed.status == "failed"
    assert not [k for k in session.keys("") if k.endswith("#running")]
    latest = await store.latest("s")
    assert latest is not None
    snapshot = (await store.load(latest)).data["session"]
    assert {"middle#running", "middle/inner#running"} <= set(snapshot)
    calls.count.clear()
    done = await outer.resume(latest, store)
    assert done.status == "completed"
    assert calls.count == {"c": 1}


async def test_a_completed_run_keeps_no_running_state_and_its_last_checkpoint_none() -> None:
    calls = Calls()
    store = MemoryCheckpointStore()
    session = Session(id="s", store=store)
    result = await around(calls, steps(calls, "inner", [])).run([ChatMessage.user("x")], session)
    assert result.status == "completed"
    assert not [k for k in session.keys("") if k.endswith("#running")]
    final = await store.load(result.checkpoint_id or "")
    assert not [k for k in final.data["session"] if k.endswith("#running")]


async def test_without_a_store_nothing_is_kept_between_nested_supersteps() -> None:
    seen: list[list[str]] = []

    async def look(message: Any, ctx: NodeContext) -> None:
        seen.append([k for k in ctx.session.keys("") if k.endswith("#running")])
        await ctx.yield_output(message)

    inner = (
        WorkflowBuilder("inner")
        .add_edge(FunctionExecutor("a", _forward), FunctionExecutor("look", look))
        .set_start("a")
        .build()
    )
    outer = around(Calls(), inner)
    await outer.run([ChatMessage.user("x")], Session())
    await outer.run([ChatMessage.user("x")], Session(store=MemoryCheckpointStore()))
    assert seen == [[], ["inner#running"]]


async def _forward(message: Any, ctx: NodeContext) -> None:
    await ctx.send(message)


async def test_two_calls_of_one_nested_workflow_in_a_superstep_each_resume_their_own() -> None:
    calls = Calls()
    failures: list[str] = []
    crashes = ["second call crashed"]
    inner = steps(calls, "inner", failures).as_agent()

    async def twice(messages: list[ChatMessage], ctx: NodeContext) -> None:
        first = await ctx.invoke_agent(inner, [ChatMessage.user("one")])
        failures.extend(crashes)
        crashes.clear()
        second = await ctx.invoke_agent(inner, [ChatMessage.user("two")])
        await ctx.yield_output([first.text, second.text])

    outer = WorkflowBuilder("outer").add_executor(FunctionExecutor("twice", twice))
    workflow = outer.set_start("twice").build()
    store = MemoryCheckpointStore()
    failed = await workflow.run(None, Session(id="s", store=store))
    assert failed.status == "failed"
    calls.count.clear()
    done = await workflow.resume(await store.latest("s") or "", store)
    assert done.outputs == [["done one", "done two"]]
    # The first call ran to its end inside the superstep: it runs again from its start; the
    # second continues from its saved state.
    assert calls.count == {"a": 1, "b": 1, "c": 2}
    assert calls.inputs["c"][-1][-1].text == "two"


async def test_a_workflow_agent_checkpoints_its_nested_levels_under_its_scope() -> None:
    calls = Calls()
    failures = ["once"]
    outer = around(calls, steps(calls, "inner", failures)).as_agent()
    store = MemoryCheckpointStore()
    with pytest.raises(WorkflowFailure, match="once"):
        await outer.run("go", Session(id="chat", store=store)).collect()
    latest = await store.latest("chat")
    assert latest is not None
    checkpoint = await store.load(latest)
    assert checkpoint.data["scope"] == ["outer"]
    assert "outer/inner#running" in checkpoint.data["session"]
    calls.count.clear()
    done = await outer.workflow.resume(latest, store)
    assert done.status == "completed"
    assert calls.count == {"c": 1}


async def test_a_nested_state_from_another_graph_is_refused_naming_the_workflow() -> None:
    calls = Calls()
    store = MemoryCheckpointStore()
    failed = await around(calls, steps(calls, "inner", ["crash"])).run(
        [ChatMessage.user("x")], Session(id="s", store=store)
    )
    assert failed.status == "failed"
    changed = (
        WorkflowBuilder("inner")
        .add_edge(calls.forward("a"), calls.forward("b"))
        .add_edge("b", calls.output("d"))
        .set_start("a")
        .build()
    )
    resumed = await around(calls, changed).resume(await store.latest("s") or "", store)
    assert resumed.status == "failed"
    assert "nested workflow 'inner' from a different graph" in str(resumed.error)


async def test_calls_deeper_down_are_named_after_the_call_they_run_in() -> None:
    calls = Calls()
    failures: list[str] = []
    crashes = ["second call crashed"]
    middle = (
        WorkflowBuilder("middle")
        .add_edge(calls.forward("m1"), steps(calls, "inner", failures).as_agent())
        .set_start("m1")
        .build()
        .as_agent()
    )

    async def twice(message: Any, ctx: NodeContext) -> None:
        first = await ctx.invoke_agent(middle, [ChatMessage.user("one")])
        failures.extend(crashes)
        crashes.clear()
        second = await ctx.invoke_agent(middle, [ChatMessage.user("two")])
        await ctx.yield_output([first.text, second.text])

    workflow = (
        WorkflowBuilder("outer").add_executor(FunctionExecutor("twice", twice)).set_start("twice")
    ).build()
    store = MemoryCheckpointStore()
    failed = await workflow.run(None, Session(id="s", store=store))
    assert failed.status == "failed"
    calls.count.clear()
    done = await workflow.resume(await store.latest("s") or "", store)
    assert done.outputs == [["done one", "done two"]]
    # The first call of `middle` runs again from its start, the second continues inside.
    assert calls.count == {"m1": 1, "a": 1, "b": 1, "c": 2}
    assert [m[-1].text for m in calls.inputs["c"][-2:]] == ["one", "two"]


async def test_a_failure_after_a_nested_answer_resumes_without_asking_again() -> None:
    calls = Calls()
    failures = ["printer jammed"]

    async def review(draft: Any, ctx: NodeContext) -> None:
        verdict = await ctx.request_info({"draft": text_of(draft)})
        await ctx.send(f"{text_of(draft)}: {verdict}")

    async def publish(text: str, ctx: NodeContext) -> None:
        if failures:
            raise RuntimeError(failures.pop())
        await ctx.yield_output(ChatMessage.assistant(text))

    inner = (
        WorkflowBuilder("inner")
        .add_edge(calls.node("review", review), calls.node("publish", publish))
        .set_start("review")
        .build()
    )
    agent = around(calls, inner).as_agent()
    store = MemoryCheckpointStore()
    session = Session(id="chat", store=store)
    await agent.run("essay", session).collect()
    with pytest.raises(WorkflowFailure, match="printer jammed"):
        await agent.run("approved", session).collect()
    assert calls.count == {"start": 1, "review": 2, "publish": 1}
    done = await agent.workflow.resume(await store.latest("chat") or "", store)
    assert done.status == "completed"
    assert calls.count == {"start": 1, "review": 2, "publish": 2}
    assert [m.text for m in done.outputs[-1].messages] == ["essay: approved"]
