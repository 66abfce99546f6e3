from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from raf.engine import (
    NodeCompleted,
    NodeContext,
    NodeFailed,
    NodeInvoking,
    NodeStreaming,
    SuperstepCompleted,
    Workflow,
    WorkflowBuilder,
    WorkflowEvent,
    WorkflowFailed,
    WorkflowOutput,
)
from raf.errors import WorkflowError as WorkflowFailure
from raf.session import Session
from raf.updates import TextDelta
from tests.engine.support import Calls, kinds
from tests.helpers import task_count

pytestmark = pytest.mark.anyio


def chain(calls: Calls, *names: str) -> Workflow:
    builder = WorkflowBuilder("chain")
    nodes = [calls.forward(name, lambda m, name=name: [*m, name]) for name in names[:-1]]
    nodes.append(calls.output(names[-1], lambda m: [*m, names[-1]]))
    for a, b in itertools.pairwise(nodes):
        builder.add_edge(a, b)
    return builder.set_start(nodes[0]).build()


async def test_a_chain_reports_events_in_order() -> None:
    calls = Calls()
    result = await chain(calls, "a", "b", "c").run([])
    assert result.status == "completed"
    assert result.outputs == [["a", "b", "c"]]
    assert kinds(result.events) == [
        ("NodeInvoking", "a"),
        ("NodeCompleted", "a"),
        ("SuperstepCompleted", 0),
        ("NodeInvoking", "b"),
        ("NodeCompleted", "b"),
        ("SuperstepCompleted", 1),
        ("NodeInvoking", "c"),
        ("WorkflowOutput", "c"),
        ("NodeCompleted", "c"),
        ("SuperstepCompleted", 2),
    ]


async def test_run_stream_gives_the_same_events_as_run() -> None:
    calls = Calls()
    workflow = chain(calls, "a", "b")
    async with workflow.run_stream([]) as events:
        streamed = [event async for event in events]
    assert kinds(streamed) == kinds((await workflow.run([])).events)


async def test_iterating_a_stream_without_entering_it_shows_the_async_with_form() -> None:
    stream = chain(Calls(), "a").run_stream([])
    with pytest.raises(TypeError, match=r"async with workflow\.run_stream"):
        async for _ in stream:  # type: ignore[attr-defined]
            pass


async def test_nodes_of_one_superstep_run_concurrently() -> None:
    arrived = {"left": anyio.Event(), "right": anyio.Event()}

    async def meet(message: Any, ctx: NodeContext) -> None:
        other = "right" if ctx.node_id == "left" else "left"
        arrived[ctx.node_id].set()
        await arrived[other].wait()  # deadlocks unless both run at once
        await ctx.yield_output(ctx.node_id)

    calls = Calls()
    workflow = (
        WorkflowBuilder("w")
        .add_fan_out(calls.forward("start"), [calls.node("left", meet), calls.node("right", meet)])
        .set_start("start")
        .build()
    )
    with anyio.fail_after(5):
        result = await workflow.run(None)
    assert result.outputs == ["left", "right"]


async def test_a_node_handles_its_messages_of_a_superstep_in_order() -> None:
    calls = Calls()
    order: list[Any] = []

    async def record(message: Any, ctx: NodeContext) -> None:
        order.append((ctx.superstep, message))

    workflow = (
        WorkflowBuilder("w")
        .add_fan_out(
            calls.forward("start"),
            [calls.forward("p", lambda m: "p"), calls.forward("q", lambda m: "q")],
        )
        .add_edge("p", calls.node("sink", record))
        .add_edge("q", "sink")
        .set_start("start")
        .build()
    )
    result = await workflow.run(None)
    assert order == [(2, "p"), (2, "q")]
    sink_events = [k for k in kinds(result.events) if k[1:] == ("sink",)]
    assert sink_events == [("NodeInvoking", "sink"), ("NodeCompleted", "sink")] * 2


async def test_node_output_is_what_handle_returns() -> None:
    calls = Calls()

    async def answer(message: Any, ctx: NodeContext) -> int:
        return message * 10

    result = (
        await WorkflowBuilder("w")
        .add_executor(calls.node("a", answer))
        .set_start("a")
        .build()
        .run(4)
    )
    completed = [e for e in result.events if isinstance(e, NodeCompleted)]
    assert completed == [NodeCompleted("a", 40)]


async def test_a_failing_node_cancels_its_sibling_promptly() -> None:
    calls = Calls()
    never = anyio.Event()
    sibling_started = anyio.Event()
    cancelled: list[str] = []

    async def wait_forever(message: Any, ctx: NodeContext) -> None:
        sibling_started.set()
        try:
            await never.wait()
        except anyio.get_cancelled_exc_class():
            cancelled.append(ctx.node_id)
            raise

    async def fail(message: Any, ctx: NodeContext) -> None:
        await sibling_started.wait()
        raise RuntimeError("boom")

    workflow = (
        WorkflowBuilder("w")
        .add_fan_out(
            calls.forward("start"), [calls.node("waiter", wait_forever), calls.node("bad", fail)]
        )
        .add_edge("waiter", calls.output("after"))
        .set_start("start")
        .build()
    )
    with anyio.fail_after(5):
        result = await workflow.run(None)
    assert result.status == "failed"
    assert cancelled == ["waiter"]
    failed, error = result.events[-2:]
    assert isinstance(failed, NodeFailed) and failed.node_id == "bad"
    assert isinstance(failed.error, RuntimeError) and str(failed.error) == "boom"
    assert isinstance(error, WorkflowFailed) and error.error is failed.error
    assert error.node_id == "bad"
    assert result.error is failed.error
    assert calls.count["after"] == 0
    assert not any(isinstance(e, SuperstepCompleted) and e.index == 1 for e in result.events)


