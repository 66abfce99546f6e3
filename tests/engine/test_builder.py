from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


def test_one_node_where_a_list_of_nodes_belongs_is_refused_at_the_call() -> None:
    a, b = FunctionAgent("a", lambda m: "A"), FunctionAgent("b", lambda m: "B")
    with pytest.raises(TypeError) as raised:
        WorkflowBuilder("w").add_fan_out(a, b)  # type: ignore[arg-type]
    assert str(raised.value) == (
        "add_fan_out('a', targets): targets must be a list of nodes, got the FunctionAgent "
        "'b'; for one node, pass a list of it: [node]"
    )
    with pytest.raises(TypeError, match=r"sources must be a list of nodes, got the Function"):
        WorkflowBuilder("w").add_fan_in(Calls().forward("x"), b)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"targets must be a list of nodes, got the int 3$"):
        WorkflowBuilder("w").add_fan_out(a, 3)  # type: ignore[arg-type]


def test_a_class_or_a_workflow_where_a_node_belongs_says_what_to_pass() -> None:
    with pytest.raises(TypeError) as raised:
        WorkflowBuilder("w").add_executor(FunctionAgent)  # type: ignore[arg-type]
    assert str(raised.value) == (
        "workflow 'w': a node is a node id, an Executor or an IAgent, got the class "
        "FunctionAgent; pass an instance, e.g. FunctionAgent('my_id', ...)"
    )
    inner = WorkflowBuilder("inner").add_executor(FunctionAgent("a", lambda m: "A"))
    with pytest.raises(TypeError, match=r"got the Workflow 'inner'; pass workflow\.as_agent\(\)"):
        WorkflowBuilder("w").add_edge("x", inner.set_start("a").build())  # type: ignore[arg-type]


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


def is_big(n: int) -> bool:
    return n > 10


def is_even(n: int) -> bool:
    return n % 2 == 0


def duplicate_builders(calls: Calls) -> dict[str, Callable[[], WorkflowBuilder]]:
    """Builder calls each declaring a second route a -> b."""
    a, b = calls.forward("a"), calls.output("b")
    other = calls.output("other")
    return {
        "edge twice": lambda: WorkflowBuilder("w").add_edge(a, b).add_edge("a", "b"),
        "edge and fan-out": lambda: WorkflowBuilder("w").add_edge(a, b).add_fan_out("a", ["b"]),
        "fan-out and edge": lambda: WorkflowBuilder("w").add_fan_out(a, [other, b]).add_edge(a, b),
        "switch default and edge": lambda: (
            WorkflowBuilder("w").add_switch(a, [(is_big, other)], default=b).add_edge(a, b)
        ),
        "edge and switch case": lambda: (
            WorkflowBuilder("w").add_edge(a, b, is_even).add_switch(a, [(is_big, b)])
        ),
        "fan-in and edge": lambda: WorkflowBuilder("w").add_fan_in([a, other], b).add_edge(a, b),
        "conditional and unconditional": lambda: (
            WorkflowBuilder("w").add_edge(a, b, is_big).add_edge(a, b)
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "edge twice",
        "edge and fan-out",
        "fan-out and edge",
        "switch default and edge",
        "edge and switch case",
        "fan-in and edge",
        "conditional and unconditional",
    ],
)
def test_a_second_route_between_the_same_nodes_is_refused(case: str) -> None:
    with pytest.raises(GraphValidationError, match="already routes 'a' -> 'b'") as info:
        duplicate_builders(Calls())[case]()
    assert info.value.ids == ("a", "b")
    assert "twice" in str(info.value)


def test_two_conditional_edges_to_one_target_are_refused_with_a_way_out() -> None:
    calls = Calls()
    builder = WorkflowBuilder("w").add_edge(calls.forward("a"), calls.output("b"), is_big)
    with pytest.raises(GraphValidationError, match="already has a conditional edge") as info:
        builder.add_edge("a", "b", is_even)
    assert info.value.ids == ("a", "b")
    message = str(info.value)
    assert "'is_big'" in message and "'is_even'" in message
    assert "combines them" in message and "add_switch" in message


async def test_a_refused_route_leaves_the_builder_as_it_was() -> None:
    calls = Calls()
    builder = WorkflowBuilder("w").add_edge(calls.forward("a"), calls.output("b"))
    with pytest.raises(GraphValidationError):
        builder.add_fan_out("a", [calls.output("c"), "b"])
    builder.add_edge("a", "c")
    result = await builder.set_start("a").build().run(1)
    assert sorted(result.outputs) == [1, 1]
    assert calls.count == {"a": 1, "b": 1, "c": 1}


