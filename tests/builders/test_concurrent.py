from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raf.builders import ConcurrentBuilder
from raf.errors import GraphValidationError
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.updates import AgentResponse

pytestmark = pytest.mark.anyio


async def test_same_input_to_all_and_default_aggregation_in_participant_order() -> None:
    fast_done = anyio.Event()

    async def slow(messages: list[ChatMessage]) -> str:
        await fast_done.wait()  # finishes after `fast`, yet comes first in the answer
        return f"slow got {messages[-1].text}"

    async def fast(messages: list[ChatMessage]) -> str:
        fast_done.set()
        return f"fast got {messages[-1].text}"

    workflow = (
        ConcurrentBuilder(id="c")
        .add_agent(FunctionAgent("slow", slow))
        .add_agent(FunctionAgent("fast", fast))
        .build()
    )
    with anyio.fail_after(5):
        response = await workflow.as_agent().run("q").collect()
    assert [m.text for m in response.messages] == ["slow got q", "fast got q"]


async def test_streams_interleave_attributed_by_path() -> None:
    a_started, b_started = anyio.Event(), anyio.Event()

    async def a(messages: list[ChatMessage]) -> AsyncIterator[str]:
        a_started.set()
        yield "a1 "
        await b_started.wait()
        yield "a2"

    async def b(messages: list[ChatMessage]) -> AsyncIterator[str]:
        await a_started.wait()
        yield "b1 "
        b_started.set()
        yield "b2"

    agent = (
        ConcurrentBuilder(id="c")
        .add_agent(FunctionAgent("a", a))
        .add_agent(FunctionAgent("b", b))
        .build()
        .as_agent()
    )
    with anyio.fail_after(5):
        async with agent.run("go") as stream:
            deltas = [(u.path[-1], u.text) async for u in stream if u.type == "text_delta"]
    assert deltas.index(("a", "a1 ")) < deltas.index(("b", "b1 ")) < deltas.index(("a", "a2"))
    assert [t for who, t in deltas if who == "a"] == ["a1 ", "a2"]
    assert [t for who, t in deltas if who == "b"] == ["b1 ", "b2"]


async def test_custom_aggregator_may_return_messages_or_a_value() -> None:
    def build(fn: object) -> ConcurrentBuilder:
        return (
            ConcurrentBuilder(id="c")
            .add_agent(FunctionAgent("x", lambda m: "1"))
            .add_agent(FunctionAgent("y", lambda m: "2"))
            .with_aggregator(fn)  # type: ignore[arg-type]
        )

    def total(results: dict[str, AgentResponse]) -> int:
        assert list(results) == ["x", "y"]
        return sum(int(r.text) for r in results.values())

    async def joined(results: dict[str, AgentResponse]) -> ChatMessage:
        return ChatMessage.assistant("+".join(r.text for r in results.values()), author="c")

    valued = await build(total).build().as_agent().run("go").collect()
    assert valued.value == 3 and valued.messages == []
    texted = await build(joined).build().as_agent().run("go").collect()
    assert texted.text == "1+2"


def test_ids_and_metadata() -> None:
    agent = (
        ConcurrentBuilder()
        .add_agent(FunctionAgent("x", lambda m: "1"))
        .add_agent(FunctionAgent("y", lambda m: "2"))
        .build()
        .as_agent()
    )
    assert agent.id == "workflow_concurrent_source"
    assert agent.metadata.kind == "concurrent"
    assert agent.metadata.children == ("x", "y")


@pytest.mark.parametrize("fn", ["sum", 3])
def test_an_aggregator_that_is_not_a_function_is_refused_at_the_call(fn: object) -> None:
    with pytest.raises(TypeError) as raised:
        ConcurrentBuilder(id="panel").with_aggregator(fn)  # type: ignore[arg-type]
    assert str(raised.value) == (
        "ConcurrentBuilder 'panel': with_aggregator(fn) takes a function "
        "fn(results: dict[str, AgentResponse]) returning messages or a value (or None for the "
        f"default), got the {type(fn).__name__} {fn!r}"
    )


def test_duplicate_ids_are_rejected() -> None:
    dup = ConcurrentBuilder(id="c").add_agent(FunctionAgent("x", lambda m: "1"))
    dup.add_agent(FunctionAgent("x", lambda m: "2"))
    with pytest.raises(GraphValidationError, match="same id: 'x'"):
        dup.build()


async def test_agents_may_take_the_names_of_the_workflows_own_nodes() -> None:
    builder = ConcurrentBuilder(id="c")
    for agent_id in ("dispatcher", "aggregator", "aggregator_2"):
        builder.add_agent(FunctionAgent(agent_id, lambda m, a=agent_id: f"{a} here"))
    workflow = builder.build()
    assert set(workflow.executors) == {
        "dispatcher",
        "dispatcher_2",
        "aggregator",
        "aggregator_2",
        "aggregator_3",
    }
    response = await workflow.as_agent().run("go").collect()
    assert [m.text for m in response.messages] == [
        "dispatcher here",
        "aggregator here",
        "aggregator_2 here",
    ]


async def test_a_failing_participant_cancels_the_others_and_names_itself() -> None:
    cancelled = anyio.Event()

    async def waits(messages: list[ChatMessage]) -> str:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"  # pragma: no cover

    def fails(messages: list[ChatMessage]) -> str:
        raise RuntimeError("participant broke")

    agent = (
        ConcurrentBuilder(id="c")
        .add_agent(FunctionAgent("waits", waits))
        .add_agent(FunctionAgent("fails", fails))
        .build()
        .as_agent()
    )
    from raf.errors import WorkflowError

    with anyio.fail_after(5), pytest.raises(WorkflowError) as info:
        await agent.run("go").collect()
    assert info.value.executor_id == "fails"
    assert info.value.path == ("c",)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert cancelled.is_set()


@settings(max_examples=30)
@given(
    schedules=st.lists(
        st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=6),
        min_size=2,
        max_size=5,
    )
)
async def test_random_interleavings_keep_each_stream_in_order(schedules: list[list[int]]) -> None:
    """Each participant yields to the scheduler a random number of times between chunks."""

    def streamer(index: int, pauses: list[int]) -> FunctionAgent:
        async def fn(messages: list[ChatMessage]) -> AsyncIterator[str]:
            for chunk, pause in enumerate(pauses):
                for _ in range(pause):
                    await anyio.lowlevel.checkpoint()
                yield f"{index}.{chunk} "

        return FunctionAgent(f"p{index}", fn)

    builder = ConcurrentBuilder(id="c")
    for index, pauses in enumerate(schedules):
        builder.add_agent(streamer(index, pauses))
    agent = builder.build().as_agent()
    with anyio.fail_after(10):
        async with agent.run("go") as stream:
            deltas = [(u.path, u.text) async for u in stream if u.type == "text_delta"]
        response = await agent.run("again").collect()
    for index, pauses in enumerate(schedules):
        mine = [t for path, t in deltas if path == ("c", f"p{index}")]
        assert mine == [f"{index}.{chunk} " for chunk in range(len(pauses))]
    assert len(deltas) == sum(len(p) for p in schedules)
    assert [m.author for m in response.messages] == [f"p{i}" for i in range(len(schedules))]
