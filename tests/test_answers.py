"""`AgentResponse.answers` and `paths`: who said what in a run, by agent path."""

from __future__ import annotations

import pytest

from raf import (
    AgentResponse,
    ChatMessage,
    ConcurrentBuilder,
    FunctionAgent,
    ReactAgent,
    SequentialBuilder,
    tool,
)
from raf.testing import ScriptedProvider, text, tool_calls

pytestmark = pytest.mark.anyio


def _team() -> ConcurrentBuilder:
    draft = FunctionAgent("draft", lambda messages: "A first draft.")
    edit = FunctionAgent("edit", lambda messages: messages[-1].text.upper())
    writing = SequentialBuilder(id="writing").add_agent(draft).add_agent(edit).build()
    review = FunctionAgent("review", lambda messages: "Looks good.")
    return ConcurrentBuilder(id="team").add_agent(writing.as_agent()).add_agent(review)


async def test_a_concurrent_team_answers_with_every_member_by_path() -> None:
    response = await _team().build().as_agent().run("Write a haiku.")
    assert response.text == "Looks good."  # only the last message
    assert response.answers == {
        "team/writing/edit": "A FIRST DRAFT.",
        "team/review": "Looks good.",
    }
    assert response.paths == [("team", "writing", "edit"), ("team", "review")]


async def test_a_streamed_run_has_the_same_answers_as_a_collected_one() -> None:
    agent = _team().build().as_agent()
    run = agent.run("Write a haiku.")
    async with run as stream:
        async for _ in stream:
            pass
    assert run.response is not None
    assert run.response.answers == (await agent.run("again")).answers


async def test_a_react_agent_is_keyed_by_its_final_text_not_its_tool_calls() -> None:
    @tool
    def weather(city: str) -> str:
        """The weather of a city."""
        return "sunny"

    model = ScriptedProvider([tool_calls(("weather", {"city": "Porto"})), text("Sunny.")])
    agent = ReactAgent("forecaster", model, "Answer with the weather.", tools=[weather])
    response = await agent.run("Porto?")
    assert response.answers == {"forecaster": "Sunny."}
    assert len(response.paths) == len(response.messages)


def test_messages_of_unknown_path_are_keyed_by_author_and_the_last_answer_counts() -> None:
    messages = [
        ChatMessage.assistant("first", author="a"),
        ChatMessage.user("a question"),
        ChatMessage.assistant("", author="b"),
        ChatMessage.assistant("second", author="a"),
        ChatMessage.assistant("unsigned"),
    ]
    assert AgentResponse(messages=messages).answers == {"a": "second"}
    # A built response without paths reads as before.
    assert AgentResponse(messages=messages).paths == []