async def test_run_stream_reports_failures_as_events_without_raising() -> None:
    async def fail(message: Any, ctx: NodeContext) -> None:
        raise ValueError("bad input")

    workflow = WorkflowBuilder("w").add_executor(Calls().node("a", fail)).set_start("a").build()
    async with workflow.run_stream(None) as events:
        seen = [event async for event in events]
    assert kinds(seen) == [("NodeInvoking", "a"), ("NodeFailed", "a"), ("WorkflowFailed", "a")]


async def test_a_single_exception_group_from_a_node_is_unwrapped() -> None:
    async def fail_in_group(message: Any, ctx: NodeContext) -> None:
        async def boom() -> None:
            raise KeyError("inner")

        async with anyio.create_task_group() as tg:
            tg.start_soon(boom)

    workflow = (
        WorkflowBuilder("w").add_executor(Calls().node("a", fail_in_group)).set_start("a").build()
    )
    result = await workflow.run(None)
    assert isinstance(result.error, KeyError)


async def test_exceeding_the_superstep_bound_fails_naming_the_node() -> None:
    calls = Calls()
    workflow = (
        WorkflowBuilder("loop")
        .add_edge(calls.forward("ping"), calls.forward("pong"))
        .add_edge("pong", "ping")
        .set_start("ping")
        .set_max_supersteps(5)
        .build()
    )
    result = await workflow.run(0)
    assert result.status == "failed"
    error = result.error
    assert isinstance(error, WorkflowFailure)
    assert error.executor_id == "pong"
    assert "bound of 5 supersteps" in str(error) and "['pong']" in str(error)
    assert calls.count == {"ping": 3, "pong": 2}
    assert [e.index for e in result.events if isinstance(e, SuperstepCompleted)] == [0, 1, 2, 3, 4]


async def test_a_loop_that_ends_within_the_bound_completes() -> None:
    calls = Calls()

    async def write(draft: int, ctx: NodeContext) -> None:
        await ctx.send(draft + 1)

    async def review(draft: int, ctx: NodeContext) -> None:
        if draft >= 3:
            await ctx.yield_output(draft)
        else:
            await ctx.send(draft, to="write")

    workflow = (
        WorkflowBuilder("loop")
        .add_edge(calls.node("write", write), calls.node("review", review))
        .add_edge("review", "write")
        .set_start("write")
        .set_max_supersteps(50)
        .build()
    )
    result = await workflow.run(0)
    assert result.outputs == [3]
    assert calls.count == {"write": 3, "review": 3}


async def test_sending_to_a_node_that_is_not_a_successor_fails_the_node() -> None:
    calls = Calls()

    async def misroute(message: Any, ctx: NodeContext) -> None:
        await ctx.send(message, to="c")

    workflow = (
        WorkflowBuilder("w")
        .add_edge(calls.node("a", misroute), calls.output("b"))
        .add_edge("b", calls.output("c"))
        .set_start("a")
        .build()
    )
    result = await workflow.run(1)
    error = result.error
    assert isinstance(error, ValueError)
    assert "node 'a' cannot send to 'c'" in str(error) and "['b']" in str(error)


async def test_messages_sent_by_a_terminal_node_are_dropped() -> None:
    calls = Calls()
    result = (
        await WorkflowBuilder("w")
        .add_executor(calls.forward("end"))
        .set_start("end")
        .build()
        .run(1)
    )
    assert result.status == "completed" and result.outputs == []


async def test_emit_in_a_direct_run_becomes_node_streaming_with_the_update_unchanged() -> None:
    async def talk(message: Any, ctx: NodeContext) -> None:
        await ctx.emit(TextDelta(text="hi"))

    workflow = (
        WorkflowBuilder("w").add_executor(Calls().node("talker", talk)).set_start("talker").build()
    )
    result = await workflow.run(None)
    streamed = [e for e in result.events if isinstance(e, NodeStreaming)]
    assert streamed == [NodeStreaming("talker", TextDelta(text="hi"))]


async def test_node_state_belongs_to_the_session() -> None:
    async def count(message: Any, ctx: NodeContext) -> None:
        ctx.state["n"] = ctx.state.get("n", 0) + 1
        await ctx.yield_output(ctx.state["n"])

    workflow = (
        WorkflowBuilder("w")
        .add_executor(Calls().node("counter", count))
        .set_start("counter")
        .build()
    )
    mine, yours = Session(), Session()
    assert (await workflow.run(None, mine)).outputs == [1]
    assert (await workflow.run(None, mine)).outputs == [2]
    assert (await workflow.run(None, yours)).outputs == [1]
    assert mine.get("counter#state") == {"n": 2}
    assert (await workflow.run(None)).outputs == [1]


