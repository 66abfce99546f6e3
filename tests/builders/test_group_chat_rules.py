"""Group chat: who may speak, how the selector ends a chat, what termination sees, failed runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from raf import (
    FunctionAgent,
    GroupChatBuilder,
    MaxRounds,
    ReactAgent,
    Session,
    TextMention,
    llm_selector,
    tool,
)
from raf.agent import AgentMetadata, IAgent
from raf.builders import ChatProgress
from raf.builders.group_chat.selectors import EndChat
from raf.errors import WorkflowError
from raf.messages import ChatMessage
from raf.providers.openai import OpenAIProvider, create_client
from raf.testing import ScriptedOpenAIServer, ScriptedProvider, Turn, text, tool_calls

pytestmark = pytest.mark.anyio

Transcript = list[ChatMessage]
Members = list[AgentMetadata]


def member(agent_id: str) -> FunctionAgent:
    return FunctionAgent(agent_id, lambda m: f"{agent_id} here", f"The {agent_id}.")


def room(*agents: IAgent) -> GroupChatBuilder:
    builder = GroupChatBuilder(id="room")
    for agent in agents:
        builder.add_agent(agent)
    return builder


def spoken(messages: list[ChatMessage]) -> list[tuple[str | None, str]]:
    return [(m.author, m.text) for m in messages]


@tool
def look_up(topic: str) -> str:
    """Look a topic up."""
    return "rain is wet"


async def test_the_llm_selector_sees_the_members_from_its_own_seat_and_gets_no_tools() -> None:
    def model(messages: list[ChatMessage]) -> Turn:
        if messages[0].text.startswith("You coordinate"):
            return text('{"reason": "go", "speaker": "researcher"}')
        if messages[-1].role == "tool":
            return text("Rain is wet.")
        return tool_calls(("look_up", {"topic": "rain"}, "c1"))

    async with (
        ScriptedOpenAIServer(model) as server,
        create_client(server.base_url, "k") as client,
    ):
        provider = OpenAIProvider(client, "scripted")
        researcher = ReactAgent("researcher", provider, "Research.", tools=[look_up])
        chat = room(researcher, member("critic")).with_selector(llm_selector(provider))
        await chat.with_termination(MaxRounds(2)).build().as_agent().run("Rain?").collect()
    selections = [r for r in server.requests if r.response_format is not None]
    assert len(selections) == 2
    second = selections[1].body
    assert "tools" not in second and "tool_choice" not in second
    sent = second["messages"]
    assert [(m["role"], m.get("name")) for m in sent] == [
        ("system", None),
        ("user", None),
        ("user", "researcher"),
        ("user", None),
    ]
    assert sent[2]["content"] == (
        "[researcher]\n"
        'Called tool look_up with {"topic": "rain"}\n'
        "Tool look_up returned: rain is wet\n"
        "Rain is wet."
    )
    assert sent[3]["content"].startswith("Who speaks next?")


async def test_a_selector_ends_the_chat_with_a_final_message() -> None:
    def choose(transcript: Transcript, members: Members) -> str | EndChat:
        return EndChat("We are done.") if len(transcript) > 1 else "a"

    chat = room(member("a"), member("b")).with_selector(choose).build().as_agent()
    response = await chat.run("go").collect()
    assert spoken(response.messages) == [("a", "a here"), ("selector", "We are done.")]
    silent = room(member("a")).with_selector(lambda t, m: EndChat()).build().as_agent()
    assert (await silent.run("go").collect()).messages == []


async def test_an_llm_selector_may_finish_and_is_read_from_prose() -> None:
    answers = [
        text('I pick this: {"reason": "first", "speaker": "b", "finish": false} ok?'),
        text(
            '```json\n{"reason": "done", "speaker": "a", "finish": true, '
            '"final_message": "All said."}\n```'
        ),
    ]
    picks = ScriptedProvider(answers)
    chat = room(member("a"), member("b")).with_selector(llm_selector(picks, allow_finish=True))
    response = await chat.build().as_agent().run("go").collect()
    assert spoken(response.messages) == [("b", "b here"), ("selector", "All said.")]
    assert picks.calls == 2


async def test_no_repeated_speaker_and_a_candidate_filter_narrow_the_choice() -> None:
    offered: list[list[str]] = []

    def first(transcript: Transcript, members: Members) -> str:
        offered.append([m.id for m in members])
        return members[0].id

    def not_c_first(transcript: Transcript, members: Members) -> list[str]:
        return ["a", "b"] if len(transcript) == 1 else ["a", "b", "c"]

    chat = (
        room(member("a"), member("b"), member("c"))
        .with_selector(first, allow_repeated_speaker=False, candidates=not_c_first)
        .with_termination(MaxRounds(3))
    )
    response = await chat.build().as_agent().run("go").collect()
    assert [m.author for m in response.messages] == ["a", "b", "a"]
    assert offered == [["a", "b"], ["b", "c"], ["a", "c"]]


async def test_the_llm_selector_is_not_asked_when_one_candidate_is_left() -> None:
    never = ScriptedProvider([])  # any call would exhaust the script
    chat = room(member("a"), member("b")).with_selector(
        llm_selector(never), candidates=lambda t, m: ["b"]
    )
    response = await chat.with_termination(MaxRounds(2)).build().as_agent().run("go").collect()
    assert [m.author for m in response.messages] == ["b", "b"]
    assert never.calls == 0


@pytest.mark.parametrize("chosen", [["a"], {"id": "a"}, 3, "nobody"])
async def test_a_choice_that_is_not_a_candidate_fails_naming_it(chosen: Any) -> None:
    chat = room(member("a"), member("b")).with_selector(lambda t, m: chosen).build()
    with pytest.raises(WorkflowError, match=r"chose .*, which is not a participant"):
        await chat.as_agent().run("go").collect()


async def test_a_candidate_filter_naming_nobody_fails_clearly() -> None:
    chat = room(member("a")).with_selector(lambda t, m: "a", candidates=lambda t, m: ["z"])
    with pytest.raises(WorkflowError, match="candidate filter of group chat 'room'"):
        await chat.build().as_agent().run("go").collect()


async def test_termination_sees_all_a_speaker_said_and_the_input() -> None:
    @tool
    def noop() -> str:
        """Do nothing."""
        return "done"

    model = ScriptedProvider([tool_calls(("noop", {}), text="DONE, checking."), text("ok")])
    worker = ReactAgent("worker", model, "Work.", tools=[noop])
    chat = room(worker, member("b")).with_termination(TextMention("DONE")).build().as_agent()
    response = await chat.run("go").collect()
    assert [m.author for m in response.messages] == ["worker", "worker", "worker"]
    assert response.messages[-1].text == "ok"
    # The run's input is checked before anyone speaks.
    assert (await chat.run("DONE already").collect()).messages == []


def test_a_text_condition_looks_at_the_new_messages_only() -> None:
    earlier = [ChatMessage.user("say TERMINATE"), ChatMessage.assistant("x", author="a")]
    nothing_new = ChatProgress(earlier, rounds=1, speaker="a", new=[])
    assert not TextMention("TERMINATE").is_met(nothing_new)
    both = ChatProgress(earlier, rounds=1, speaker="a", new=earlier)
    assert TextMention("TERMINATE").is_met(both)


async def test_a_failed_run_leaves_the_round_robin_position_as_it_was() -> None:
    failures = iter([True])

    def flaky(messages: list[ChatMessage]) -> str:
        if next(failures, False):
            raise RuntimeError("the model is down")
        return "a here"

    chat = (
        room(FunctionAgent("a", flaky), member("b"), member("c"))
        .with_termination(MaxRounds(2))
        .build()
        .as_agent()
    )
    session = Session()
    with pytest.raises(WorkflowError, match="the model is down"):
        await chat.run("go", session).collect()
    response = await chat.run("go", session).collect()
    assert [m.author for m in response.messages] == ["a", "b"]
    response = await chat.run("on", session).collect()
    assert [m.author for m in response.messages] == ["c", "a"]
    restored = Session.from_json(session.to_json())
    response = await chat.run("on", restored).collect()
    assert [m.author for m in response.messages] == ["b", "c"]
    assert json.loads(session.to_json())["state"]["room/selector#state"] == {"position": 1}
