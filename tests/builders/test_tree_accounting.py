"""Usage and budgets across a nested tree of ReAct agents on the scripted model."""

from __future__ import annotations

import pytest

from raf.agent import IAgent, RunOptions
from raf.budget import Budget
from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.errors import BudgetExceeded, MaxRoundsExceeded
from raf.messages import ChatMessage
from raf.react import ReactAgent
from raf.testing.script import Turn, text, tool_calls
from raf.testing.scripted_provider import ScriptedProvider
from raf.tools import tool
from raf.updates import Usage
from tests.helpers import Foreign

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


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


def calculator(agent_id: str = "calc", max_rounds: int = 10) -> ReactAgent:
    """Calls `add` until it has a tool result, then answers."""

    def turn(messages: list[ChatMessage]) -> Turn:
        if messages[-1].role == "tool":
            return text("2", usage=(5, 1))
        return tool_calls(("add", {"a": 1, "b": 1}), usage=(5, 1))

    return ReactAgent(agent_id, ScriptedProvider(turn), "Add.", tools=[add], max_rounds=max_rounds)


def foreign_team(honours_options: bool) -> IAgent:
    first = ReactAgent("first", ScriptedProvider([text("hi", usage=(5, 1))]), "Greet.")
    foreign = Foreign(calculator(), honours_options=honours_options)
    return SequentialBuilder(id="team").add_agent(first).add_agent(foreign).build().as_agent()


@pytest.mark.parametrize("honours_options", [True, False])
@pytest.mark.parametrize("rounds", [1, 2])
async def test_an_agent_that_is_not_raf_is_held_to_the_round_budget(
    honours_options: bool, rounds: int
) -> None:
    team = foreign_team(honours_options)
    with pytest.raises(BudgetExceeded) as info:
        await team.run("go", options=RunOptions(budget=Budget(rounds=rounds))).collect()
    assert info.value.path == ("team", "calc")
    assert (info.value.kind, info.value.limit, info.value.used) == ("rounds", rounds, rounds + 1)


@pytest.mark.parametrize("honours_options", [True, False])
async def test_an_agent_that_is_not_raf_is_held_to_the_token_budget(honours_options: bool) -> None:
    team = foreign_team(honours_options)
    with pytest.raises(BudgetExceeded) as info:
        await team.run("go", options=RunOptions(budget=Budget(tokens=10))).collect()
    assert info.value.path == ("team", "calc")
    assert info.value.kind == "tokens"
    assert info.value.used == 12


@pytest.mark.parametrize("honours_options", [True, False])
async def test_an_agent_that_is_not_raf_finishes_within_a_generous_budget(
    honours_options: bool,
) -> None:
    team = foreign_team(honours_options)
    response = await team.run("go", options=RunOptions(budget=Budget(rounds=3))).collect()
    assert response.text == "2"


async def test_errors_of_an_agent_that_is_not_raf_carry_the_full_path() -> None:
    inner = SequentialBuilder(id="inner").add_agent(calculator("loopy", max_rounds=1)).build()
    foreign = Foreign(inner.as_agent(), honours_options=True)
    top = SequentialBuilder(id="top").add_agent(foreign).build().as_agent()
    with pytest.raises(MaxRoundsExceeded) as info:
        await top.run("go").collect()
    assert info.value.path == ("top", "inner", "loopy")