async def test_concurrent_runs_of_one_workflow_do_not_share_state() -> None:
    gate = anyio.Event()

    async def count(message: Any, ctx: NodeContext) -> None:
        ctx.state["seen"] = [*ctx.state.get("seen", []), message]
        await gate.wait()
        await ctx.send(message)

    calls = Calls()
    workflow = (
        WorkflowBuilder("w")
        .add_edge(calls.node("count", count), calls.output("out"))
        .set_start("count")
        .build()
    )
    sessions = [Session(id=f"s{i}") for i in range(5)]
    results: dict[int, Any] = {}

    async def one(i: int) -> None:
        results[i] = await workflow.run(i, sessions[i])

    async with anyio.create_task_group() as tg:
        for i in range(5):
            tg.start_soon(one, i)
        await anyio.wait_all_tasks_blocked()
        gate.set()
    assert {i: r.outputs for i, r in results.items()} == {i: [i] for i in range(5)}
    assert [s.get("count#state") for s in sessions] == [{"seen": [i]} for i in range(5)]


async def test_leaving_a_stream_early_cancels_the_running_node_and_leaks_no_task() -> None:
    started = anyio.Event()
    cancelled = anyio.Event()

    async def slow(message: Any, ctx: NodeContext) -> None:
        await ctx.yield_output("first")
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise

    workflow = (
        WorkflowBuilder("w").add_executor(Calls().node("slow", slow)).set_start("slow").build()
    )
    before = task_count()
    seen: list[WorkflowEvent] = []
    with anyio.fail_after(5):
        async with workflow.run_stream(None) as events:
            async for event in events:
                seen.append(event)
                if isinstance(event, WorkflowOutput):
                    break
        assert cancelled.is_set()
    assert started.is_set()
    assert [type(e) for e in seen] == [NodeInvoking, WorkflowOutput]
    assert task_count() == before


async def test_an_error_of_the_run_itself_is_raised_from_the_stream() -> None:
    workflow = chain(Calls(), "a")

    class BrokenStore:
        async def load(self, checkpoint_id: str) -> Any:
            raise KeyError(f"no checkpoint {checkpoint_id!r}")

    with pytest.raises(KeyError, match="nope"):
        async with workflow.resume_stream("nope", BrokenStore()) as events:  # type: ignore[arg-type]
            async for _ in events:
                pass


async def test_an_agent_node_streams_its_items_with_paths_relative_to_the_workflow() -> None:
    from raf.engine import AgentExecutor
    from raf.function_agent import FunctionAgent
    from raf.updates import AgentResponse, MessageCompleted

    writer = FunctionAgent("writer", lambda m: "hello")
    workflow = (
        WorkflowBuilder("w")
        .add_executor(AgentExecutor(writer, id="node"))
        .set_start("node")
        .build()
    )
    result = await workflow.run("hi")
    streamed = [
        (e.node_id, type(e.update).__name__, e.update.path)
        for e in result.events
        if isinstance(e, NodeStreaming)
    ]
    assert streamed == [
        ("node", "TextDelta", ("writer",)),
        ("node", "MessageCompleted", ("writer",)),
    ]
    (completed,) = [e for e in result.events if isinstance(e, NodeCompleted)]
    assert isinstance(completed.output, AgentResponse) and completed.output.text == "hello"
    assert [r.text for r in result.outputs] == [
        "hello"
    ]  # a terminal agent node yields its response
    assert not any(
        isinstance(e.update, MessageCompleted) and e.update.path != ("writer",)
        for e in result.events
        if isinstance(e, NodeStreaming)
    )


def spinning(calls: Calls, until: Any = lambda: False) -> Workflow:
    """One node sending to itself without ever waiting, until `until()` is true."""

    async def spin(n: int, ctx: NodeContext) -> None:
        if until():
            await ctx.yield_output(n)
        else:
            await ctx.send(n + 1)

    return (
        WorkflowBuilder("spin")
        .add_edge(calls.node("spin", spin), "spin")
        .set_start("spin")
        .set_max_supersteps(LONG_LOOP)
        .build()
    )


LONG_LOOP = 300_000
"""Supersteps that take seconds: far more than a short deadline allows."""


async def test_a_deadline_stops_a_loop_of_nodes_that_never_wait() -> None:
    calls = Calls()
    with anyio.move_on_after(0.05) as scope:
        await spinning(calls).run(0)
    assert scope.cancelled_caught
    assert 0 < calls.count["spin"] < LONG_LOOP


async def test_other_tasks_run_while_a_loop_of_nodes_spins() -> None:
    done = anyio.Event()
    calls = Calls()
    outcome: list[Any] = []

    async def other_task() -> None:
        done.set()

    async def loop() -> None:
        outcome.append(await spinning(calls, done.is_set).run(0))

    async with anyio.create_task_group() as tg:
        tg.start_soon(loop)
        tg.start_soon(other_task)
    assert outcome[0].status == "completed"
    assert calls.count["spin"] < LONG_LOOP
