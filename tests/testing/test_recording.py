from __future__ import annotations

from pathlib import Path

import pytest

from raf import ConcurrentBuilder, IAgent, ReactAgent, SequentialBuilder, tool
from raf.messages import ChatMessage
from raf.providers.base import LlmProvider
from raf.providers.openai import OpenAIProvider, create_client
from raf.testing import Recording, ScriptedOpenAIServer, ScriptExhausted, Turn, text, tool_calls
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
