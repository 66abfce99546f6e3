"""MagenticBuilder: ledgers, stalls and re-plans, limits, plan review, sessions."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import anyio
import pytest

from raf import (
    BudgetExceeded,
    FunctionAgent,
    MagenticBuilder,
    RunOptions,
    SequentialBuilder,
    Session,
    VoteBuilder,
)
from raf.budget import Budget
from raf.engine import FunctionExecutor, NodeContext, WorkflowBuilder
from raf.errors import GraphValidationError
from raf.messages import ChatMessage
from raf.testing import ScriptedProvider, text
from raf.updates import AgentUpdate, RequestInfoUpdate
from tests.builders.magentic_script import Manager, progress
from tests.helpers import Barrier, Foreign, answers_in_sessions, task_count

pytestmark = pytest.mark.anyio


def echo(agent_id: str) -> FunctionAgent:
    """A participant answering `<id> did: <instruction>`."""
    return FunctionAgent(agent_id, lambda m: f"{agent_id} did: {m[-1].text}")


async def stream(agent: Any, prompt: Any, session: Session | None = None) -> list[AgentUpdate]:
    async with agent.run(prompt, session) as updates:
        return [u async for u in updates]


async def test_stalls_twice_replans_resets_and_finishes_then_continues() -> None:
    manager = Manager(
        [
            progress("counter", "count"),
            progress("counter", "count again", stalled=True),
            progress("writer", "write", stalled=True),  # the second stall: re-plan and reset
            progress("counter", "count after the reset"),
            progress("writer", "wrap up", done=True),
        ]
    )

    async def count(message: Any, ctx: NodeContext) -> None:
        ctx.state["n"] = ctx.state.get("n", 0) + 1
        await ctx.yield_output(ChatMessage.assistant(f"count {ctx.state['n']}", author="counter"))

    counter_graph = WorkflowBuilder("counter").add_executor(FunctionExecutor("tick", count))
    counter = counter_graph.set_start("tick").build().as_agent()
    team = (
        MagenticBuilder(ScriptedProvider(manager), id="team")
        .add_agent(counter)
        .add_agent(echo("writer"))
        .with_limits(max_rounds=10, max_stalls=2, max_resets=1)
        .build()
        .as_agent()
    )
    session = Session()
    with anyio.fail_after(10):
        items = await stream(team, "count things", session)
    assert manager.kinds() == [
        "task",
        "progress",
        "progress",
        "progress",
        "update",
        "progress",
        "progress",
        "final",
    ]
    counted = [
        m.text
        for u in items
        if u.type == "executor_invoked" and u.path == ("team",) and u.executor_id == "counter"
        for m in u.messages
    ]
    # The counter's own session state was reset with the re-plan: it counts from 1 again.
    assert counted == ["count 1", "count 2", "count 1"]
    reasoning = [u.text for u in items if u.type == "reasoning_delta"]
    assert all(u.path == ("team",) for u in items if u.type == "reasoning_delta")
    assert [r.splitlines()[0] for r in reasoning if r.startswith("Task ledger")] == [
        "Task ledger",
        "Task ledger",
    ]
    assert any("facts 2" in r for r in reasoning)
    assert sum(1 for r in reasoning if r.startswith("Progress ledger")) == 5
    final = [u for u in items if u.type == "message_completed" and u.path == ("team",)]
    assert [m.message.text for m in final] == ["the final answer"]
    assert final[0].message.author == "team"
    # After the reset the team sees only the work done since.
    assert "count again" in manager.prompts("update")[0]
    last_progress = manager.prompts("progress")[-1]
    assert "count again" not in last_progress and "count after the reset" in last_progress

    # A second run on the same session continues the task from its ledger.
    manager.rounds = [progress("writer", "answer the follow-up"), progress("writer", "", done=True)]
    manager.answer = "the follow-up answer"
    again = await team.run("and now?", session).collect()
    assert again.text == "the follow-up answer"
    update = manager.prompts("update")[-1]
    assert "A new request came in" in update and "facts 2" in update and "and now?" in update

    # A fresh session starts a new task.
    manager.calls.clear()
    manager.rounds = [progress("writer", "w", done=True)]
    manager.answer = "fresh"
    fresh = await team.run("new task", Session()).collect()
    assert fresh.text == "fresh"
    assert manager.kinds() == ["task", "progress", "final"]
    assert "count things" not in manager.prompts("task")[0]


async def test_the_round_limit_ends_with_a_partial_answer_that_says_so() -> None:
    manager = Manager([progress("a", f"step {i}") for i in range(5)], answer="partial")
    team = (
        MagenticBuilder(ScriptedProvider(manager), id="team")
        .add_agent(echo("a"))
        .with_limits(max_rounds=3)
        .build()
        .as_agent()
    )
    response = await team.run("go").collect()
    assert response.text == "partial"
    assert manager.kinds() == ["task", *["progress"] * 4, "final"]
    assert "the limit of 3 rounds was reached" in manager.prompts("final")[0]
    assert "step 2" in manager.prompts("final")[0]


async def test_after_max_resets_the_team_gives_up_with_the_best_answer() -> None:
    manager = Manager([progress("a", f"try {i}", stalled=True) for i in range(10)], answer="best")
    team = (
        MagenticBuilder(ScriptedProvider(manager), id="team")
        .add_agent(echo("a"))
        .with_limits(max_stalls=1, max_resets=2)
        .build()
        .as_agent()
    )
    response = await team.run("go").collect()
    assert response.text == "best"
    assert manager.kinds().count("update") == 2
    final = manager.prompts("final")[0]
    assert "gave up" in final and "after 2 re-plan(s)" in final


def requests_in(items: list[AgentUpdate]) -> list[RequestInfoUpdate]:
    return [u for u in items if isinstance(u, RequestInfoUpdate)]


async def test_plan_review_approved_and_revised_by_a_human() -> None:
    manager = Manager([progress("a", "do it"), progress("a", "", done=True)])
    team = (
        MagenticBuilder(ScriptedProvider(manager), id="team")
        .add_agent(echo("a"))
        .with_plan_review()
        .build()
        .as_agent()
    )
    session = Session()
    [request] = requests_in(await stream(team, "plan something", session))
    assert request.payload["type"] == "plan_review" and request.payload["plan"] == "plan 1"
    assert request.path == ("team",)
    assert manager.kinds() == ["task"]
    items = await stream(team, "approve", session)
    assert requests_in(items) == []
    assert [u.message.text for u in items if u.type == "message_completed"][-1] == (
        "the final answer"
    )
    assert manager.kinds() == ["task", "progress", "progress", "final"]

    # A revision is folded into the plan by the manager, and goes back to the human.
    manager.calls.clear()
    manager.rounds = [progress("a", "do it", done=True)]
    other = Session()
    [request] = requests_in(await stream(team, "plan again", other))
    assert request.payload["choices"] == ["approve", "revise"]
    typed = ChatMessage.tool_result(request.request_id, json.dumps({"revision": "use a"}))
    [again] = requests_in(await stream(team, [typed], other))
    assert again.payload["plan"] == "plan 2" and again.request_id != request.request_id
    assert manager.kinds(plans=True) == ["task", "plan", "update", "replan"]
    assert "use a" in manager.prompts("update")[0] and "use a" in manager.prompts("replan")[0]
    [second] = requests_in(await stream(team, "No: ask a twice.", other))
    assert second.payload["plan"] == "plan 3"
    assert "No: ask a twice." in manager.prompts("update")[-1]
    done = await team.run("Approve.", other).collect()
    assert done.text == "the final answer"
    assert manager.kinds() == ["task", "update", "update", "progress", "final"]
    # The team works on the plan the human approved, shown with each instruction.
    assert "plan 3" in manager.prompts("progress")[0]


async def test_a_replan_is_reviewed_again() -> None:
    manager = Manager(
        [progress("a", "x", stalled=True), progress("a", "after", done=True)], answer="ok"
    )
    team = (
        MagenticBuilder(ScriptedProvider(manager), id="team")
        .add_agent(echo("a"))
        .with_limits(max_stalls=1)
        .with_plan_review()
        .build()
        .as_agent()
    )
    session = Session()
    assert len(requests_in(await stream(team, "go", session))) == 1
    [second] = requests_in(await stream(team, "approve", session))
    assert second.payload["plan"] == "plan 2"
    assert manager.kinds() == ["task", "progress", "update"]
    typed = ChatMessage.tool_result(second.request_id, json.dumps({"approved": True}))
    done = await team.run([typed], session).collect()
    assert done.text == "ok"
    assert manager.kinds() == ["task", "progress", "update", "progress", "final"]


async def test_nested_in_a_sequence_with_nested_participants_every_token_has_its_path() -> None:
    manager = Manager(
        [
            progress("pair", "first"),
            progress("panel", "vote"),
            progress("outsider", "weigh in"),
            progress("pair", "", done=True),
        ]
    )
    pair = (
        SequentialBuilder(id="pair")
        .add_agent(FunctionAgent("left", lambda m: "left says hi"))
        .add_agent(FunctionAgent("right", lambda m: "right says bye"))
        .build()
        .as_agent()
    )
    panel = (
        VoteBuilder(id="panel")
        .add_agent(FunctionAgent("v1", lambda m: "yes"))
        .add_agent(FunctionAgent("v2", lambda m: "yes"))
        .build()
        .as_agent()
    )
    outsider = Foreign(FunctionAgent("outsider", lambda m: "from outside"))
    team = (
        MagenticBuilder(ScriptedProvider(manager), id="team")
        .add_agent(pair)
        .add_agent(panel)
        .add_agent(outsider)
        .build()
        .as_agent()
    )
    top = (
        SequentialBuilder(id="top")
        .add_agent(FunctionAgent("intro", lambda m: "intro"))
        .add_agent(team)
        .build()
        .as_agent()
    )
    assert team.metadata.kind == "magentic"
    assert team.metadata.children == ("pair", "panel", "outsider")
    items = await stream(top, "go")
    deltas = {(u.path, u.text) for u in items if u.type == "text_delta"}
    assert (("top", "team", "pair", "left"), "left says hi") in deltas
    assert (("top", "team", "pair", "right"), "right says bye") in deltas
    assert (("top", "team", "panel", "v2"), "yes") in deltas
    assert (("top", "team", "outsider"), "from outside") in deltas
    streamed = "".join(
        u.text for u in items if u.type == "text_delta" and u.path == ("top", "team")
    )
    assert streamed == "the final answer"
    assert all(u.path == ("top", "team") for u in items if u.type == "reasoning_delta")
    # The participants' answers reached the manager: the vote's winner among them.
    final = manager.prompts("final")[0]
    assert "[right] right says bye" in final and "[panel] yes" in final
    assert "[outsider] from outside" in final
    usage = [u for u in items if u.type == "usage" and u.path == ("top", "team")]
    assert len(usage) == 7  # the facts and the plan, four progress ledgers, the answer


async def test_one_built_team_serves_twenty_sessions_at_once() -> None:
    def ledger(messages: list[ChatMessage]) -> dict[str, Any]:
        briefing = messages[-1].text
        return progress("a", briefing.split("REQUEST:\n")[1].split("\n")[0], done="did" in briefing)

    def manager_script(messages: list[ChatMessage]) -> Any:
        prompt = messages[0].text
        if "progress ledger" in prompt:
            return text(json.dumps(ledger(messages)))
        if "final answer" in prompt:
            return text(messages[-1].text.split("[a] ")[1])
        return text(json.dumps({"facts": "f", "plan": "p"}))

    all_started = Barrier(20)

    async def worker(messages: list[ChatMessage]) -> str:
        await all_started.wait()  # every session is mid-task at once
        return f"did {messages[-1].text}"

    team = (
        MagenticBuilder(ScriptedProvider(manager_script), id="team")
        .add_agent(FunctionAgent("a", worker))
        .build()
        .as_agent()
    )
    answers = await answers_in_sessions(team, [f"task {i}" for i in range(20)])
    assert answers == [f"did [user] task {i}" for i in range(20)]


async def test_manager_calls_count_in_the_budget_and_the_usage() -> None:
    manager = Manager([progress("a", "x"), progress("a", "", done=True)])
    team = (
        MagenticBuilder(ScriptedProvider(manager), id="team")
        .add_agent(echo("a"))
        .build()
        .as_agent()
    )
    response = await team.run("go").collect()
    assert response.usage.total_tokens > 0
    manager.calls.clear()
    manager.rounds = [progress("a", "x"), progress("a", "", done=True)]
    with pytest.raises(BudgetExceeded) as info:
        await team.run("go", Session(), RunOptions(budget=Budget(rounds=3))).collect()
    assert info.value.path == ("team", "manager")
    assert manager.kinds(plans=True) == ["task", "plan", "progress"]


async def test_leaving_early_cancels_the_participant_and_leaks_nothing() -> None:
    started = anyio.Event()
    cancelled = anyio.Event()

    async def slow(messages: list[ChatMessage]) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"  # pragma: no cover

    manager = Manager([progress("slow", "work")])
    team = (
        MagenticBuilder(ScriptedProvider(manager), id="team")
        .add_agent(FunctionAgent("slow", slow))
        .build()
        .as_agent()
    )
    before = task_count()
    with anyio.fail_after(5):
        async with team.run("go") as updates:
            async for _ in updates:
                if started.is_set():
                    break
        await cancelled.wait()
    assert task_count() == before


def test_builder_checks_its_arguments() -> None:
    provider = ScriptedProvider([text("x")])
    with pytest.raises(TypeError, match="LlmProvider"):
        MagenticBuilder("gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_stalls"):
        MagenticBuilder(provider).with_limits(max_stalls=0)
    with pytest.raises(GraphValidationError, match="no participants"):
        MagenticBuilder(provider).build()
    workflow = MagenticBuilder(provider).add_agent(echo("orchestrator")).build()
    assert workflow.id == "workflow_magentic_orchestrator"
    assert set(workflow.executors) == {"orchestrator_2", "orchestrator"}
    assert Counter(e.kind for e in workflow.edges) == Counter({"direct": 2}) or workflow.edges
