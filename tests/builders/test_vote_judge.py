"""Vote: custom ballots kept as themselves, a judge held to the choices in play, one
`BudgetExceeded` however many voters cross the budget, and `add_agent`'s checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from raf import (
    BudgetExceeded,
    FunctionAgent,
    SchemaValidationError,
    SequentialBuilder,
    Session,
    VoteBuilder,
    judge,
)
from raf.builders.vote.judging import in_play
from raf.messages import ChatMessage
from raf.stores import SqliteCheckpointStore
from tests.helpers import Barrier

pytestmark = pytest.mark.anyio


class Review(BaseModel):
    """A ballot schema of its own: a choice, and fields a `Ballot` does not have or types
    differently."""

    choice: str
    severity: int
    confidence: str = "high"


def says(agent_id: str, answer: str) -> FunctionAgent:
    return FunctionAgent(agent_id, lambda m: answer)


async def test_custom_ballots_are_instances_of_the_schema_and_checkpoint_as_json(
    tmp_path: Path,
) -> None:
    vote = (
        VoteBuilder(id="review")
        .add_agent(says("a", '{"choice": "ship", "severity": 2, "confidence": "low"}'))
        .add_agent(says("b", '{"choice": "ship", "severity": 3}'))
        .with_ballot(Review)
        .build()
    )
    result = (await vote.as_agent().run("ship?").collect()).value
    assert result.ballots == {
        "a": Review(choice="ship", severity=2, confidence="low"),
        "b": Review(choice="ship", severity=3),
    }
    assert result.model_dump()["ballots"]["a"] == {
        "choice": "ship",
        "severity": 2,
        "confidence": "low",
    }
    flow = SequentialBuilder(id="flow").add_agent(vote.as_agent()).build()
    async with SqliteCheckpointStore(tmp_path / "runs.sqlite") as store:
        done = await flow.run("ship?", Session(id="s", store=store))
    assert done.status == "completed"
    assert "ship" in repr(done.outputs[-1])


def tie_with(referee: FunctionAgent) -> Any:
    return (
        VoteBuilder(id="dinner")
        .add_agent(says("x", "soup"))
        .add_agent(says("y", "pasta"))
        .with_policy(judge(referee))
        .build()
        .as_agent()
    )


async def test_a_judge_that_names_no_choice_in_play_is_corrected_and_asked_again() -> None:
    asked: list[list[ChatMessage]] = []
    answers = iter(["banana", "Pasta."])

    def decide(messages: list[ChatMessage]) -> str:
        asked.append(messages)
        return next(answers)

    response = await tie_with(FunctionAgent("referee", decide)).run("dinner?").collect()
    assert response.text == "pasta" and response.value.winner == "pasta"
    assert "one of: 'soup', 'pasta'" in asked[0][-1].text
    assert "'banana' is not one of the choices in play" in asked[1][-1].text


async def test_a_judge_that_keeps_naming_other_things_fails_the_vote_naming_it() -> None:
    referee = FunctionAgent("referee", lambda m: "banana")
    with pytest.raises(SchemaValidationError, match="judge 'referee'") as info:
        await tie_with(referee).run("dinner?").collect()
    assert info.value.path[0] == "dinner"
    assert "'soup', 'pasta'" in str(info.value) and "'banana'" in str(info.value)


def test_in_play_matches_a_choice_as_people_write_it() -> None:
    assert in_play(" **Soup** ", ["soup", "pasta"]) == "soup"
    assert in_play("'pasta'.", ["soup", "pasta"]) == "pasta"
    assert in_play("soup or pasta", ["soup", "pasta"]) is None


async def test_several_voters_over_the_budget_raise_one_budget_exceeded() -> None:
    barrier = Barrier(3)

    def over(agent_id: str) -> FunctionAgent:
        async def vote(messages: list[ChatMessage]) -> str:
            await barrier.wait()
            raise BudgetExceeded(
                f"{agent_id} crossed the budget", kind="tokens", limit=1, used=2, path=(agent_id,)
            )

        return FunctionAgent(agent_id, vote)

    panel = VoteBuilder(id="panel")
    for voter in ("a", "b", "c"):
        panel.add_agent(over(voter))
    with pytest.raises(BudgetExceeded) as info:
        await panel.build().as_agent().run("go").collect()
    assert info.value.kind == "tokens" and "crossed the budget" in str(info.value)


def test_add_agent_checks_its_voter() -> None:
    with pytest.raises(TypeError, match=r"VoteBuilder 'v'.*pass the agent itself"):
        VoteBuilder(id="v").add_agent("a")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"VoteBuilder 'v'.*takes an agent"):
        VoteBuilder(id="v").add_agent(FunctionAgent)  # type: ignore[arg-type]
