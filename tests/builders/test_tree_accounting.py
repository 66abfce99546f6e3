"""Usage and budgets across a nested tree of ReAct agents on the scripted model."""

from __future__ import annotations

import pytest

from raf.agent import IAgent, RunOptions
from raf.budget import Budget
from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.errors import BudgetExceeded
from raf.react import ReactAgent
from raf.testing.script import text, tool_calls
from raf.testing.scripted_provider import ScriptedProvider
from raf.tools import tool
from raf.updates import Usage

pytestmark = pytest.mark.anyio


@tool
def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: what to look up.
    """
    return f"facts about {topic}"


def tree() -> IAgent:
    def react(agent_id: str, *turns: object) -> ReactAgent:
        return ReactAgent(agent_id, ScriptedProvider(list(turns)), "Help.", tools=[lookup])  # type: ignore[arg-type]

    research = (
        SequentialBuilder(id="research")
        .add_agent(
            react("finder", tool_calls(("lookup", {"topic": "x"})), text("found", usage=(10, 2)))
        )
        .add_agent(react("writer", text("written", usage=(7, 5))))
        .build()
        .as_agent()
    )
    return (
        ConcurrentBuilder(id="team")
        .add_agent(research)
        .add_agent(react("critic", text("fine", usage=(3, 1))))
        .build()
        .as_agent()
    )


async def test_usage_sums_up_the_whole_tree() -> None:
    agent = tree()
    async with agent.run("go") as stream:
        items = [u async for u in stream]
    streamed = sum((u for u in items if isinstance(u, Usage)), Usage())
    response = await tree().run("go").collect()
    assert response.usage.total_tokens == streamed.total_tokens > 0
    assert response.usage.input_tokens >= 10 + 7 + 3
    tool_results = [u for u in items if u.type == "tool_called"]
    assert [(u.path, u.result) for u in tool_results] == [
        (("team", "research", "finder"), "facts about x")
    ]


async def test_round_budget_names_the_path_that_crossed_it() -> None:
    with pytest.raises(BudgetExceeded) as info:
        await tree().run("go", options=RunOptions(budget=Budget(rounds=2))).collect()
    assert info.value.kind == "rounds"
    assert info.value.path[0] == "team" and len(info.value.path) >= 2


async def test_token_budget_is_enforced_across_the_tree() -> None:
    with pytest.raises(BudgetExceeded) as info:
        await tree().run("go", options=RunOptions(budget=Budget(tokens=15))).collect()
    assert info.value.kind == "tokens"


async def test_generous_budget_lets_the_run_finish() -> None:
    options = RunOptions(budget=Budget(tokens=10_000, rounds=10))
    response = await tree().run("go", options=options).collect()
    assert [m.author for m in response.messages] == ["writer", "critic"]
