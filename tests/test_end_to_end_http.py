"""A nested workflow of ReAct agents on `OpenAIProvider`, through the real openai client over HTTP."""

from __future__ import annotations

import anyio
import pytest

from raf import ConcurrentBuilder, ReactAgent, SequentialBuilder, tool
from raf.messages import ChatMessage
from raf.providers.openai import OpenAIProvider, create_client
from raf.testing import ScriptedOpenAIServer, Turn, text, tool_calls
from tests.helpers import task_count

pytestmark = pytest.mark.anyio


@tool
def square(n: int) -> int:
    """Square a number.

    Args:
        n: the number.
    """
    return n * n


def model(messages: list[ChatMessage]) -> Turn:
    """One server plays every agent: the system prompt says who is asking."""
    who = messages[0].text
    if who == "squarer" and messages[-1].role != "tool":
        return tool_calls(("square", {"n": 7}))
    if who == "squarer":
        return text(f"The square is {messages[-1].contents[0].result}.")  # type: ignore[union-attr]
    return text(f"{who} agrees.")


async def test_nested_tree_over_real_http() -> None:
    async with ScriptedOpenAIServer(model) as server, create_client(server.base_url, "k") as client:
        provider = OpenAIProvider(client, "scripted")
        pipeline = (
            SequentialBuilder(id="math")
            .add_agent(ReactAgent("squarer", provider, "squarer", tools=[square]))
            .add_agent(ReactAgent("checker", provider, "checker"))
            .build()
            .as_agent()
        )
        team = (
            ConcurrentBuilder(id="team")
            .add_agent(pipeline)
            .add_agent(ReactAgent("critic", provider, "critic"))
            .build()
            .as_agent()
        )
        async with team.run("square 7") as stream:
            items = [u async for u in stream]
        response = await team.run("again").collect()
    called = [u for u in items if u.type == "tool_called"]
    assert [(u.path, u.result) for u in called] == [(("team", "math", "squarer"), "49")]
    texts = {("/".join(u.path), u.message.text) for u in items if u.type == "message_completed"}
    assert ("team/math/squarer", "The square is 49.") in texts
    assert ("team/math/checker", "checker agrees.") in texts
    assert [m.text for m in response.messages] == ["checker agrees.", "critic agrees."]
    assert response.usage.total_tokens > 0
    assert len(server.requests) == 8


async def test_leaving_the_top_stream_early_hangs_up_every_request() -> None:
    long_answer = text(" ".join(f"w{i}" for i in range(500)))
    async with (
        ScriptedOpenAIServer(lambda m: long_answer, chunk_delay=0.02) as server,
        create_client(server.base_url, "k") as client,
    ):
        provider = OpenAIProvider(client, "scripted")
        team = (
            ConcurrentBuilder(id="team")
            .add_agent(ReactAgent("a", provider, "a"))
            .add_agent(ReactAgent("b", provider, "b"))
            .build()
            .as_agent()
        )
        await anyio.wait_all_tasks_blocked()
        before = task_count()
        with anyio.fail_after(5):
            async with team.run("talk") as stream:
                async for update in stream:
                    if update.type == "text_delta":
                        break
            while server.disconnects < 2:
                await server.disconnected.wait()
                if server.disconnects < 2:
                    await anyio.wait_all_tasks_blocked()
        await anyio.wait_all_tasks_blocked()
        assert task_count() == before
    assert server.disconnects == 2
