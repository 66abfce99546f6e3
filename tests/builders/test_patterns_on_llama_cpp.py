"""Every pattern on a server that behaves like llama.cpp, through `OpenAIProvider` over HTTP.

Such a server continues a request that ends in an assistant message (`prefill`) and refuses
one that ends in two (`refuse_trailing_assistants`): every answer must be the model's own,
whole, and no request may be refused.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from raf import (
    GroupChatBuilder,
    HandoffBuilder,
    MagenticBuilder,
    MaxRounds,
    ReactAgent,
    SequentialBuilder,
    VoteBuilder,
    llm_selector,
    majority,
)
from raf.agent import AgentMetadata
from raf.messages import ChatMessage
from raf.providers.openai import OpenAIProvider, create_client
from raf.testing import Quirks, ScriptedOpenAIServer, Turn, text, tool_calls

pytestmark = pytest.mark.anyio

LLAMA_CPP = Quirks(prefill=True, refuse_trailing_assistants=True)

Script = Callable[[list[ChatMessage]], Turn]


def own(messages: list[ChatMessage]) -> int:
    """How many answers of the asking agent the request holds (its assistant messages)."""
    return sum(m.role == "assistant" and bool(m.text) for m in messages)


def by_instructions(scripts: dict[str, Script]) -> Script:
    """One server for every agent: the system message's first line says who asks."""
    return lambda messages: scripts[messages[0].text.split("\n")[0]](messages)


@asynccontextmanager
async def llama_cpp(scripts: dict[str, Script]) -> AsyncIterator[OpenAIProvider]:
    async with (
        ScriptedOpenAIServer(by_instructions(scripts), quirks=LLAMA_CPP) as server,
        create_client(server.base_url, "local") as client,
    ):
        yield OpenAIProvider(client, "qwen2.5-7b-instruct")
    # No request ended in an assistant message, so none was continued or refused.
    assert server.requests
    assert [
        r.messages[-1].role for r in server.requests if r.messages[-1].role == "assistant"
    ] == []


def answers(messages: list[ChatMessage]) -> list[tuple[str | None, str]]:
    return [(m.author, m.text) for m in messages if m.text]


async def test_a_group_chat_picking_one_speaker_twice_in_a_row() -> None:
    def twice_then_critic(transcript: list[ChatMessage], members: list[AgentMetadata]) -> str:
        spoken = sum(m.author in ("writer", "critic") for m in transcript)
        return "writer" if spoken < 2 else "critic"

    scripts: dict[str, Script] = {
        "Write.": lambda m: text(f"Draft {own(m) + 1}."),
        "Criticise.": lambda m: text("Draft 2 is better."),
    }
    async with llama_cpp(scripts) as provider:
        room = (
            GroupChatBuilder(id="room")
            .add_agent(ReactAgent("writer", provider, "Write."))
            .add_agent(ReactAgent("critic", provider, "Criticise."))
            .with_selector(twice_then_critic)
            .with_termination(MaxRounds(3))
            .build()
            .as_agent()
        )
        response = await room.run("A haiku.").collect()
    assert answers(response.messages) == [
        ("writer", "Draft 1."),
        ("writer", "Draft 2."),
        ("critic", "Draft 2 is better."),
    ]


async def test_a_group_chat_whose_llm_selector_picks_the_same_speaker_again() -> None:
    scripts: dict[str, Script] = {
        "You coordinate a group chat. Read the conversation and choose the participant who "
        "should speak next, by what each participant does.": lambda m: text(
            json.dumps({"reason": "more", "speaker": "writer"})
        ),
        "Write.": lambda m: text(f"Draft {own(m) + 1}."),
        "Criticise.": lambda m: text("Fine."),
    }
    async with llama_cpp(scripts) as provider:
        room = (
            GroupChatBuilder(id="room")
            .add_agent(ReactAgent("writer", provider, "Write.", description="Writes."))
            .add_agent(ReactAgent("critic", provider, "Criticise.", description="Criticises."))
            .with_selector(llm_selector(provider))
            .with_termination(MaxRounds(3))
            .build()
            .as_agent()
        )
        response = await room.run("A haiku.").collect()
    assert answers(response.messages) == [("writer", f"Draft {n}.") for n in (1, 2, 3)]


