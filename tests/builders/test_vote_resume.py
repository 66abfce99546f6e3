"""A voter that asks a human makes the vote wait; a checkpoint mid-vote resumes exactly."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from raf import FunctionAgent, Session, VoteBuilder, majority
from raf.agent import IAgent
from raf.engine import FunctionExecutor, NodeContext, Workflow, WorkflowBuilder
from raf.messages import ChatMessage
from raf.stores import SqliteCheckpointStore
from raf.updates import RequestInfoUpdate

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def asker(calls: Counter[str]) -> IAgent:
    """A voter that asks a human which way to vote, then votes that."""

    async def ask(message: Any, ctx: NodeContext) -> None:
        calls["asker"] += 1
        answer = await ctx.request_info({"question": "which way?"})
        await ctx.yield_output(ChatMessage.assistant(str(answer), author="asker"))

    graph = WorkflowBuilder("asker").add_executor(FunctionExecutor("ask", ask))
    return graph.set_start("ask").build().as_agent()


def counted(calls: Counter[str], agent_id: str, choice: str) -> FunctionAgent:
    def vote(messages: list[ChatMessage]) -> str:
        calls[agent_id] += 1
        return choice

    return FunctionAgent(agent_id, vote)


def build(calls: Counter[str], *, policy: Any = None) -> Workflow:
    vote = (
        VoteBuilder(id="vote")
        .add_agent(counted(calls, "a", "x"))
        .add_agent(asker(calls))
        .add_agent(counted(calls, "b", "y"))
    )
    return (vote.with_policy(policy) if policy else vote).build()


async def test_the_vote_waits_for_a_voters_human_and_the_answer_finishes_it() -> None:
    calls: Counter[str] = Counter()
    agent = build(calls).as_agent()
    session = Session()
    async with agent.run("x or y?", session) as updates:
        items = [u async for u in updates]
    [request] = [u for u in items if isinstance(u, RequestInfoUpdate)]
    assert request.request_id == "vote/asker/ask@0#0"
    assert request.payload == {"question": "which way?"}
    assert not any(u.type == "message_completed" and u.path == ("vote",) for u in items)

    response = await agent.run("y", session).collect()
    assert response.text == "y"
    assert response.value.ballots["asker"].choice == "y"
    assert response.value.tally == {"x": 1.0, "y": 2.0}
    # The voters that had answered are not asked again.
    assert calls == Counter({"a": 1, "b": 1, "asker": 2})


async def test_a_vote_settled_without_the_waiting_voter_does_not_wait() -> None:
    calls: Counter[str] = Counter()
    agent = (
        VoteBuilder(id="vote")
        .add_agent(counted(calls, "a", "x"))
        .add_agent(counted(calls, "b", "x"))
        .add_agent(asker(calls))
        .with_policy(majority())
        .build()
        .as_agent()
    )
    response = await agent.run("x or y?").collect()
    assert response.text == "x" and response.value.decided_early
    assert response.value.ballots["asker"] is None
    assert "decided" in response.value.errors["asker"]


async def test_a_checkpoint_mid_vote_resumes_exactly(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    path = tmp_path / "votes.sqlite"
    async with SqliteCheckpointStore(path) as store:
        waiting = await build(calls).run("x or y?", Session(id="s1", store=store))
        assert waiting.status == "waiting"
        [request] = waiting.requests
        checkpoint = waiting.checkpoint_id
        assert checkpoint is not None
    assert calls == Counter({"a": 1, "b": 1, "asker": 1})

    calls.clear()
    async with SqliteCheckpointStore(path) as reopened:
        done = await build(calls).resume(checkpoint, reopened, responses={request.request_id: "x"})
    assert done.status == "completed"
    [response] = done.outputs
    assert response.value.winner == "x"
    assert response.value.tally == {"x": 2.0, "y": 1.0}
    assert calls == Counter({"asker": 1})


RESUME_ELSEWHERE = """
import sys, anyio
from collections import Counter
from raf.stores import SqliteCheckpointStore
from tests.builders.test_vote_resume import build

async def main():
    async with SqliteCheckpointStore(sys.argv[1]) as store:
        done = await build(Counter()).resume(sys.argv[2], store)
    [response] = done.outputs
    print(type(response.value).__name__, response.value.winner)

anyio.run(main)
"""


async def test_a_finished_vote_read_back_in_another_process_is_a_vote_result(
    tmp_path: Path,
) -> None:
    path = tmp_path / "votes.sqlite"
    async with SqliteCheckpointStore(path) as store:
        waiting = await build(Counter()).run("x or y?", Session(id="s1", store=store))
        [request] = waiting.requests
        assert waiting.checkpoint_id is not None
        answers = {request.request_id: "y"}
        done = await build(Counter()).resume(waiting.checkpoint_id, store, responses=answers)
    # The last checkpoint holds the vote's output; a new process decodes it.
    assert done.status == "completed" and done.checkpoint_id is not None
    with anyio.fail_after(60):
        child = await anyio.run_process(
            [sys.executable, "-c", RESUME_ELSEWHERE, str(path), done.checkpoint_id],
            cwd=ROOT,
            check=False,
        )
    assert child.returncode == 0, child.stderr.decode()
    assert child.stdout.decode().split() == ["VoteResult", "y"]
