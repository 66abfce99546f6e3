from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from raf import ConcurrentBuilder, IAgent, ReactAgent, SequentialBuilder, tool
from raf.messages import ChatMessage
from raf.providers.base import Completion, LlmProvider
from raf.providers.openai import OpenAIProvider, create_client
from raf.testing import (
    Recording,
    ScriptedOpenAIServer,
    ScriptedProvider,
    ScriptExhausted,
    Turn,
    text,
    tool_calls,
)
from raf.updates import AgentUpdate

pytestmark = pytest.mark.anyio


@tool
def shout(word: str) -> str:
    """Upper-case a word.

    Args:
        word: the word.
    """
    return word.upper()


def live_model(messages: list[ChatMessage]) -> Turn:
    role = messages[0].text
    if role == "loud" and messages[-1].role != "tool":
        return tool_calls(("shout", {"word": "hey"}))
    if role == "loud":
        return text(f"loud says {messages[-1].contents[0].result}", reasoning="done")  # type: ignore[union-attr]
    return text(f"{role} here")


def tree(provider: LlmProvider) -> IAgent:
    inner = (
        SequentialBuilder(id="pair")
        .add_agent(ReactAgent("loud", provider, "loud", tools=[shout]))
        .add_agent(ReactAgent("calm", provider, "calm"))
        .build()
        .as_agent()
    )
    return (
        ConcurrentBuilder(id="team")
        .add_agent(inner)
        .add_agent(ReactAgent("solo", provider, "solo"))
        .build()
        .as_agent()
    )


async def _items(agent: IAgent) -> list[AgentUpdate]:
    async with agent.run("go") as stream:
        return [u async for u in stream]


def by_path(items: list[AgentUpdate]) -> dict[tuple[str, ...], list[str]]:
    """Each producer's items in order (branches interleave differently from run to run)."""
    grouped: dict[tuple[str, ...], list[str]] = {}
    for item in items:
        if item.type not in ("text_delta", "executor_invoking", "executor_invoked"):
            grouped.setdefault(item.path, []).append(item.model_dump_json(exclude={"path"}))
    return grouped


async def test_a_recorded_tree_replays_offline_identically(tmp_path: Path) -> None:
    recording = Recording()
    async with ScriptedOpenAIServer(live_model) as server, create_client(server.base_url, "k") as c:
        live_items = await _items(tree(recording.record(OpenAIProvider(c, "live"))))
    assert len(recording) == len(server.requests) == 4
    path = tmp_path / "tree.json"
    recording.save(path)

    replayed = await _items(tree(Recording.load(path).replay()))
    assert by_path(replayed) == by_path(live_items)
    live_calls = [u for u in live_items if u.type == "tool_called"]
    assert [u for u in replayed if u.type == "tool_called"] == live_calls
    assert live_calls[0].result == "HEY"


async def test_an_unrecorded_request_says_so() -> None:
    recording = Recording()
    agent = ReactAgent("a", recording.replay(), "a")
    with pytest.raises(ScriptExhausted, match="no recorded answer #1 for a request ending 'hi'"):
        await agent.run("hi").collect()


def test_foreign_json_is_refused() -> None:
    with pytest.raises(ValueError, match="not a raf recording"):
        Recording.from_json('{"version": 99}')


def twin_reviewers(style: LlmProvider, facts: LlmProvider) -> IAgent:
    """Two agents whose requests are identical: same instructions, same conversation."""
    return (
        ConcurrentBuilder(id="review")
        .add_agent(ReactAgent("style", style, "Review the text."))
        .add_agent(ReactAgent("facts", facts, "Review the text."))
        .build()
        .as_agent()
    )


async def test_named_providers_keep_identical_requests_apart() -> None:
    recording = Recording()
    live = twin_reviewers(
        recording.record(ScriptedProvider([text("approve")]), name="style"),
        recording.record(ScriptedProvider([text("revise")]), name="facts"),
    )
    recorded = await live.run("draft").collect()
    replayed = (
        await twin_reviewers(recording.replay(name="style"), recording.replay(name="facts"))
        .run("draft")
        .collect()
    )
    assert (
        [(m.author, m.text) for m in replayed.messages]
        == [(m.author, m.text) for m in recorded.messages]
        == [("style", "approve"), ("facts", "revise")]
    )


async def test_identical_requests_replay_in_the_order_they_were_made() -> None:
    # The first request finishes last; replay still answers requests in the order made.
    recording = Recording()
    live = recording.record(ScriptedProvider([text("first"), text("second")]))
    request = [ChatMessage.user("same question")]
    first_made, second_done = anyio.Event(), anyio.Event()
    finished: list[str] = []

    async def ask(first: bool) -> None:
        async with live.stream(request) as events:
            if first:
                first_made.set()
                await second_done.wait()
            finished.extend([e.text async for e in events if isinstance(e, Completion)])
        if not first:
            second_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, True)
        await first_made.wait()
        tg.start_soon(ask, False)
    assert finished == ["second", "first"]
    replay = recording.replay()
    answers: list[str] = []
    for _ in range(2):
        async with replay.stream(request) as events:
            answers += [e.text async for e in events if isinstance(e, Completion)]
    assert answers == ["first", "second"]


async def test_tools_are_part_of_the_request() -> None:
    recording = Recording()
    live = recording.record(ScriptedProvider([text("with tools")]))
    request = [ChatMessage.user("q")]
    async with live.stream(request, tools=[shout.definition]) as events:
        _ = [e async for e in events]
    replay = recording.replay()
    with pytest.raises(ScriptExhausted, match="no recorded answer #1"):
        async with replay.stream(request) as events:
            _ = [e async for e in events]