async def test_handoff() -> None:
    def triage(messages: list[ChatMessage]) -> Turn:
        return tool_calls(("handoff_to_billing", {}))

    scripts: dict[str, Script] = {
        "Route.": triage,
        "Bill.": lambda m: text("Refunded order A17."),
    }
    async with llama_cpp(scripts) as provider:
        desk = (
            HandoffBuilder(ReactAgent("triage", provider, "Route."), id="desk")
            .add_agent(ReactAgent("billing", provider, "Bill.", description="Refunds."))
            .build()
            .as_agent()
        )
        first = await desk.run("I was charged twice.").collect()
        second = await desk.run("Thanks. And the invoice?").collect()
    assert answers(first.messages)[-1] == ("billing", "Refunded order A17.")
    assert answers(second.messages) == [("billing", "Refunded order A17.")]


async def test_sequential() -> None:
    scripts: dict[str, Script] = {
        "Draft.": lambda m: text("Fresh bread."),
        "Edit.": lambda m: text("Fresh bread daily."),
    }
    async with llama_cpp(scripts) as provider:
        copy = (
            SequentialBuilder(id="copy")
            .add_agent(ReactAgent("writer", provider, "Draft."))
            .add_agent(ReactAgent("editor", provider, "Edit."))
            .build()
            .as_agent()
        )
        response = await copy.run("A slogan.").collect()
    assert answers(response.messages) == [
        ("writer", "Fresh bread."),
        ("editor", "Fresh bread daily."),
    ]


async def test_vote() -> None:
    def ballot(choice: str) -> Script:
        return lambda messages: text(choice)

    scripts = {
        "Vote 1.": ballot("publish"),
        "Vote 2.": ballot("publish"),
        "Vote 3.": ballot("revise"),
    }
    async with llama_cpp(scripts) as provider:
        panel = VoteBuilder(id="panel").with_policy(majority())
        for n in (1, 2, 3):
            panel.add_agent(ReactAgent(f"v{n}", provider, f"Vote {n}."))
        response = await panel.build().as_agent().run("Publish it?").collect()
    assert response.text == "publish"


async def test_magentic() -> None:
    def manager(messages: list[ChatMessage]) -> Turn:
        prompt = messages[0].text
        if "task ledger" in prompt:
            return text(json.dumps({"facts": "none", "plan": "- calc adds"}))
        if "progress ledger" in prompt:
            done = "2 and 2 make 4." in "\n".join(m.text for m in messages)

            def yes_no(answer: object) -> dict[str, object]:
                return {"reason": "-", "answer": answer}

            return text(
                json.dumps(
                    {
                        "is_request_satisfied": yes_no(done),
                        "is_in_loop": yes_no(False),
                        "is_progress_being_made": yes_no(True),
                        "next_speaker": yes_no("calc"),
                        "instruction": yes_no("add 2 and 2"),
                    }
                )
            )
        return text("2 + 2 = 4")

    async with (
        ScriptedOpenAIServer(manager, quirks=LLAMA_CPP) as manager_server,
        create_client(manager_server.base_url, "local") as manager_client,
        llama_cpp({"Add.": lambda m: text("2 and 2 make 4.")}) as provider,
    ):
        team = (
            MagenticBuilder(OpenAIProvider(manager_client, "qwen"), id="team")
            .add_agent(ReactAgent("calc", provider, "Add."))
            .build()
            .as_agent()
        )
        response = await team.run("What is 2 + 2?").collect()
    assert response.text == "2 + 2 = 4"
    assert [r.messages[-1].role for r in manager_server.requests] == ["user"] * len(
        manager_server.requests
    )
