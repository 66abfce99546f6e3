"""Workflows nested in workflows: random trees against a reference interpretation."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator

import anyio
import pytest
from hypothesis import given, settings

from raf.agent import IAgent
from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.errors import WorkflowError
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.session import Session
from raf.updates import AgentUpdate, ExecutorInvoked, ExecutorInvoking
from tests.helpers import task_count
from tests.strategies import Spec, build, reference, tree_paths, trees

pytestmark = pytest.mark.anyio


async def _stream(agent: IAgent, text: str, session: Session | None = None) -> list[AgentUpdate]:
    async with agent.run(text, session) as stream:
        return [u async for u in stream]


@settings(max_examples=40)
@given(spec=trees())
async def test_random_trees_match_the_reference(spec: Spec) -> None:
    agent = build(spec)
    question = [ChatMessage.user("q")]
    items = await _stream(agent, "q")
    response = await build(spec).run("q").collect()
    expected = reference(spec, question)
    assert response.messages == expected

    paths = tree_paths(agent)
    assert all(item.path in paths for item in items)
    leaves = {p for p in paths if not agent_at(agent, p).metadata.children}
    assert all(item.path in leaves for item in items if item.type == "text_delta")

    invoking = Counter((i.path, i.executor_id) for i in items if isinstance(i, ExecutorInvoking))
    invoked = Counter((i.path, i.executor_id) for i in items if isinstance(i, ExecutorInvoked))
    assert invoking == invoked
    open_steps: set[tuple[tuple[str, ...], str]] = set()
    for item in items:
        if isinstance(item, ExecutorInvoking):
            open_steps.add((item.path, item.executor_id))
        elif isinstance(item, ExecutorInvoked):
            assert (item.path, item.executor_id) in open_steps
            open_steps.discard((item.path, item.executor_id))

    completed = [i.message for i in items if i.type == "message_completed"]
    texts = {m.text for m in completed}
    assert {m.text for m in expected} <= texts


def agent_at(root: IAgent, path: tuple[str, ...]) -> IAgent:
    agent = root
    for part in path[1:]:
        child = agent.get_subagent(part)
        assert child is not None
        agent = child
    return agent


@settings(max_examples=25)
@given(spec=trees(max_leaves=10))
async def test_reset_then_rerun_equals_a_fresh_tree(spec: Spec) -> None:
    agent = build(spec)
    first = await agent.run("q").collect()
    await agent.run("again").collect()
    await agent.reset()
    after_reset = await agent.run("q").collect()
    fresh = await build(spec).run("q").collect()
    assert after_reset == fresh == first


def _deep_tree(leaf: FunctionAgent, other: FunctionAgent) -> IAgent:
    level3 = ConcurrentBuilder(id="c3").add_agent(leaf).add_agent(other).build().as_agent()
    level2 = SequentialBuilder(id="s2").add_agent(level3).build().as_agent()
    level1 = ConcurrentBuilder(id="c1").add_agent(level2).build().as_agent()
    return SequentialBuilder(id="s0").add_agent(level1).build().as_agent()


async def test_tokens_of_a_deep_leaf_carry_the_full_path() -> None:
    root = _deep_tree(FunctionAgent("w", lambda m: "deep"), FunctionAgent("v", lambda m: "x"))
    items = await _stream(root, "go")
    deltas = {(i.path, i.text) for i in items if i.type == "text_delta"}
    assert (("s0", "c1", "s2", "c3", "w"), "deep") in deltas
    assert (("s0", "c1", "s2", "c3", "v"), "x") in deltas


async def test_failure_deep_inside_names_the_full_path() -> None:
    def broken(messages: list[ChatMessage]) -> str:
        raise KeyError("missing")

    root = _deep_tree(FunctionAgent("w", broken), FunctionAgent("v", lambda m: "x"))
    with pytest.raises(WorkflowError) as info:
        await root.run("go").collect()
    error = info.value
    assert (*error.path, error.executor_id) == ("s0", "c1", "s2", "c3", "w")
    assert isinstance(error.__cause__, KeyError)
    assert "s0/c1/s2/c3" in str(error) and "'w'" in str(error)


async def test_leaving_early_cancels_every_leaf_of_a_depth_4_tree() -> None:
    started = 0
    cancelled = 0
    all_started = anyio.Event()

    def blocking(agent_id: str) -> FunctionAgent:
        async def fn(messages: list[ChatMessage]) -> AsyncIterator[str]:
            nonlocal started, cancelled
            yield f"{agent_id} started"
            started += 1
            if started == 4:
                all_started.set()
            try:
                await anyio.sleep_forever()
            finally:
                cancelled += 1
            yield "never"  # pragma: no cover

        return FunctionAgent(agent_id, fn)

    def branch(n: int) -> IAgent:
        inner = (
            ConcurrentBuilder(id=f"c{n}")
            .add_agent(blocking(f"a{n}"))
            .add_agent(blocking(f"b{n}"))
            .build()
        )
        return SequentialBuilder(id=f"s{n}").add_agent(inner.as_agent()).build().as_agent()

    root = ConcurrentBuilder(id="root").add_agent(branch(1)).add_agent(branch(2)).build()
    before = task_count()
    with anyio.fail_after(5):
        async with root.as_agent().run("go") as stream:
            async for update in stream:
                if update.type == "text_delta":
                    await all_started.wait()
                    break
    assert started == 4 and cancelled == 4
    assert task_count() == before


async def test_one_workflow_serves_many_sessions_at_once() -> None:
    # The gate opens only once all 8 first turns are inside the workflow at the same time:
    # runs that were serialised would never get there, and fail_after would end the test.
    gate = anyio.Event()
    arrived = 0

    async def remember(messages: list[ChatMessage]) -> str:
        nonlocal arrived
        arrived += 1
        if arrived == len(sessions):
            gate.set()
        await gate.wait()
        return "|".join(m.text for m in messages if m.role == "user")

    agent = (
        SequentialBuilder(id="s")
        .add_agent(FunctionAgent("a", remember))
        .add_agent(FunctionAgent("b", lambda m: f"b saw {len(m)}"))
        .build()
        .as_agent()
    )
    sessions = [Session() for _ in range(8)]
    results: dict[int, list[str]] = {}

    async def converse(i: int) -> None:
        first = await agent.run(f"s{i}-1", sessions[i]).collect()
        second = await agent.run(f"s{i}-2", sessions[i]).collect()
        results[i] = [first.messages[0].text, second.messages[0].text]

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for i in range(len(sessions)):
                tg.start_soon(converse, i)
    for i in range(len(sessions)):
        assert results[i] == [f"s{i}-1", f"s{i}-1|s{i}-2"]


async def test_reset_reaches_every_participant() -> None:
    leaf = FunctionAgent("leaf", lambda m: str(len(m)))
    inner = SequentialBuilder(id="inner").add_agent(leaf).build().as_agent()
    outer = SequentialBuilder(id="outer").add_agent(inner).build().as_agent()
    await leaf.run("direct").collect()
    assert (await leaf.run("direct").collect()).text == "3"
    await outer.run("x").collect()
    await outer.reset()
    assert (await leaf.run("direct").collect()).text == "1"
    assert (await outer.run("x").collect()).text == "1"


class ForeignAgent:
    """An IAgent written without raf's base class: it wraps a FunctionAgent's run()."""

    def __init__(self, agent_id: str) -> None:
        self._inner = FunctionAgent(agent_id, lambda m: f"{agent_id} saw {len(m)}")

    @property
    def id(self) -> str:
        return self._inner.id

    @property
    def metadata(self):  # type: ignore[no-untyped-def]
        return self._inner.metadata

    def get_subagent(self, agent_id: str) -> IAgent | None:
        return None

    def run(self, messages, session=None, options=None):  # type: ignore[no-untyped-def]
        return self._inner.run(messages, session, options)

    async def reset(self) -> None:
        await self._inner.reset()


async def test_any_iagent_takes_part_in_any_pattern() -> None:
    foreign = ForeignAgent("ext")
    assert isinstance(foreign, IAgent)
    inner = SequentialBuilder(id="inner").add_agent(FunctionAgent("a", lambda m: "A"))
    inner.add_agent(foreign)
    root = ConcurrentBuilder(id="root").add_agent(inner.build().as_agent())
    root.add_agent(ForeignAgent("ext2"))
    agent = root.build().as_agent()
    items = await _stream(agent, "go")
    texts = {(u.path, u.text) for u in items if u.type == "text_delta"}
    assert (("root", "inner", "ext"), "ext saw 2") in texts
    assert (("root", "ext2"), "ext2 saw 1") in texts
    response = await agent.run("go").collect()
    # history (3 messages) + the new one: ext sees 5 (after A), ext2 sees 4
    assert [m.text for m in response.messages] == ["ext saw 5", "ext2 saw 4"]


async def test_a_failed_workflow_is_not_poisoned() -> None:
    calls = 0

    def flaky(messages: list[ChatMessage]) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("first run fails")
        return "recovered"

    agent = (
        ConcurrentBuilder(id="c")
        .add_agent(
            SequentialBuilder(id="s").add_agent(FunctionAgent("f", flaky)).build().as_agent()
        )
        .build()
        .as_agent()
    )
    with pytest.raises(WorkflowError, match="first run fails"):
        await agent.run("x").collect()
    assert (await agent.run("x").collect()).text == "recovered"


async def test_one_concurrent_workflow_serves_many_sessions_at_once() -> None:
    sessions = [Session() for _ in range(6)]
    gate = anyio.Event()
    arrived = 0

    async def waits_for_all(messages: list[ChatMessage]) -> str:
        nonlocal arrived
        arrived += 1
        if arrived == 2 * len(sessions):  # both branches of every session
            gate.set()
        await gate.wait()
        return messages[-1].text

    agent = (
        ConcurrentBuilder(id="c")
        .add_agent(FunctionAgent("x", waits_for_all))
        .add_agent(FunctionAgent("y", waits_for_all))
        .build()
        .as_agent()
    )
    results: dict[int, list[str]] = {}

    async def converse(i: int) -> None:
        response = await agent.run(f"s{i}", sessions[i]).collect()
        results[i] = [m.text for m in response.messages]

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for i in range(len(sessions)):
                tg.start_soon(converse, i)
    assert results == {i: [f"s{i}", f"s{i}"] for i in range(len(sessions))}
