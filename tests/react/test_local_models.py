"""Local models (llama.cpp, Ollama, vLLM): native structured output, tool calls written as
text, and the quirks of their servers, through the real `openai` client over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from pydantic import BaseModel

from raf.adapters import ThreadContext, create_react_adapter
from raf.errors import ProviderError
from raf.providers.openai import OpenAIProvider, create_client
from raf.providers.retry import RetryPolicy
from raf.react import ReactAgent
from raf.testing import Quirks, ScriptedOpenAIServer, Turn, text, tool_calls
from raf.tools import tool
from raf.updates import AgentUpdate, TextDelta, ToolCalled, ToolCallEnd, ToolCallStart

pytestmark = pytest.mark.anyio

ONCE = RetryPolicy(max_attempts=1)


class Sight(BaseModel):
    name: str
    hours: int | None = None


@tool
def find_sights(city: str) -> str:
    """The sights of a city."""
    return f"the Opera of {city}"


@asynccontextmanager
async def _provider(
    script: list[Turn], quirks: Quirks | None = None
) -> AsyncIterator[tuple[ScriptedOpenAIServer, OpenAIProvider]]:
    async with (
        ScriptedOpenAIServer(script, quirks=quirks) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        yield server, OpenAIProvider(client, "local", retry=ONCE)


async def _stream(agent: ReactAgent, prompt: str) -> list[AgentUpdate]:
    async with agent.run(prompt) as stream:
        return [u async for u in stream]


async def test_native_mode_sends_a_strict_schema_and_no_resolve_tool_and_corrects_once() -> None:
    script = [text('{"name": 3}'), text('{"name": "Opera", "hours": 2}')]
    async with _provider(script) as (server, provider):
        agent = ReactAgent("s", provider, "Find.", output_schema=Sight, output_mode="native")
        response = await agent.run("Oslo").collect()
    assert response.value == Sight(name="Opera", hours=2)
    first, second = server.requests
    assert "tools" not in first.body
    assert first.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Sight",
            "strict": True,
            "schema": {
                "additionalProperties": False,
                "properties": {
                    "name": {"title": "Name", "type": "string"},
                    "hours": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Hours"},
                },
                "required": ["name", "hours"],
                "title": "Sight",
                "type": "object",
            },
        },
    }
    assert second.body["response_format"] == first.body["response_format"]
    correction = second.body["messages"][-1]
    assert correction["role"] == "user" and "name" in correction["content"]
    assert agent.output_schema() == Sight.model_json_schema()


async def test_native_mode_falls_back_to_json_mode_when_the_server_refuses_json_schema() -> None:
    quirks = Quirks(refused_response_formats=("json_schema",))
    script = [text('{"name": "Opera"}'), text('{"name": "Hall"}')]
    async with _provider(script, quirks) as (server, provider):
        agent = ReactAgent("s", provider, "Find.", output_schema=Sight, output_mode="native")
        assert (await agent.run("Oslo").collect()).value == Sight(name="Opera")
        assert (await agent.run("Bergen").collect()).value == Sight(name="Hall")
    refused, accepted, later = server.requests
    assert refused.body["response_format"]["type"] == "json_schema"
    assert accepted.body["response_format"] == {"type": "json_object"}
    system = accepted.body["messages"][0]["content"]
    assert system.startswith("Find.\n\nAnswer with one JSON object") and '"hours"' in system
    # The provider remembers that this server refuses json_schema.
    assert later.body["response_format"] == {"type": "json_object"}


async def test_a_server_without_structured_output_is_named_clearly() -> None:
    quirks = Quirks(refused_response_formats=("json_schema", "json_object"))
    async with _provider([], quirks) as (_, provider):
        agent = ReactAgent("s", provider, "Find.", output_schema=Sight, output_mode="native")
        with pytest.raises(ProviderError, match="cannot constrain model 'local' to a JSON schema"):
            await agent.run("Oslo").collect()


async def test_the_native_mode_of_the_react_adapter() -> None:
    async def handler(name: str, arguments: str) -> str:
        return "the Opera"

    script = [tool_calls(("find_sights", {"city": "Oslo"})), text('{"name": "Opera"}')]
    async with _provider(script) as (server, provider):
        adapter = create_react_adapter(
            provider, [find_sights.definition], handler, output_mode="native"
        )
        value = await adapter("Find.", Sight)(ThreadContext(thread_id="t"))
    assert value == Sight(name="Opera")
    assert [t["function"]["name"] for t in server.requests[0].body["tools"]] == ["find_sights"]
    assert server.requests[0].body["response_format"]["json_schema"]["strict"] is True


@pytest.mark.parametrize("style", ["bare", "fence", "tags"])
async def test_tool_calls_written_as_text_run_and_stream_as_tool_call_items(style: str) -> None:
    quirks = Quirks(tool_calls_as_text=style)  # type: ignore[arg-type]
    script = [tool_calls(("find_sights", {"city": "Oslo"})), text("See the Opera.")]
    async with _provider(script, quirks) as (server, provider):
        agent = ReactAgent("guide", provider, "Guide.", tools=[find_sights], text_tool_calls=True)
        items = await _stream(agent, "Oslo?")
    assert "tool_calls" not in server.requests[0].body["messages"][-1]
    starts = [u for u in items if isinstance(u, ToolCallStart)]
    assert [(s.name, s.path) for s in starts] == [("find_sights", ("guide",))]
    assert [u.call_id for u in items if isinstance(u, ToolCallEnd)] == [starts[0].call_id]
    called = [u for u in items if isinstance(u, ToolCalled)]
    assert [(c.result, c.is_error) for c in called] == [("the Opera of Oslo", False)]
    # The JSON never streamed as text; only the answer did.
    assert "".join(u.text for u in items if isinstance(u, TextDelta)) == "See the Opera."
    sent = server.requests[1].body["messages"]
    assert sent[-2]["tool_calls"][0]["function"] == {
        "name": "find_sights",
        "arguments": '{"city": "Oslo"}',
    }
    assert sent[-1] == {
        "role": "tool",
        "tool_call_id": starts[0].call_id,
        "content": "the Opera of Oslo",
    }


@pytest.mark.parametrize(
    "answer",
    [
        '{"name": "delete_everything", "arguments": {}}',
        'Sure: {"name": "find_sights", "arguments": {"city": "Oslo"}}',
        '{"name": "find_sights", "arguments": {"city": "Oslo"}, "note": "x"}',
        "{not json",
    ],
)
async def test_anything_else_stays_text(answer: str) -> None:
    async with _provider([text(answer)]) as (_, provider):
        agent = ReactAgent("guide", provider, "Guide.", tools=[find_sights], text_tool_calls=True)
        items = await _stream(agent, "Oslo?")
    assert not [u for u in items if isinstance(u, ToolCallStart)]
    assert "".join(u.text for u in items if isinstance(u, TextDelta)) == answer


async def test_without_the_option_a_tool_call_written_as_text_is_the_answer() -> None:
    quirks = Quirks(tool_calls_as_text="bare")
    async with _provider([tool_calls(("find_sights", {"city": "Oslo"}))], quirks) as (_, provider):
        agent = ReactAgent("guide", provider, "Guide.", tools=[find_sights])
        response = await agent.run("Oslo?").collect()
    assert response.text == '{"name": "find_sights", "arguments": {"city": "Oslo"}}'


async def test_a_tool_name_repeated_in_every_delta_is_one_name() -> None:
    script = [
        Turn("tool_calls", calls=tool_calls(("find_sights", {"city": "Oslo"})).calls, chunk_size=4),
        text("ok"),
    ]
    async with _provider(script, Quirks(repeat_tool_name=True)) as (_, provider):
        agent = ReactAgent("guide", provider, "Guide.", tools=[find_sights])
        items = await _stream(agent, "Oslo?")
    assert [u.name for u in items if isinstance(u, ToolCallStart)] == ["find_sights"]
    assert [u.result for u in items if isinstance(u, ToolCalled)] == ["the Opera of Oslo"]


async def test_a_stream_without_finish_reason_is_a_provider_error_not_an_empty_answer() -> None:
    async with _provider([text("half an ans")], Quirks(omit_finish_reason=True)) as (_, provider):
        agent = ReactAgent("guide", provider, "Guide.")
        with pytest.raises(ProviderError, match="finish_reason") as caught:
            await agent.run("Oslo?").collect()
    assert caught.value.path == ("guide",)
