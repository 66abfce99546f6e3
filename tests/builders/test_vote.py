"""VoteBuilder: ballots, policies, early decision, quorum, nesting, sessions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from raf import (
    Ballot,
    FunctionAgent,
    QuorumNotReached,
    ReactAgent,
    SequentialBuilder,
    Session,
    VoteBuilder,
    VoteResult,
    judge,
    majority,
    unanimous,
    weighted,
)
from raf.errors import GraphValidationError
from raf.messages import ChatMessage
from raf.providers.openai import OpenAIProvider, create_client
from raf.testing import ScriptedOpenAIServer, Turn, resolve, text
from raf.updates import AgentUpdate
from tests.helpers import Barrier, Foreign, answers_in_sessions, task_count

pytestmark = pytest.mark.anyio


def says(agent_id: str, answer: str) -> FunctionAgent:
    return FunctionAgent(agent_id, lambda m: answer)


def vote_of(*voters: Any) -> VoteBuilder:
    builder = VoteBuilder(id="vote")
    for voter in voters:
        builder.add_agent(voter)
    return builder


async def collect_items(
    agent: Any, prompt: str, session: Session | None = None
) -> list[AgentUpdate]:
    async with agent.run(prompt, session) as updates:
        return [u async for u in updates]


async def test_plurality_by_default_with_one_message_authored_by_the_vote() -> None:
    agent = vote_of(says("a", "tea"), says("b", " coffee\n"), says("c", "tea")).build().as_agent()
    response = await agent.run("tea or coffee?").collect()
    [message] = response.messages
    assert (message.text, message.author, message.role) == ("tea", "vote", "assistant")
    result = response.value
    assert isinstance(result, VoteResult)
    assert result.winner == "tea" and result.tally == {"tea": 2.0, "coffee": 1.0}
    assert result.ballots["b"] == Ballot(choice="coffee")
    assert not result.decided_early and result.errors == {}
    assert agent.metadata.kind == "vote" and agent.metadata.children == ("a", "b", "c")


async def test_ballots_from_values_json_text_and_abstentions() -> None:
    class Verdict(BaseModel):
        choice: str
        severity: int

    def failing(messages: list[ChatMessage]) -> str:
        raise RuntimeError("voter broke")

    voters = [
        says("json", '```json\n{"choice": "ship", "severity": 2}\n```'),
        says("bare", '{"choice": "hold", "severity": 1}'),
        says("prose", "ship it"),  # not JSON of the custom schema: abstains
        FunctionAgent("broken", failing),
    ]
    agent = vote_of(*voters).with_ballot(Verdict).build().as_agent()
    result = (await agent.run("ship?").collect()).value
    # The ballots are the schema's own instances.
    assert result.ballots["json"] == Verdict(choice="ship", severity=2)
    assert result.ballots["bare"] == Verdict(choice="hold", severity=1)
    assert result.ballots["prose"] is None and result.ballots["broken"] is None
    assert result.errors["prose"].startswith("invalid ballot: its answer is not JSON of Verdict")
    assert result.errors["broken"] == "failed: RuntimeError: voter broke"
    assert result.winner == "ship"  # the tie goes to the earliest voter


async def test_react_voters_over_real_http_send_their_ballot_schema() -> None:
    def model(messages: list[ChatMessage]) -> Turn:
        if messages[0].text == "tool voter":
            return resolve({"choice": "blue", "confidence": 0.9, "rationale": "calm"})
        return text(json.dumps({"choice": "blue", "confidence": 0.4, "rationale": "cool"}))

    async with ScriptedOpenAIServer(model) as server, create_client(server.base_url, "k") as client:
        provider = OpenAIProvider(client, "scripted")
        agent = (
            vote_of(
                ReactAgent("t", provider, "tool voter", output_schema=Ballot),
                ReactAgent("n", provider, "text voter"),  # its JSON answer is its ballot
            )
            .with_policy(unanimous())
            .build()
            .as_agent()
        )
        response = await agent.run("which colour?").collect()
    result = response.value
    assert result.winner == "blue" and response.text == "blue"
    assert result.ballots == {
        "t": Ballot(choice="blue", confidence=0.9, rationale="calm"),
        "n": Ballot(choice="blue", confidence=0.4, rationale="cool"),
    }
    by_voter = {r.messages[0].text: r for r in server.requests}
    [resolve_tool] = by_voter["tool voter"].tools
    assert resolve_tool.name == "resolve"
    assert resolve_tool.parameters["properties"]["choice"] == {"title": "Choice", "type": "string"}
    plain = by_voter["text voter"]
    assert plain.tools == [] and plain.response_format is None
    assert response.usage.total_tokens > 0


async def test_a_decided_vote_cancels_the_slow_voter_and_leaks_nothing() -> None:
    started = anyio.Event()
    cancelled = anyio.Event()

    async def slow(messages: list[ChatMessage]) -> str:
        started.set()
        try:
            await anyio.sleep(30)  # would take far longer than the test allows
        finally:
            cancelled.set()
        return "no"  # pragma: no cover

    async def fast(messages: list[ChatMessage]) -> str:
        await started.wait()  # the slow voter is under way when the vote is decided
        return "yes"

    agent = (
        vote_of(FunctionAgent("slow", slow), FunctionAgent("f1", fast), FunctionAgent("f2", fast))
        .with_policy(majority())
        .build()
        .as_agent()
    )
    before = task_count()
    with anyio.fail_after(5):
        response = await agent.run("go?").collect()
        await cancelled.wait()
    result = response.value
    assert result.winner == "yes" and result.decided_early
    assert result.ballots["slow"] is None
    assert result.errors["slow"].startswith("cancelled")
    assert task_count() == before


async def test_leaving_the_stream_early_cancels_every_voter() -> None:
    cancelled = 0
    both = anyio.Event()

    async def waits(messages: list[ChatMessage]) -> AsyncIterator[str]:
        nonlocal cancelled
        yield "thinking"
        try:
            await anyio.sleep_forever()
        finally:
            cancelled += 1
            if cancelled == 2:
                both.set()
        yield "never"  # pragma: no cover

    agent = vote_of(FunctionAgent("a", waits), FunctionAgent("b", waits)).build().as_agent()
    before = task_count()
    with anyio.fail_after(5):
        seen = 0
        async with agent.run("go") as updates:
            async for update in updates:
                seen += update.type == "text_delta"
                if seen == 2:
                    break
        await both.wait()
    assert task_count() == before


async def test_quorum_not_reached_names_the_vote_and_why() -> None:
    agent = (
        vote_of(says("a", "x"), says("b", ""), says("c", "  ")).with_quorum(2).build().as_agent()
    )
    with pytest.raises(QuorumNotReached) as info:
        await agent.run("go").collect()
    assert info.value.path == ("vote",)
    assert "1 valid ballot(s) of 3" in str(info.value) and "quorum of 2" in str(info.value)
    assert "b: invalid ballot: it answered nothing" in str(info.value)


async def test_a_tie_goes_to_the_judge_which_sees_the_ballots() -> None:
    seen: list[str] = []

    def decide(messages: list[ChatMessage]) -> str:
        seen.append(messages[-1].text)
        return "pasta"

    referee = FunctionAgent("referee", decide)
    agent = (
        vote_of(says("a", "soup"), says("b", "pasta"))
        .with_policy(judge(referee))
        .build()
        .as_agent()
    )
    assert agent.metadata.children == ("a", "b", "referee")
    items = await collect_items(agent, "dinner?")
    response_text = [u.message.text for u in items if u.type == "message_completed"][-1]
    assert response_text == "pasta"
    assert "- a: soup" in seen[0] and "- b: pasta" in seen[0]
    assert any(u.path == ("vote", "referee") for u in items if u.type == "text_delta")


async def test_weighted_votes_and_no_majority() -> None:
    heavy = vote_of(says("a", "x"), says("b", "y"), says("c", "y")).with_policy(weighted({"a": 3}))
    assert (await heavy.build().as_agent().run("?").collect()).text == "x"
    split = vote_of(says("a", "x"), says("b", "y"), says("c", "z")).with_policy(majority())
    response = await split.build().as_agent().run("?").collect()
    assert response.value.winner is None
    assert response.text == "no winner: no choice has more than half of the ballots"


async def test_nested_in_a_sequence_with_nested_and_foreign_voters() -> None:
    pair = (
        SequentialBuilder(id="pair")
        .add_agent(says("draft", "maybe"))
        .add_agent(FunctionAgent("final", lambda m: "yes"))
        .build()
        .as_agent()
    )
    panel = vote_of(pair, Foreign(says("outside", "yes")), says("c", "no")).build().as_agent()
    top = (
        SequentialBuilder(id="top")
        .add_agent(panel)
        .add_agent(FunctionAgent("after", lambda m: f"heard {m[-1].text}"))
        .build()
        .as_agent()
    )
    items = await collect_items(top, "go")
    deltas = {(u.path, u.text) for u in items if u.type == "text_delta"}
    assert (("top", "vote", "pair", "draft"), "maybe") in deltas
    assert (("top", "vote", "pair", "final"), "yes") in deltas
    assert (("top", "vote", "outside"), "yes") in deltas
    completed = [(u.path, u.message.text) for u in items if u.type == "message_completed"]
    assert (("top", "after"), "heard yes") in completed
    assert (("top", "vote"), "yes") in completed  # the vote's own answer streams at its path
    invoked = [u for u in items if u.type == "executor_invoked" and u.path == ("top", "vote")]
    assert [u.executor_id for u in invoked] == ["poll", "count"]
    assert invoked[-1].value.winner == "yes"


async def test_one_built_vote_serves_twenty_sessions_at_once() -> None:
    everyone = Barrier(60)

    async def voter(messages: list[ChatMessage]) -> str:
        await everyone.wait()  # all twenty votes are open at once
        return messages[-1].text.split()[-1]

    agent = vote_of(*(FunctionAgent(v, voter) for v in ("a", "b", "c"))).build().as_agent()
    answers = await answers_in_sessions(agent, [f"vote {i}" for i in range(20)])
    assert answers == [str(i) for i in range(20)]


def test_builder_checks_its_arguments() -> None:
    with pytest.raises(GraphValidationError, match="no participants"):
        VoteBuilder().build()
    with pytest.raises(GraphValidationError, match="same id: 'a'"):
        vote_of(says("a", "x")).with_policy(judge(says("a", "y"))).build()
    with pytest.raises(GraphValidationError, match="not in the vote: 'z'"):
        vote_of(says("a", "x")).with_policy(weighted({"z": 2})).build()
    with pytest.raises(GraphValidationError, match="quorum of 3 can never be reached"):
        vote_of(says("a", "x")).with_quorum(3).build()
    with pytest.raises(ValueError, match="positive int"):
        VoteBuilder().with_quorum(0)
    with pytest.raises(TypeError, match="`choice: str`"):
        VoteBuilder().with_ballot(dict)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="judge"):
        VoteBuilder().with_policy("majority")  # type: ignore[arg-type]
    workflow = vote_of(says("poll", "x"), says("count", "y")).build()
    assert list(workflow.executors) == ["poll_2", "count_2"]
    assert VoteBuilder().add_agent(says("a", "x")).build().id == "workflow_vote_source"


def test_a_default_ballot_is_read_from_json_prose_or_plain_text() -> None:
    from raf.builders.vote.ballot import read_ballot
    from raf.updates import AgentResponse

    def read(answer: str) -> tuple[BaseModel | None, str | None]:
        return read_ballot(AgentResponse(messages=[ChatMessage.assistant(answer)]), Ballot)

    assert read("  tea\n") == (Ballot(choice="tea"), None)  # plain text is the choice
    assert read('I vote {"choice": "tea", "confidence": 0.5}.') == (
        Ballot(choice="tea", confidence=0.5),
        None,
    )
    assert read(' {"choice": "tea"}') == (Ballot(choice="tea"), None)
    assert read("use {tea}") == (Ballot(choice="use {tea}"), None)  # no JSON in the braces
    ballot, problem = read("```\ntea\n```")  # a fence holds JSON or nothing
    assert ballot is None and problem is not None
    assert problem.startswith("its answer is not JSON of Ballot")
    assert read(' {"choice": 3}')[1] == (
        "its answer is not JSON of Ballot: choice: Input should be a valid string (got 3)"
    )


async def test_a_vote_where_every_voter_failed_is_an_error_naming_their_errors() -> None:
    def down(messages: list[ChatMessage]) -> str:
        raise RuntimeError("model endpoint down")

    agent = vote_of(FunctionAgent("a", down), FunctionAgent("b", down)).build().as_agent()
    with pytest.raises(QuorumNotReached, match="every voter failed") as failed:
        await agent.run("ship?").collect()
    assert "a: failed: RuntimeError: model endpoint down" in str(failed.value)
    assert "b: failed" in str(failed.value)


async def test_a_vote_with_some_failures_says_how_many_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def down(messages: list[ChatMessage]) -> str:
        raise RuntimeError("model endpoint down")

    agent = vote_of(says("a", "ship"), FunctionAgent("b", down)).build().as_agent()
    with caplog.at_level("WARNING", logger="raf"):
        response = await agent.run("ship?").collect()
    assert response.value.winner == "ship"
    assert any("1 of 2 voters failed" in r.getMessage() for r in caplog.records)
    split = vote_of(says("a", "ship"), says("c", "hold"), FunctionAgent("b", down))
    tied = await split.with_policy(majority()).build().as_agent().run("ship?").collect()
    assert tied.text.endswith("(1 of 3 voters failed)")
