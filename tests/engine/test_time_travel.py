"""`run_from`: a workflow agent's turn run on from any of its checkpoints, in a new session."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from raf import FunctionAgent, Session
from raf.engine import NodeContext, Workflow, WorkflowAgent, WorkflowBuilder, run_from
from raf.errors import CheckpointError, WorkflowError
from raf.messages import ChatMessage
from raf.stores import SqliteCheckpointStore
from raf.updates import ExecutorInvoking, RequestInfoUpdate
from tests.engine.support import Calls

pytestmark = pytest.mark.anyio


def counted(calls: Counter[str], agent_id: str, suffix: str) -> FunctionAgent:
    def reply(messages: list[ChatMessage]) -> str:
        calls[agent_id] += 1
        return messages[-1].text + suffix

    return FunctionAgent(agent_id, reply)


def pipeline(calls: Counter[str]) -> WorkflowAgent:
    """a -> b -> c, each adding its letter."""
    a, b, c = (counted(calls, name, name) for name in "abc")
    return WorkflowBuilder("abc").add_edge(a, b).add_edge(b, c).set_start(a).build().as_agent()


async def test_a_fork_from_each_step_ends_the_turn_as_the_original_did(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    agent = pipeline(calls)
    async with SqliteCheckpointStore(tmp_path / "runs.sqlite") as store:
        first = Session("first", store=store)
        original = await agent.run("go ", first)
        steps = await store.list("first")
        saved = {cid: (await store.load(cid)).data for cid in steps}
        assert len(steps) == 3
        for index, checkpoint_id in enumerate(steps):
            calls.clear()
            fork = Session(f"fork-{index}", store=store)
            async with run_from(agent, checkpoint_id, fork) as updates:
                started = [u.executor_id async for u in updates if isinstance(u, ExecutorInvoking)]
            # Only the nodes after the checkpoint run; the turn ends as the original's.
            assert started == ["abc"[n] for n in range(index + 1, 3)]
            assert sum(calls.values()) == 2 - index
            assert fork.history(agent) == first.history(agent)
            assert [m.text for m in fork.history(agent)] == ["go ", original.text]
            assert len(await store.list(fork.id)) == 2 - index
        # The original thread is only read.
        assert await store.list("first") == steps
        assert {cid: (await store.load(cid)).data for cid in steps} == saved


def asking(calls: Calls) -> WorkflowAgent:
    """draft -> review (asks a human) -> publish."""
    draft = FunctionAgent("draft", lambda m: "draft of " + m[-1].text)

    async def review(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        verdict = await ctx.request_info({"draft": conversation[-1].text})
        await ctx.send(f"{conversation[-1].text} ({verdict})")

    async def publish(text: str, ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant(f"published {text}"))

    return (
        WorkflowBuilder("desk")
        .add_edge(draft, calls.node("review", review))
        .add_edge("review", calls.node("publish", publish))
        .set_start(draft)
        .build()
        .as_agent()
    )


async def test_a_fork_asks_with_the_ids_of_the_original_and_takes_its_own_answer(
    tmp_path: Path,
) -> None:
    calls = Calls()
    agent = asking(calls)
    async with SqliteCheckpointStore(tmp_path / "runs.sqlite") as store:
        first = Session("first", store=store)
        waiting = await agent.run("a poem", first)
        assert waiting.status == "waiting"
        asked = [r.request_id for r in waiting.pending]
        after_draft = (await store.list("first"))[0]
        forks = [Session(name, store=store) for name in ("f1", "f2")]
        for fork in forks:
            async with run_from(agent, after_draft, fork) as updates:
                requests = [u.request_id async for u in updates if isinstance(u, RequestInfoUpdate)]
            assert requests == asked  # ids name the superstep: the same in every fork
        assert calls.count["review"] == 3
        done = await agent.run("approved", forks[0])
        rejected = await agent.run("rejected", forks[1])
        assert done.text == "published draft of a poem (approved)"
        assert rejected.text == "published draft of a poem (rejected)"
        # The original still waits on its own question.
        assert (await agent.run("later", first)).text == "published draft of a poem (later)"
        # Each history is the original's, with its own answer.
        told = [m.text.replace("later", "approved") for m in first.history(agent)]
        assert [m.text for m in forks[0].history(agent)] == told
        assert told[-2:] == ["approved", "published draft of a poem (approved)"]


def nested(calls: Calls, failures: list[str]) -> WorkflowAgent:
    """start -> inner (a -> b -> c, where c fails while `failures` holds a message)."""

    async def last(message: list[ChatMessage], ctx: NodeContext) -> None:
        if failures:
            raise RuntimeError(failures.pop())
        await ctx.yield_output(ChatMessage.assistant(f"done {message[-1].text}"))

    inner = (
        WorkflowBuilder("inner")
        .add_edge(calls.forward("a"), calls.forward("b"))
        .add_edge("b", calls.node("c", last))
        .set_start("a")
        .build()
    )
    outer: Workflow = (
        WorkflowBuilder("outer")
        .add_edge(calls.forward("start"), inner.as_agent())
        .set_start("start")
        .build()
    )
    return outer.as_agent()


async def test_a_fork_from_inside_a_nested_workflow_goes_on_inside_it(tmp_path: Path) -> None:
    calls = Calls()
    failures = ["c crashed"]
    agent = nested(calls, failures)
    async with SqliteCheckpointStore(tmp_path / "runs.sqlite") as store:
        first = Session("first", store=store)
        with pytest.raises(WorkflowError):
            await agent.run("hi", first)
        steps = await store.list("first")
        inside = [
            cid for cid in steps if "outer/inner#running" in (await store.load(cid)).data["session"]
        ]
        assert len(inside) == 2  # after a, after b
        calls.count.clear()
        fork = Session("fork", store=store)
        response = await run_from(agent, inside[-1], fork)
        assert response.text == "done hi"
        assert calls.count == {"c": 1}  # neither start nor a nor b runs again
        assert [m.text for m in fork.history(agent)] == ["hi", "done hi"]
        assert not [key for key in fork.keys("outer") if key.endswith("#running")]


async def test_a_failed_or_cancelled_fork_leaves_the_session_as_it_found_it(
    tmp_path: Path,
) -> None:
    calls = Calls()
    failures = ["c crashed", "c crashed again"]
    agent = nested(calls, failures)
    async with SqliteCheckpointStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(WorkflowError):
            await agent.run("hi", Session("first", store=store))
        inside = (await store.list("first"))[-1]
        fork = Session("fork", store=store)
        with pytest.raises(WorkflowError, match="crashed"):
            await run_from(agent, inside, fork)
        assert fork.keys("") == []  # nothing of the checkpoint stays for a later turn
        kept = Session("kept", store=store)
        kept.set("mine", 1)
        async with run_from(agent, inside, kept) as updates:
            async for update in updates:
                if isinstance(update, ExecutorInvoking):
                    break  # the consumer leaves: the run is cancelled
        assert kept.keys("") == ["mine"]
        assert (await agent.run("again", fork)).text == "done again"
        assert (await run_from(agent, inside, kept)).text == "done hi"


async def test_checkpoints_that_are_not_the_agents_turns_are_refused(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    agent = pipeline(calls)
    other = pipeline(calls)
    async with SqliteCheckpointStore(tmp_path / "runs.sqlite") as store:
        await agent.workflow.run([ChatMessage.user("x")], Session("direct", store=store))
        direct = (await store.list("direct"))[0]
        with pytest.raises(CheckpointError, match=r"Workflow\.resume") as raised:
            await run_from(agent, direct, Session("f", store=store))
        assert raised.value.checkpoint_id == direct
        renamed: Any = WorkflowBuilder("other")
        a = counted(calls, "a", "a")
        elsewhere = renamed.add_executor(a).set_start(a).build().as_agent()
        await other.run("y", Session("mine", store=store))
        mine = (await store.list("mine"))[0]
        with pytest.raises(CheckpointError, match="belongs to workflow 'abc'"):
            await run_from(elsewhere, mine, Session("g", store=store))
        with pytest.raises(KeyError):
            await run_from(agent, "no-such-checkpoint", Session("h", store=store))
    with pytest.raises(ValueError, match="store="):
        run_from(agent, mine, Session("i"))


async def test_a_fork_runs_its_tool_calls_again_and_records_them_as_its_own(
    tmp_path: Path,
) -> None:
    from raf import ReactAgent, SequentialBuilder, tool
    from raf.testing import ScriptedProvider, Turn, text, tool_calls

    sent: list[str] = []

    @tool
    def send(to: str) -> str:
        """Send the mail."""
        sent.append(to)
        return f"sent to {to}"

    def mailer(messages: list[ChatMessage]) -> Turn:
        if any(c.type == "tool_result" for m in messages for c in m.contents):
            return text("mailed")
        return tool_calls(("send", {"to": "ann"}))

    plan = FunctionAgent("plan", lambda m: "plan: mail ann")
    worker = ReactAgent("mailer", ScriptedProvider(mailer), "Mail.", [send])
    agent = SequentialBuilder(id="mail").add_agent(plan).add_agent(worker).build().as_agent()
    async with SqliteCheckpointStore(tmp_path / "runs.sqlite") as store:
        first = Session("first", store=store)
        assert (await agent.run("go", first)).text == "mailed"
        after_plan = (await store.list("first"))[0]
        # Time travel runs the step again: the original run's recorded result does not
        # stand in for the fork's call (a resume of the same run would reuse it).
        fork = Session("fork", store=store)
        assert (await run_from(agent, after_plan, fork)).text == "mailed"
        assert sent == ["ann", "ann"]
        journals = {e.key for e in await store.events() if e.key.startswith("raf.tool-calls/")}
        assert len(journals) == 2
