"""Model text reaching raf is valid Unicode: lone surrogates become U+FFFD at the boundary."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf.builders import SequentialBuilder
from raf.providers._unicode import valid_unicode
from raf.providers.openai import OpenAIProvider, create_client
from raf.react import ReactAgent
from raf.session import Session
from raf.stores import SqliteCheckpointStore
from raf.testing import ScriptedOpenAIServer, ScriptedProvider, text, tool_calls
from raf.tools import tool
from raf.updates import ToolCalled

pytestmark = pytest.mark.anyio

LONE = "\ud83d"  # half of a surrogate pair: a legal JSON escape, not a character


@tool
def echo(word: str) -> str:
    """Say the word back."""
    return word


def test_valid_text_is_kept_and_lone_surrogates_are_replaced() -> None:
    assert valid_unicode("plain") == "plain"
    assert valid_unicode("smile \U0001f600 caf\u00e9") == "smile \U0001f600 caf\u00e9"
    assert valid_unicode(f"a{LONE}b\udc00") == "a\ufffdb\ufffd"


async def test_a_lone_surrogate_from_the_server_does_not_poison_the_session() -> None:
    script = [
        text(f"half {LONE} a smile", reasoning=f"think {LONE}"),
        tool_calls(("echo", {"word": f"x{LONE}"})),
        text("still fine"),
    ]
    async with (
        ScriptedOpenAIServer(script) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        agent = ReactAgent("a", OpenAIProvider(client, "scripted"), "Talk.", tools=[echo])
        session = Session()
        first = await agent.run("hi", session).collect()
        assert first.text == "half \ufffd a smile"
        async with agent.run("again", session) as stream:
            items = [u async for u in stream]
    assert [u.result for u in items if isinstance(u, ToolCalled)] == ["x\ufffd"]
    assert "\ufffd" in server.requests[-1].body["messages"][2]["content"]
    session.to_json().encode()  # the history is encodable


async def test_a_checkpointing_run_stores_the_replaced_text(tmp_path: Path) -> None:
    provider = ScriptedProvider([text(f"one {LONE}"), text(f"two {LONE}")])
    workflow = (
        SequentialBuilder(id="s")
        .add_agent(ReactAgent("a", provider, "A."))
        .add_agent(ReactAgent("b", provider, "B."))
        .build()
    )
    async with SqliteCheckpointStore(tmp_path / "runs.sqlite") as store:
        session = Session(id="s1", store=store)
        response = await workflow.as_agent().run("go", session).collect()
        assert [m.text for m in response.messages] == ["one \ufffd", "two \ufffd"]
        assert await store.list("s1")


async def test_the_scripted_provider_replaces_them_too() -> None:
    provider = ScriptedProvider([tool_calls(("echo", {"word": LONE})), text(LONE)])
    agent = ReactAgent("a", provider, "Talk.", tools=[echo])
    response = await agent.run("hi").collect()
    assert response.text == "\ufffd"
    assert response.messages[0].tool_calls[0].arguments == '{"word": "\ufffd"}'
