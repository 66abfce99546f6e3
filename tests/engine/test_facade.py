from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from raf.agent import BaseAgent, IAgent, RunOptions
from raf.engine import AgentExecutor, FunctionExecutor, NodeContext, WorkflowAgent, WorkflowBuilder
from raf.errors import MaxRoundsExceeded, RunTimeout
from raf.errors import WorkflowError as WorkflowFailure
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.run import RunContext
from raf.session import Session
from raf.updates import (
    AgentResponse,
    AgentUpdate,
    ExecutorInvoked,
    ExecutorInvoking,
    MessageCompleted,
    TextDelta,
    Usage,
)
from tests.engine.support import Calls
from tests.helpers import task_count

pytestmark = pytest.mark.anyio


class Metered(BaseAgent):
    """Answers `text` and reports `tokens` of usage, like a model call would."""

    kind = "metered"

    def __init__(self, id: str, text: str, tokens: int) -> None:
        super().__init__(id)
        self._text = text
        self._tokens = tokens

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        usage = Usage(input_tokens=self._tokens, output_tokens=1, path=ctx.path)
        await ctx.emit(usage)
        message = ChatMessage.assistant(self._text, author=self.id)
        return AgentResponse(messages=[message], usage=usage)


class Failing(BaseAgent):
    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        raise MaxRoundsExceeded("gave up after 3 model calls")


def describe(update: AgentUpdate) -> tuple[Any, ...]:
    """The fields of an item the mapping decides."""
    if isinstance(update, ExecutorInvoking):
        return ("invoking", update.executor_id, update.path)
    if isinstance(update, ExecutorInvoked):
        return (
            "invoked",
            update.executor_id,
            [m.text for m in update.messages],
            update.value,
            update.path,
        )
    if isinstance(update, TextDelta):
        return ("text", update.text, update.path)
    if isinstance(update, MessageCompleted):
        return ("message", update.message.text, update.path)
    if isinstance(update, Usage):
        return ("usage", update.total_tokens, update.path)
    return (update.type, update.path)


async def stream(agent: IAgent, text: str, session: Session | None = None) -> list[AgentUpdate]:
    async with agent.run(text, session=session) as updates:
        return [u async for u in updates]


