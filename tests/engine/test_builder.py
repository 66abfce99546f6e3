from __future__ import annotations

from typing import Any

import pytest

from raf.engine import (
    AgentExecutor,
    FunctionExecutor,
    NodeContext,
    SuperstepCompleted,
    WorkflowBuilder,
)
from raf.errors import GraphValidationError
from raf.function_agent import FunctionAgent
from tests.engine.support import Calls

pytestmark = pytest.mark.anyio


async def test_direct_edge_delivers_to_its_target_next_superstep() -> None:
    calls = Calls()
    seen: list[tuple[str, int]] = []

    async def first(message: Any, ctx: NodeContext) -> None:
        seen.append((ctx.node_id, ctx.superstep))
        await ctx.send(message + 1)

    async def second(message: Any, ctx: NodeContext) -> None:
        seen.append((ctx.node_id, ctx.superstep))
        await ctx.yield_output(message)

    a, b = calls.node("a", first), calls.node("b", second)
    result = await WorkflowBuilder("w").add_edge(a, b).set_start(a).build().run(1)
    assert result.status == "completed"
    assert result.outputs == [2]
    assert seen == [("a", 0), ("b", 1)]


async def test_conditional_edge_takes_only_messages_where_the_condition_holds() -> None:
    calls = Calls()

    async def spray(message: Any, ctx: NodeContext) -> None:
        for n in range(5):
            await ctx.send(n)

    source = calls.node("source", spray)
    evens = calls.output("evens", lambda n: ("even", n))
    odds = calls.output("odds", lambda n: ("odd", n))
    workflow = (
        WorkflowBuilder("w")
        .add_edge(source, evens, condition=lambda n: n % 2 == 0)
        .add_edge(source, odds, condition=lambda n: n % 2 == 1)
        .set_start(source)
        .build()
    )
    result = await workflow.run(None)
    assert sorted(result.outputs) == [("even", 0), ("even", 2), ("even", 4), ("odd", 1), ("odd", 3)]
    assert calls.inputs["evens"] == [0, 2, 4]
    assert calls.inputs["odds"] == [1, 3]


async def test_fan_out_sends_every_message_to_all_targets() -> None:
    calls = Calls()
    source = calls.forward("source")
    targets = [calls.output(name, lambda m, name=name: (name, m)) for name in ("x", "y", "z")]
    workflow = WorkflowBuilder("w").add_fan_out(source, targets).set_start(source).build()
    result = await workflow.run("hi")
    assert result.outputs == [("x", "hi"), ("y", "hi"), ("z", "hi")]
    assert calls.count == {"source": 1, "x": 1, "y": 1, "z": 1}


async def test_fan_in_runs_the_target_once_with_the_sources_messages_in_source_order() -> None:
    calls = Calls()
    start = calls.forward("start")
    slow_1 = calls.forward("slow_1")
    slow = calls.forward("slow", lambda m: f"slow:{m}")
    fast = calls.forward("fast", lambda m: f"fast:{m}")
    join = calls.output("join")
    workflow = (
        WorkflowBuilder("w")
        .add_fan_out(start, [slow_1, fast])
        .add_edge(slow_1, slow)
        .add_fan_in([slow, fast], join)  # `slow` sends one superstep after `fast`
        .set_start(start)
        .build()
    )
    result = await workflow.run("m")
    assert result.outputs == [["slow:m", "fast:m"]]
    assert calls.count["join"] == 1
    completed = [e.index for e in result.events if isinstance(e, SuperstepCompleted)]
    assert completed == [0, 1, 2, 3]


async def test_switch_takes_the_first_matching_case_else_the_default() -> None:
    calls = Calls()

    async def spray(message: Any, ctx: NodeContext) -> None:
        for n in (5, 50, 500, -1):
            await ctx.send(n)

    source = calls.node("source", spray)
    small = calls.output("small", lambda n: ("small", n))
    medium = calls.output("medium", lambda n: ("medium", n))
    other = calls.output("other", lambda n: ("other", n))
    workflow = (
        WorkflowBuilder("w")
        .add_switch(
            source,
            [(lambda n: 0 <= n < 10, small), (lambda n: 0 <= n < 100, medium)],
            default=other,
        )
        .set_start(source)
        .build()
    )
    result = await workflow.run(None)
    assert calls.inputs == {
        "source": [None],
        "small": [5],
        "medium": [50],
        "other": [500, -1],
    }
    assert ("small", 5) in result.outputs and ("medium", 50) in result.outputs