async def test_one_switch_may_list_a_target_under_several_cases_and_as_default() -> None:
    calls = Calls()

    async def spray(message: Any, ctx: NodeContext) -> None:
        for n in (4, 12, 7):
            await ctx.send(n)

    workflow = (
        WorkflowBuilder("w")
        .add_switch(
            calls.node("a", spray),
            [(is_big, calls.output("b")), (is_even, calls.output("c")), (is_even, "b")],
            default="b",
        )
        .set_start("a")
        .build()
    )
    await workflow.run(None)
    assert calls.inputs == {"a": [None], "b": [12, 7], "c": [4]}


@st.composite
def route_calls(draw: st.DrawFn) -> list[tuple[str, tuple[str, ...]]]:
    """Builder calls from `a` to some of b, c, d: ("edge" | "fan_out" | "switch", targets)."""
    targets = st.sampled_from(["b", "c", "d"])
    call = st.one_of(
        st.tuples(st.just("edge"), st.tuples(targets)),
        st.tuples(st.just("fan_out"), st.lists(targets, min_size=1, unique=True).map(tuple)),
        st.tuples(st.just("switch"), st.lists(targets, min_size=1, max_size=4).map(tuple)),
    )
    return draw(st.lists(call, max_size=6))


def always(message: Any) -> bool:
    return True


@given(route_calls())
def test_the_builder_accepts_exactly_the_routes_that_deliver_each_message_once(
    declared: list[tuple[str, tuple[str, ...]]],
) -> None:
    calls = Calls()
    builder = WorkflowBuilder("w").add_executor(calls.forward("a")).set_start("a")
    for name in "bcd":
        builder.add_executor(calls.output(name))
    routed: set[str] = set()
    expected: list[str] = []
    for kind, targets in declared:
        clash = routed & set(targets)
        try:
            if kind == "edge":
                builder.add_edge("a", targets[0])
            elif kind == "fan_out":
                builder.add_fan_out("a", list(targets))
            else:  # the first case always holds; the others and the default never get a message
                cases = [(always, target) for target in targets[: max(1, len(targets) - 1)]]
                builder.add_switch("a", cases, default=targets[-1] if len(targets) > 1 else None)
        except GraphValidationError as error:
            assert clash, "refused a route to nodes not routed yet"
            assert error.ids[0] == "a" and error.ids[1] in clash
            continue
        assert not clash, f"accepted a second route to {clash}"
        routed.update(targets)
        expected.extend(targets[:1] if kind == "switch" else targets)
    outbox: list[Any] = []
    for route in builder.build(check_structure=False).routes["a"]:
        route.deliver("m", None, outbox)
    assert sorted(target for target, _ in outbox) == sorted(expected)
    assert len(set(expected)) == len(expected)


def test_a_condition_that_is_not_callable_is_refused_naming_the_edge() -> None:
    calls = Calls()
    builder = WorkflowBuilder("w").add_executor(calls.forward("a")).set_start("a")
    with pytest.raises(
        TypeError, match=r"add_edge\('a', 'b'\): condition must be a function"
    ) as info:
        builder.add_edge("a", calls.output("b"), condition="yes")  # type: ignore[arg-type]
    assert "got the str 'yes'" in str(info.value)
    assert list(builder.build(check_structure=False).executors) == ["a"]


@pytest.mark.parametrize("bad", ["3", 2.0, True, None])
def test_max_supersteps_must_be_an_int(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"workflow 'w': set_max_supersteps\(n\) takes an int"):
        WorkflowBuilder("w").set_max_supersteps(bad)


def test_malformed_switch_cases_are_refused_naming_the_source() -> None:
    calls = Calls()
    a, b = calls.forward("a"), calls.output("b")
    with pytest.raises(
        TypeError,
        match=r"add_switch\('a'\): case 0 must be a \(condition, target\) pair, got the FunctionExecutor 'b'",
    ):
        WorkflowBuilder("w").add_switch(a, [b])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"add_switch\('a'\): case 1 must be a"):
        WorkflowBuilder("w").add_switch(a, [(is_big, b), (is_big, b, "extra")])  # type: ignore[list-item]
    with pytest.raises(
        TypeError, match=r"add_switch\('a'\): the condition of case 0 must be a function"
    ):
        WorkflowBuilder("w").add_switch(a, [("big", b)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"add_switch\('a'\): cases must be a list"):
        WorkflowBuilder("w").add_switch(a, "b")  # type: ignore[arg-type]


def test_a_string_where_a_list_of_nodes_belongs_is_refused() -> None:
    calls = Calls()
    with pytest.raises(TypeError, match=r"add_fan_out\('a', targets\): targets must be a list"):
        WorkflowBuilder("w").add_fan_out(calls.forward("a"), "bc")
    with pytest.raises(TypeError, match=r"add_fan_in\(sources, 'j'\): sources must be a list"):
        WorkflowBuilder("w").add_fan_in("ab", calls.output("j"))
