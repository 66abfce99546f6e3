from __future__ import annotations

import pytest
from pydantic import BaseModel

from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.errors import GraphValidationError
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.react import ReactAgent
from raf.session import Session
from raf.testing import ScriptedProvider, resolve
from raf.updates import ExecutorInvoked, ExecutorInvoking

pytestmark = pytest.mark.anyio


def seen(agent_id: str) -> FunctionAgent:
    """Answers with the texts it was given, so tests see what each agent saw."""
    return FunctionAgent(agent_id, lambda ms: f"{agent_id} saw [{', '.join(m.text for m in ms)}]")


async def test_each_agent_sees_the_whole_conversation_so_far() -> None:
    workflow = SequentialBuilder(id="s").add_agent(seen("a")).add_agent(seen("b")).build()
    response = await workflow.as_agent().run("q").collect()
    assert [m.text for m in response.messages] == [
        "a saw [q]",
        "b saw [q, a saw [q]]",
    ]
    assert [m.author for m in response.messages] == ["a", "b"]


async def test_second_turn_continues_the_conversation() -> None:
    agent = SequentialBuilder(id="s").add_agent(seen("a")).build().as_agent()
    session = Session()
    await agent.run("one", session).collect()
    response = await agent.run("two", session).collect()
    assert response.text == "a saw [one, a saw [one], two]"


async def test_stream_has_balanced_executor_items_in_order() -> None:
    agent = SequentialBuilder(id="s").add_agent(seen("a")).add_agent(seen("b")).build().as_agent()
    async with agent.run("q") as stream:
        items = [u async for u in stream]
    lifecycle = [
        (u.type, u.executor_id) for u in items if isinstance(u, ExecutorInvoking | ExecutorInvoked)
    ]
    assert lifecycle == [
        ("executor_invoking", "a"),
        ("executor_invoked", "a"),
        ("executor_invoking", "b"),
        ("executor_invoked", "b"),
    ]
    invoked = [u for u in items if isinstance(u, ExecutorInvoked)]
    assert invoked[0].messages == [ChatMessage.assistant("a saw [q]", author="a")]
    deltas = [(u.path, u.text) for u in items if u.type == "text_delta"]
    assert deltas == [(("s", "a"), "a saw [q]"), (("s", "b"), "b saw [q, a saw [q]]")]


def test_metadata_and_default_id() -> None:
    agent = SequentialBuilder().add_agent(seen("a")).add_agent(seen("b")).build().as_agent()
    assert agent.id == "workflow_seq_agent_0"
    assert agent.metadata.kind == "sequential"
    assert agent.metadata.children == ("a", "b")
    assert agent.get_subagent("b") is not None


def test_duplicate_sibling_ids_are_rejected_at_build() -> None:
    builder = SequentialBuilder(id="s").add_agent(seen("a")).add_agent(seen("a"))
    with pytest.raises(GraphValidationError, match=r"same id: 'a'.*unique") as info:
        builder.build()
    assert info.value.ids == ("a",)


def test_empty_sequence_is_rejected() -> None:
    with pytest.raises(GraphValidationError, match="no participants"):
        SequentialBuilder(id="s").build()


def test_graph_renders() -> None:
    workflow = SequentialBuilder(id="s").add_agent(seen("a")).add_agent(seen("b")).build()
    assert "a" in workflow.to_mermaid() and "b" in workflow.to_dot()


async def test_the_last_agents_structured_value_is_the_sequences_value() -> None:
    class Rating(BaseModel):
        score: int

    rater = ReactAgent(
        "rater", ScriptedProvider([resolve({"score": 7})]), "Rate it.", output_schema=Rating
    )
    agent = SequentialBuilder(id="s").add_agent(seen("a")).add_agent(rater).build().as_agent()
    response = await agent.run("q").collect()
    assert response.value == Rating(score=7)
    assert [m.author for m in response.messages] == ["a", "rater", "rater", "rater"]


async def test_a_nested_workflows_value_comes_through_a_sequence() -> None:
    votes = (
        ConcurrentBuilder(id="votes")
        .add_agent(FunctionAgent("x", lambda ms: "yes"))
        .with_aggregator(lambda results: 42)
        .build()
    )
    agent = SequentialBuilder(id="s").add_agent(votes.as_agent()).build().as_agent()
    response = await agent.run("q").collect()
    assert (response.messages, response.value) == ([], 42)


@pytest.mark.parametrize("builder", [SequentialBuilder, ConcurrentBuilder])
@pytest.mark.parametrize("bad", ["", "a/b"])
def test_an_unusable_workflow_id_is_refused_at_once(
    builder: type[SequentialBuilder | ConcurrentBuilder], bad: str
) -> None:
    with pytest.raises(ValueError, match=f"agent id {bad!r} is not usable"):
        builder(id=bad)