def drafting() -> WorkflowAgent:
    async def prep(message: list[ChatMessage], ctx: NodeContext) -> str:
        await ctx.emit(TextDelta(text="preparing"))
        await ctx.send([*message, ChatMessage.user("be brief")])
        return "prepared"

    async def final(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        await ctx.yield_output(conversation[-1])

    writer = FunctionAgent("writer", lambda m: f"draft {len(m)}")
    return (
        WorkflowBuilder("wf")
        .add_edge(FunctionExecutor("prep", prep), writer)
        .add_edge(writer, FunctionExecutor("final", final))
        .set_start("prep")
        .build()
        .as_agent(description="drafts things")
    )


async def test_the_mapping_item_by_item() -> None:
    agent = drafting()
    updates = await stream(agent, "topic")
    assert [describe(u) for u in updates] == [
        ("invoking", "prep", ("wf",)),
        ("text", "preparing", ("wf",)),
        ("invoked", "prep", [], "prepared", ("wf",)),
        ("invoking", "writer", ("wf",)),
        ("text", "draft 2", ("wf", "writer")),
        ("message", "draft 2", ("wf", "writer")),
        ("invoked", "writer", ["draft 2"], None, ("wf",)),
        ("invoking", "final", ("wf",)),
        ("invoked", "final", [], None, ("wf",)),
    ]


async def test_outputs_make_the_response() -> None:
    response = await drafting().run("topic").collect()
    assert [m.text for m in response.messages] == ["draft 2"]
    assert response.value is None


async def test_outputs_that_are_not_messages_become_the_value() -> None:
    async def score(message: Any, ctx: NodeContext) -> None:
        await ctx.yield_output({"score": len(message)})

    agent = (
        WorkflowBuilder("w")
        .add_executor(FunctionExecutor("score", score))
        .set_start("score")
        .build()
        .as_agent()
    )
    response = await agent.run([ChatMessage.user("a"), ChatMessage.user("b")]).collect()
    assert response.messages == [] and response.value == {"score": 2}


async def test_a_graph_of_agents_answers_with_its_terminal_agents() -> None:
    a = FunctionAgent("a", lambda m: "from a")
    b = FunctionAgent("b", lambda m: "from b")
    c = FunctionAgent("c", lambda m: "from c")
    agent = WorkflowBuilder("team").add_fan_out(a, [b, c]).set_start(a).build().as_agent()
    response = await agent.run("go").collect()
    assert [m.text for m in response.messages] == ["from b", "from c"]


async def test_usage_sums_over_the_whole_tree() -> None:
    inner = (
        WorkflowBuilder("inner")
        .add_edge(Metered("x", "X", 10), Metered("y", "Y", 20))
        .set_start("x")
        .build()
    )
    outer = (
        WorkflowBuilder("outer")
        .add_edge(Metered("first", "F", 100), inner.as_agent())
        .set_start("first")
        .build()
        .as_agent()
    )
    updates = await stream(outer, "go")
    usages = [describe(u) for u in updates if isinstance(u, Usage)]
    assert usages == [
        ("usage", 101, ("outer", "first")),
        ("usage", 11, ("outer", "inner", "x")),
        ("usage", 21, ("outer", "inner", "y")),
    ]
    response = await outer.run("go").collect()
    assert response.usage.total_tokens == 133
    assert [m.text for m in response.messages] == ["Y"]


async def test_a_nested_workflow_streams_with_full_paths() -> None:
    writer = FunctionAgent("writer", lambda m: "words")
    inner = WorkflowBuilder("inner").add_executor(writer).set_start(writer).build().as_agent()
    outer = WorkflowBuilder("outer").add_executor(inner).set_start(inner).build().as_agent()
    updates = await stream(outer, "go")
    assert [describe(u) for u in updates] == [
        ("invoking", "inner", ("outer",)),
        ("invoking", "writer", ("outer", "inner")),
        ("text", "words", ("outer", "inner", "writer")),
        ("message", "words", ("outer", "inner", "writer")),
        ("invoked", "writer", ["words"], None, ("outer", "inner")),
        ("invoked", "inner", ["words"], None, ("outer",)),
    ]
    assert outer.metadata.children == ("inner",)
    assert outer.get_subagent("inner") is inner
    assert inner.get_subagent("writer") is writer


async def test_metadata_and_subagents_in_node_order() -> None:
    a, b = FunctionAgent("a", lambda m: "A"), FunctionAgent("b", lambda m: "B")
    workflow = (
        WorkflowBuilder("w")
        .add_edge(FunctionExecutor("start", _forward), b)
        .add_edge(b, AgentExecutor(a, id="node-a"))
        .set_start("start")
        .build()
    )
    agent = workflow.as_agent(
        "pipeline", name="Pipeline", description="does things", kind="sequential"
    )
    assert [s.id for s in agent.subagents()] == ["b", "a"]
    meta = agent.metadata
    assert (meta.id, meta.name, meta.description, meta.kind, meta.children) == (
        "pipeline",
        "Pipeline",
        "does things",
        "sequential",
        ("b", "a"),
    )
    assert agent.workflow is workflow
    assert workflow.as_agent().metadata.kind == "graph"
    assert workflow.as_agent().id == "w"


async def _forward(message: Any, ctx: NodeContext) -> None:
    await ctx.send(message)


async def test_a_node_failure_raises_workflow_error_naming_the_executor() -> None:
    async def bad(message: Any, ctx: NodeContext) -> None:
        raise ValueError("bad input")

    writer = FunctionAgent("writer", lambda m: "ok")
    agent = (
        WorkflowBuilder("wf")
        .add_edge(writer, FunctionExecutor("check", bad))
        .set_start(writer)
        .build()
        .as_agent()
    )
    seen: list[AgentUpdate] = []
    with pytest.raises(WorkflowFailure) as info:
        async with agent.run("go") as updates:
            async for update in updates:
                seen.append(update)
    error = info.value
    assert error.executor_id == "check" and error.path == ("wf",)
    assert isinstance(error.__cause__, ValueError) and error.cause is error.__cause__
    assert str(error) == "executor 'check' failed: ValueError: bad input (at 'wf')"
    assert [describe(u)[:2] for u in seen][-1] == ("invoking", "check")


async def test_an_agent_error_inside_a_node_propagates_as_itself_with_its_path() -> None:
    inner = (
        WorkflowBuilder("inner").add_executor(Failing("leaf")).set_start("leaf").build().as_agent()
    )
    outer = WorkflowBuilder("outer").add_executor(inner).set_start(inner).build().as_agent()
    with pytest.raises(MaxRoundsExceeded) as info:
        await outer.run("go").collect()
    assert info.value.path == ("outer", "inner", "leaf")


async def test_exceeding_the_superstep_bound_raises_naming_the_node() -> None:
    calls = Calls()
    agent = (
        WorkflowBuilder("loop")
        .add_edge(calls.forward("ping"), calls.forward("pong"))
        .add_edge("pong", "ping")
        .set_start("ping")
        .set_max_supersteps(4)
        .build()
        .as_agent()
    )
    with pytest.raises(WorkflowFailure, match="bound of 4 supersteps") as info:
        await agent.run("go").collect()
    assert info.value.executor_id == "ping" and info.value.path == ("loop",)


async def test_a_failed_agent_is_not_poisoned() -> None:
    attempts = 0

    async def flaky(message: Any, ctx: NodeContext) -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise RuntimeError("first time fails")
        await ctx.yield_output(ChatMessage.assistant("fine"))

    agent = (
        WorkflowBuilder("w")
        .add_executor(FunctionExecutor("flaky", flaky))
        .set_start("flaky")
        .build()
        .as_agent()
    )
    with pytest.raises(WorkflowFailure):
        await agent.run("a").collect()
    assert (await agent.run("b").collect()).text == "fine"


async def test_leaving_the_run_early_cancels_running_nodes_and_leaks_no_task() -> None:
    cancelled: list[str] = []

    async def slow(message: Any, ctx: NodeContext) -> None:
        await ctx.emit(TextDelta(text=f"{ctx.node_id} started"))
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(ctx.node_id)
            raise

    calls = Calls()
    agent = (
        WorkflowBuilder("w")
        .add_fan_out(
            calls.forward("start"), [FunctionExecutor("one", slow), FunctionExecutor("two", slow)]
        )
        .set_start("start")
        .build()
        .as_agent()
    )
    before = task_count()
    started: list[str] = []
    with anyio.fail_after(5):
        async with agent.run("go") as updates:
            async for update in updates:
                if isinstance(update, TextDelta):
                    started.append(update.text)
                    if len(started) == 2:
                        break
    assert sorted(cancelled) == ["one", "two"]
    assert task_count() == before


async def test_concurrent_sessions_on_one_agent_do_not_see_each_other() -> None:
    gate = anyio.Event()

    async def remember(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        turns = ctx.state.setdefault("turns", [])
        turns.append(conversation[-1].text)
        await gate.wait()
        await ctx.yield_output(ChatMessage.assistant(f"{len(conversation)} msgs, turns {turns}"))

    agent = (
        WorkflowBuilder("w")
        .add_executor(FunctionExecutor("mem", remember))
        .set_start("mem")
        .build()
        .as_agent()
    )
    sessions = [Session(id=f"user-{i}") for i in range(8)]
    answers: dict[int, list[str]] = {i: [] for i in range(8)}

    async def chat(i: int) -> None:
        for turn in range(2):
            answers[i].append((await agent.run(f"u{i}t{turn}", sessions[i]).collect()).text)

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(chat, i)
        await anyio.wait_all_tasks_blocked()
        gate.set()
    for i in range(8):
        assert answers[i] == [
            f"1 msgs, turns ['u{i}t0']",
            f"3 msgs, turns ['u{i}t0', 'u{i}t1']",
        ]


async def test_reset_forgets_the_default_session_and_recurses() -> None:
    class Tracked(FunctionAgent):
        resets = 0

        async def reset(self) -> None:
            Tracked.resets += 1
            await super().reset()

    async def count(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        ctx.state["n"] = ctx.state.get("n", 0) + 1
        await ctx.send(conversation)

    leaf = Tracked("leaf", lambda m: f"{len(m)} messages")
    agent = (
        WorkflowBuilder("w")
        .add_edge(FunctionExecutor("count", count), leaf)
        .set_start("count")
        .build()
        .as_agent()
    )
    assert (await agent.run("one").collect()).text == "1 messages"
    assert (await agent.run("two").collect()).text == "3 messages"
    await agent.reset()
    assert Tracked.resets == 1
    assert (await agent.run("three").collect()).text == "1 messages"


def test_children_of_the_facade_are_found_through_as_agent() -> None:
    class Custom(FunctionExecutor):
        def __init__(self, agent: IAgent) -> None:
            super().__init__("custom", _forward)
            self._agent = agent

        def as_agent(self) -> IAgent:
            return self._agent

    hidden = FunctionAgent("hidden", lambda m: "h")
    agent = WorkflowBuilder("w").add_executor(Custom(hidden)).set_start("custom").build().as_agent()
    children: Sequence[IAgent] = agent.subagents()
    assert list(children) == [hidden]


async def test_a_slow_consumer_back_pressures_the_run_through_one_bounded_stream() -> None:
    from raf._streaming import STREAM_BUFFER

    produced = 0

    async def chatter(message: Any, ctx: NodeContext) -> None:
        nonlocal produced
        for _ in range(STREAM_BUFFER * 3):
            await ctx.emit(TextDelta(text="x"))
            produced += 1

    agent = (
        WorkflowBuilder("w")
        .add_executor(FunctionExecutor("chatter", chatter))
        .set_start("chatter")
        .build()
        .as_agent()
    )
    async with agent.run("go") as updates:
        first = await updates.__anext__()
        assert isinstance(first, ExecutorInvoking)
        await anyio.wait_all_tasks_blocked()
        assert STREAM_BUFFER - 1 <= produced <= STREAM_BUFFER + 1  # blocked on the full buffer
        rest = [u async for u in updates]
    assert produced == STREAM_BUFFER * 3
    assert sum(isinstance(u, TextDelta) for u in rest) == STREAM_BUFFER * 3


async def test_a_run_timeout_stops_a_workflow_whose_nodes_never_wait() -> None:
    steps: list[int] = []

    async def spin(n: int, ctx: NodeContext) -> None:
        steps.append(n)
        await ctx.send(n + 1)

    async def start(messages: list[ChatMessage], ctx: NodeContext) -> None:
        await ctx.send(0)

    agent = (
        WorkflowBuilder("spin")
        .add_edge(FunctionExecutor("start", start), FunctionExecutor("spin", spin))
        .add_edge("spin", "spin")
        .set_start("start")
        .set_max_supersteps(300_000)
        .build()
        .as_agent()
    )
    with pytest.raises(RunTimeout):
        await agent.run("go", options=RunOptions(timeout=0.05)).collect()
    assert 0 < len(steps) < 300_000


async def test_usage_counts_agents_a_node_invokes_itself_once_each() -> None:
    metered = Metered("m", "M", 10)

    async def twice(messages: list[ChatMessage], ctx: NodeContext) -> AgentResponse:
        first = await ctx.invoke_agent(metered, messages)
        await ctx.invoke_agent(metered, messages)
        await ctx.send(messages)
        return first  # an agent's response as the node's output is not counted again

    inner = (
        WorkflowBuilder("inner")
        .add_edge(FunctionExecutor("twice", twice), Metered("y", "Y", 20))
        .set_start("twice")
        .build()
    )

    async def outer_node(messages: list[ChatMessage], ctx: NodeContext) -> None:
        response = await ctx.invoke_agent(inner.as_agent(), messages)
        await ctx.yield_output(response)

    outer = (
        WorkflowBuilder("outer")
        .add_edge(Metered("first", "F", 100), FunctionExecutor("call", outer_node))
        .set_start("first")
        .build()
        .as_agent()
    )
    usages = [u for u in await stream(outer, "go") if isinstance(u, Usage)]
    streamed = sum(u.total_tokens for u in usages)
    response = await outer.run("go").collect()
    assert response.usage.total_tokens == streamed == 101 + 11 + 11 + 21
    assert response.usage.input_tokens == 100 + 10 + 10 + 20


async def test_an_empty_list_output_is_no_messages_and_keeps_the_value() -> None:
    async def score(message: Any, ctx: NodeContext) -> list[ChatMessage]:
        await ctx.yield_output(42)
        await ctx.send([])
        return []

    async def nothing_more(messages: list[ChatMessage], ctx: NodeContext) -> None:
        await ctx.yield_output(messages)

    agent = (
        WorkflowBuilder("w")
        .add_edge(FunctionExecutor("score", score), FunctionExecutor("last", nothing_more))
        .set_start("score")
        .build()
        .as_agent()
    )
    updates = await stream(agent, "go")
    invoked = [describe(u) for u in updates if isinstance(u, ExecutorInvoked)]
    assert invoked[0] == ("invoked", "score", [], None, ("w",))
    response = await agent.run("go").collect()
    assert (response.messages, response.value) == ([], 42)