async def test_switch_without_default_drops_messages_no_case_takes() -> None:
    calls = Calls()

    async def spray(message: Any, ctx: NodeContext) -> None:
        for n in (1, 2, 3):
            await ctx.send(n)

    source = calls.node("source", spray)
    two = calls.output("two")
    workflow = (
        WorkflowBuilder("w").add_switch(source, [(lambda n: n == 2, two)]).set_start(source).build()
    )
    assert (await workflow.run(None)).outputs == [2]


async def test_send_to_restricts_delivery_to_one_successor() -> None:
    calls = Calls()

    async def pick(message: Any, ctx: NodeContext) -> None:
        await ctx.send(message, to="right")

    source = calls.node("source", pick)
    left, right = calls.output("left"), calls.output("right")
    workflow = WorkflowBuilder("w").add_fan_out(source, [left, right]).set_start(source).build()
    result = await workflow.run("only right")
    assert result.outputs == ["only right"]
    assert calls.count["left"] == 0


async def test_edges_accept_ids_executors_and_agents() -> None:
    calls = Calls()
    first = calls.forward("first")
    agent = FunctionAgent("echo", lambda m: m[-1].text.upper())
    builder = WorkflowBuilder("w").add_executor(first).add_edge("first", agent).set_start("first")
    builder.add_edge(agent, calls.output("last", lambda m: m[-1].text))
    workflow = builder.build()
    assert list(workflow.executors) == ["first", "echo", "last"]
    node = workflow.executors["echo"]
    assert isinstance(node, AgentExecutor) and node.as_agent() is agent
    assert (await workflow.run("hi")).outputs == ["HI"]


def test_an_agent_used_in_several_edges_is_one_node() -> None:
    a = FunctionAgent("a", lambda m: "A")
    b = FunctionAgent("b", lambda m: "B")
    c = FunctionAgent("c", lambda m: "C")
    workflow = (
        WorkflowBuilder("w").add_edge(a, b).add_edge(a, c).add_edge(b, c).set_start(a).build()
    )
    assert list(workflow.executors) == ["a", "b", "c"]
    assert workflow.successors["a"] == frozenset({"b", "c"})


def test_the_builder_stays_mutable_and_the_workflow_does_not_change() -> None:
    calls = Calls()
    a, b = calls.forward("a"), calls.output("b")
    builder = WorkflowBuilder("w").add_edge(a, b).set_start(a)
    first = builder.build()
    builder.add_edge(b, calls.output("c"))
    second = builder.build()
    assert list(first.executors) == ["a", "b"]
    assert list(second.executors) == ["a", "b", "c"]
    assert first.fingerprint != second.fingerprint
    with pytest.raises(TypeError):
        first.executors["x"] = a  # type: ignore[index]


def test_bad_arguments_fail_right_away() -> None:
    calls = Calls()
    a = calls.forward("a")
    with pytest.raises(GraphValidationError, match="at least 1"):
        WorkflowBuilder("w").set_max_supersteps(0)
    with pytest.raises(GraphValidationError, match="at least one"):
        WorkflowBuilder("w").add_fan_out(a, [])
    with pytest.raises(GraphValidationError, match="more than once") as info:
        WorkflowBuilder("w").add_fan_in([a, "a"], "b")
    assert info.value.ids == ("a",)
    with pytest.raises(GraphValidationError, match="at least one"):
        WorkflowBuilder("w").add_switch(a, [])
    with pytest.raises(TypeError, match="node id, an Executor or an IAgent"):
        WorkflowBuilder("w").add_edge(a, 42)  # type: ignore[arg-type]


def test_function_executor_needs_an_async_function() -> None:
    with pytest.raises(TypeError, match="async function"):
        FunctionExecutor("sync", lambda message, ctx: None)  # type: ignore[arg-type, return-value]

    class Handler:
        async def __call__(self, message: Any, ctx: NodeContext) -> None:
            return None

    assert FunctionExecutor("callable", Handler()).id == "callable"


async def test_fan_in_collects_everything_its_sources_sent_in_one_superstep() -> None:
    calls = Calls()

    async def burst(message: Any, ctx: NodeContext) -> None:
        for n in range(3):
            await ctx.send(f"{ctx.node_id}{n}")

    workflow = (
        WorkflowBuilder("w")
        .add_fan_out(calls.forward("start"), [calls.node("p", burst), calls.node("q", burst)])
        .add_fan_in(["q", "p"], calls.output("join"))
        .set_start("start")
        .build()
    )
    result = await workflow.run(None)
    assert result.outputs == [["q0", "q1", "q2", "p0", "p1", "p2"]]
    assert calls.count["join"] == 1
