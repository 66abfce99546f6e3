"""Each agent sees the conversation from its own seat: the request bodies it really sends.

Every test goes through the real `openai` client against `ScriptedOpenAIServer` over HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pydantic import BaseModel

from raf.adapters import ThreadContext, agent_to_adapter, create_llm_adapter, create_react_adapter
from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.engine import FunctionExecutor, NodeContext, WorkflowBuilder
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.providers.openai import OpenAIProvider, create_client
from raf.react import ReactAgent
from raf.session import Session
from raf.testing import Quirks, ScriptedOpenAIServer, Turn, resolve, text, tool_calls
from raf.testing.server import ServerRequest
from raf.tools import tool

pytestmark = pytest.mark.anyio


@tool
def find_sights(city: str) -> str:
    """The sights of a city."""
    return "the Opera"


# What each agent answers, keyed by its instructions (branches may call in any order).
ANSWERS: dict[str, list[Turn]] = {
    "Research.": [tool_calls(("find_sights", {"city": "Oslo"}, "c1")), text("Oslo has the Opera.")],
    "Plan.": [text("Day 1: the Opera.")],
    "Criticise.": [text("Too short.")],
    "Write.": [text("Oslo, one day.")],
}


def _by_instructions(answers: dict[str, list[Turn]]) -> Callable[[list[ChatMessage]], Turn]:
    remaining = {k: list(v) for k, v in answers.items()}

    def script(messages: list[ChatMessage]) -> Turn:
        return remaining[messages[0].text.split("\n\n")[0]].pop(0)

    return script


@asynccontextmanager
async def _served(quirks: Quirks | None = None) -> AsyncIterator[tuple[Any, OpenAIProvider]]:
    async with (
        ScriptedOpenAIServer(_by_instructions(ANSWERS), quirks=quirks) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        yield server, OpenAIProvider(client, "scripted")


def _agent(provider: OpenAIProvider, id: str, instructions: str) -> ReactAgent:
    tools = [find_sights] if id == "researcher" else []
    return ReactAgent(id, provider, instructions, tools=tools)


def _request_of(server: ScriptedOpenAIServer, instructions: str) -> list[dict[str, Any]]:
    matching: list[ServerRequest] = [
        r for r in server.requests if r.body["messages"][0]["content"].startswith(instructions)
    ]
    return matching[-1].body["messages"]


RESEARCHER_SEEN = {
    "role": "user",
    "name": "researcher",
    "content": (
        "[researcher]\n"
        'Called tool find_sights with {"city": "Oslo"}\n'
        "Tool find_sights returned: the Opera\n"
        "Oslo has the Opera."
    ),
}
PLANNER_SEEN = {"role": "user", "name": "planner", "content": "[planner]\nDay 1: the Opera."}
CRITIC_SEEN = {"role": "user", "name": "critic", "content": "[critic]\nToo short."}
QUESTION = {"role": "user", "content": "A day in Oslo?"}


async def test_the_second_third_and_fourth_agent_of_a_sequence_send_their_own_view() -> None:
    async with _served() as (server, provider):
        workflow = (
            SequentialBuilder(id="trip")
            .add_agent(_agent(provider, "researcher", "Research."))
            .add_agent(_agent(provider, "planner", "Plan."))
            .add_agent(_agent(provider, "critic", "Criticise."))
            .add_agent(_agent(provider, "writer", "Write."))
            .build()
        )
        response = await workflow.as_agent().run("A day in Oslo?").collect()
    assert response.text == "Oslo, one day."
    assert [r.body["messages"] for r in server.requests[2:]] == [
        [{"role": "system", "content": "Plan."}, QUESTION, RESEARCHER_SEEN],
        [{"role": "system", "content": "Criticise."}, QUESTION, RESEARCHER_SEEN, PLANNER_SEEN],
        [
            {"role": "system", "content": "Write."},
            QUESTION,
            RESEARCHER_SEEN,
            PLANNER_SEEN,
            CRITIC_SEEN,
        ],
    ]
    # The researcher's own second call keeps its tool call and result paired.
    assert server.requests[1].body["messages"] == [
        {"role": "system", "content": "Research."},
        QUESTION,
        {
            "role": "assistant",
            "name": "researcher",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "find_sights", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "the Opera"},
    ]


async def test_a_concurrent_branch_and_the_agent_after_it() -> None:
    async with _served() as (server, provider):
        branches = (
            ConcurrentBuilder(id="views")
            .add_agent(_agent(provider, "planner", "Plan."))
            .add_agent(_agent(provider, "critic", "Criticise."))
            .build()
            .as_agent()
        )
        workflow = (
            SequentialBuilder(id="trip")
            .add_agent(_agent(provider, "researcher", "Research."))
            .add_agent(branches)
            .add_agent(_agent(provider, "writer", "Write."))
            .build()
        )
        await workflow.as_agent().run("A day in Oslo?").collect()
    for instructions in ("Plan.", "Criticise."):
        assert _request_of(server, instructions) == [
            {"role": "system", "content": instructions},
            QUESTION,
            RESEARCHER_SEEN,
        ]
    assert _request_of(server, "Write.") == [
        {"role": "system", "content": "Write."},
        QUESTION,
        RESEARCHER_SEEN,
        PLANNER_SEEN,
        CRITIC_SEEN,
    ]


async def test_a_nested_workflow() -> None:
    async with _served() as (server, provider):
        inner = (
            SequentialBuilder(id="inner")
            .add_agent(_agent(provider, "planner", "Plan."))
            .add_agent(_agent(provider, "critic", "Criticise."))
            .build()
            .as_agent()
        )
        workflow = (
            SequentialBuilder(id="outer")
            .add_agent(_agent(provider, "researcher", "Research."))
            .add_agent(inner)
            .build()
        )
        await workflow.as_agent().run("A day in Oslo?").collect()
    assert _request_of(server, "Criticise.") == [
        {"role": "system", "content": "Criticise."},
        QUESTION,
        RESEARCHER_SEEN,
        PLANNER_SEEN,
    ]


async def test_the_session_history_keeps_every_message_as_it_was() -> None:
    received: list[list[ChatMessage]] = []

    def recorder(messages: list[ChatMessage]) -> str:
        received.append(messages)
        return "noted"

    async with _served() as (_, provider):
        workflow = (
            SequentialBuilder(id="trip")
            .add_agent(_agent(provider, "researcher", "Research."))
            .add_agent(_agent(provider, "planner", "Plan."))
            .add_agent(FunctionAgent("recorder", recorder))
            .build()
        )
        session = Session()
        response = await workflow.as_agent().run("A day in Oslo?", session).collect()
    # What the agents added, and what the next agent is handed, are the messages as written.
    assert [(m.role, m.author) for m in response.messages] == [
        ("assistant", "researcher"),
        ("tool", "researcher"),
        ("assistant", "researcher"),
        ("assistant", "planner"),
        ("assistant", "recorder"),
    ]
    assert [(m.role, m.author, m.text) for m in received[0]] == [
        ("user", None, "A day in Oslo?"),
        ("assistant", "researcher", ""),
        ("tool", "researcher", ""),
        ("assistant", "researcher", "Oslo has the Opera."),
        ("assistant", "planner", "Day 1: the Opera."),
    ]
    assert "[researcher]" not in session.to_json()


async def test_with_prefill_the_second_agent_of_two_answers_for_itself() -> None:
    # llama.cpp continues a request's trailing assistant message instead of answering it.
    async with _served(Quirks(prefill=True)) as (server, provider):
        workflow = (
            SequentialBuilder(id="pair")
            .add_agent(_agent(provider, "planner", "Plan."))
            .add_agent(_agent(provider, "critic", "Criticise."))
            .build()
        )
        response = await workflow.as_agent().run("A day in Oslo?").collect()
    assert [(m.author, m.text) for m in response.messages] == [
        ("planner", "Day 1: the Opera."),
        ("critic", "Too short."),
    ]
    assert server.requests[-1].body["messages"][-1]["role"] == "user"


async def test_the_agents_own_earlier_turns_stay_assistant_with_their_tool_pairs() -> None:
    answers = {
        "Research.": [
            tool_calls(("find_sights", {"city": "Oslo"}, "c1")),
            text("The Opera."),
            tool_calls(("find_sights", {"city": "Bergen"}, "c2")),
            text("The Opera again."),
        ]
    }
    async with (
        ScriptedOpenAIServer(_by_instructions(answers)) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        agent = _agent(OpenAIProvider(client, "scripted"), "researcher", "Research.")
        session = Session()
        await agent.run("Oslo?", session).collect()
        await agent.run("And Bergen?", session).collect()
    sent = server.requests[-1].body["messages"]
    assert [(m["role"], m.get("name"), m.get("tool_call_id")) for m in sent] == [
        ("system", None, None),
        ("user", None, None),
        ("assistant", "researcher", None),
        ("tool", None, "c1"),
        ("assistant", "researcher", None),
        ("user", None, None),
        ("assistant", "researcher", None),
        ("tool", None, "c2"),
    ]
    assert [c["id"] for c in sent[2]["tool_calls"]] == ["c1"]
    assert [c["id"] for c in sent[6]["tool_calls"]] == ["c2"]


async def test_a_typed_answer_to_a_request_never_goes_out_as_a_tool_message() -> None:
    history = [
        ChatMessage.user("Book it?"),
        ChatMessage.assistant("Shall I book?", author="planner"),
        ChatMessage.tool_result("trip/gate@0#0", '{"approved": true}'),
    ]
    async with _served() as (server, provider):
        planner = _agent(provider, "planner", "Plan.")

        async def plan(message: Any, ctx: NodeContext) -> None:
            # A node may hand an agent any conversation (a run's own input refuses an answer
            # to no pending request: UnknownRequest).
            await ctx.invoke_agent(planner, history)

        trip = WorkflowBuilder("trip").add_executor(FunctionExecutor("plan", plan))
        await trip.set_start("plan").build().as_agent().run("go").collect()
    (request,) = server.requests
    assert request.body["messages"][1:] == [
        {"role": "user", "content": "Book it?"},
        {"role": "assistant", "name": "planner", "content": "Shall I book?"},
        {"role": "user", "content": '{"approved": true}'},
    ]


class Verdict(BaseModel):
    ok: bool


THREAD = ThreadContext(
    thread_id="t",
    start=[ChatMessage.user("A day in Oslo?"), ChatMessage.assistant("The Opera.", author="poet")],
)
POET_SEEN = {"role": "user", "name": "poet", "content": "[poet]\nThe Opera."}


async def test_adapters_present_the_thread_from_their_own_seat() -> None:
    async with (
        ScriptedOpenAIServer(
            [text('{"ok": true}'), resolve({"ok": True}), text("fine"), text('{"ok": true}')]
        ) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        provider = OpenAIProvider(client, "scripted")

        async def no_tools(name: str, arguments: str) -> str:
            return ""

        roles = [
            create_llm_adapter(provider)("Judge.", Verdict),
            create_react_adapter(provider, [], no_tools)("Judge.", Verdict),
            agent_to_adapter(_agent(provider, "judge", "Judge."), provider)("Judge.", Verdict),
        ]
        for role in roles:
            assert await role(THREAD) == Verdict(ok=True)
    for request in server.requests[:3]:
        messages = request.body["messages"]
        assert messages[0]["role"] == "system"
        assert messages[1:] == [QUESTION, POET_SEEN]
