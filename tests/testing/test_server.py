"""ScriptedOpenAIServer: the chat-completions wire format over real HTTP, on asyncio and trio."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import httpx2
import openai
import pytest

from raf.messages import ChatMessage
from raf.providers.base import ProviderEvent
from raf.providers.openai import OpenAIProvider, create_client
from raf.providers.retry import RetryPolicy
from raf.testing import (
    Quirks,
    ScriptedOpenAIServer,
    ScriptedProvider,
    ScriptExhausted,
    Turn,
    error,
    text,
    tool_calls,
)
from raf.testing.script import Script

pytestmark = pytest.mark.anyio

CHAT = {"model": "any", "messages": [{"role": "user", "content": "hi"}]}


def _events(body: str) -> list[str]:
    """The data of each server-sent event of a body."""
    assert body.endswith("\n\n")
    blocks = body[:-2].split("\n\n")
    assert all(block.startswith("data: ") for block in blocks)
    return [block.removeprefix("data: ") for block in blocks]


async def test_base_url_exists_only_while_running() -> None:
    server = ScriptedOpenAIServer([])
    with pytest.raises(RuntimeError, match="async with"):
        _ = server.base_url
    async with server:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", server.base_url)
    with pytest.raises(RuntimeError):
        _ = server.base_url


async def test_unknown_routes_get_404_and_models_are_listed() -> None:
    async with (
        ScriptedOpenAIServer([], model="m1") as server,
        httpx2.AsyncClient(base_url=server.base_url) as http,
    ):
        missing = await http.post("/embeddings", json={})
        models = await http.get("/models")
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == "no route for POST /v1/embeddings"
    assert models.json()["data"] == [{"id": "m1", "object": "model"}]
    assert server.requests == []


@pytest.mark.parametrize("include_usage", [True, False])
async def test_stream_wire_format(include_usage: bool) -> None:
    body = {**CHAT, "stream": True, "stream_options": {"include_usage": include_usage}}
    async with (
        ScriptedOpenAIServer([text("a b", reasoning="r", usage=(3, 2))], model="m1") as server,
        httpx2.AsyncClient(base_url=server.base_url) as http,
    ):
        response = await http.post("/chat/completions", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = _events(response.text)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert {c["model"] for c in chunks} == {"m1"}
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[:4] == [
        {"role": "assistant", "content": ""},
        {"reasoning_content": "r"},
        {"content": "a "},
        {"content": "b"},
    ]
    finals = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert [c["choices"][0]["finish_reason"] for c in finals] == ["stop"]
    usage = [c for c in chunks if "usage" in c]
    if include_usage:
        assert usage == [chunks[-1]]
        assert chunks[-1]["choices"] == []
        assert chunks[-1]["usage"] == {
            "prompt_tokens": 3,
            "completion_tokens": 2,
            "total_tokens": 5,
        }
    else:
        assert usage == []


async def test_tool_calls_stream_id_and_name_first_then_argument_pieces() -> None:
    body = {**CHAT, "stream": True}
    turn = tool_calls(("f", '{"long": true}', "id-f"), ("g", "{}"), chunk_size=5)
    async with (
        ScriptedOpenAIServer([turn]) as server,
        httpx2.AsyncClient(base_url=server.base_url) as http,
    ):
        response = await http.post("/chat/completions", json=body)
    calls = [
        call
        for event in _events(response.text)[:-1]
        for choice in json.loads(event)["choices"]
        for call in choice["delta"].get("tool_calls", [])
    ]
    assert calls[0] == {
        "index": 0,
        "id": "id-f",
        "type": "function",
        "function": {"name": "f", "arguments": ""},
    }
    assert [c["function"]["arguments"] for c in calls[1:4]] == ['{"lon', 'g": t', "rue}"]
    assert calls[4]["index"] == 1 and calls[4]["id"] == "call_1"


async def test_error_turn_answers_with_status_headers_and_openai_error() -> None:
    turn = error(429, "slow down", headers={"Retry-After": "7"})
    async with (
        ScriptedOpenAIServer([turn]) as server,
        httpx2.AsyncClient(base_url=server.base_url) as http,
    ):
        response = await http.post("/chat/completions", json={**CHAT, "stream": True})
    assert response.status_code == 429
    assert response.headers["retry-after"] == "7"
    assert response.json()["error"]["message"] == "slow down"
    assert response.json()["error"]["type"] == "rate_limit_error"


async def test_whole_completion_without_stream() -> None:
    turn = tool_calls(("f", {"x": 1}), text="calling f")
    async with (
        ScriptedOpenAIServer([turn, text("done", reasoning="why")]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        first = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}]
        )
        second = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}]
        )
    message = first.choices[0].message
    assert message.content == "calling f"
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []] == [  # type: ignore[union-attr]
        ("call_1", "f", '{"x": 1}')
    ]
    assert first.choices[0].finish_reason == "tool_calls"
    assert first.usage is not None and first.usage.completion_tokens > 0
    assert second.choices[0].message.content == "done"
    assert (second.choices[0].message.model_extra or {})["reasoning_content"] == "why"


async def test_truncated_whole_completion_breaks_the_connection() -> None:
    async with (
        ScriptedOpenAIServer([text("never whole", truncate=True)]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        with pytest.raises(openai.APIConnectionError):
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "go"}]
            )


async def test_function_script_sees_the_parsed_request() -> None:
    seen: list[list[ChatMessage]] = []

    def echo(messages: list[ChatMessage]) -> Turn:
        seen.append(messages)
        return text(f"echo: {messages[-1].text}")

    tool = {
        "type": "function",
        "function": {"name": "f", "description": "F.", "parameters": {"type": "object"}},
    }
    response_format = {"type": "json_object"}
    async with (
        ScriptedOpenAIServer(echo) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        answer = await client.chat.completions.create(
            model="m",
            messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "ping"}],
            tools=[tool],  # type: ignore[list-item]
            response_format=response_format,  # type: ignore[arg-type]
        )
    assert answer.choices[0].message.content == "echo: ping"
    assert seen == [[ChatMessage.system("s"), ChatMessage.user("ping")]]
    (request,) = server.requests
    assert request.messages == seen[0]
    assert [t.name for t in request.tools] == ["f"]
    assert request.response_format == response_format
    assert request.headers["authorization"] == "Bearer test-key"
    assert server.calls == 1


async def test_running_out_of_turns_answers_400_and_raises_on_exit() -> None:
    with pytest.raises(ScriptExhausted, match="called 2 times but the script has 1 turns"):
        async with (
            ScriptedOpenAIServer([text("only")]) as server,
            create_client(server.base_url, "test-key") as client,
        ):
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "1"}]
            )
            with pytest.raises(openai.BadRequestError, match="script has 1 turns"):
                await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "2"}]
                )


async def test_malformed_body_gets_400_and_is_not_recorded() -> None:
    async with (
        ScriptedOpenAIServer([text("unused")]) as server,
        httpx2.AsyncClient(base_url=server.base_url) as http,
    ):
        not_json = await http.post("/chat/completions", content=b"{oops")
        no_messages = await http.post("/chat/completions", json={"model": "m"})
    assert (not_json.status_code, no_messages.status_code) == (400, 400)
    assert server.requests == []
    assert server.calls == 0


async def test_one_client_makes_many_calls_in_turn_and_at_once() -> None:
    def echo(messages: list[ChatMessage]) -> Turn:
        return text(f"re {messages[-1].text}")

    answers: dict[int, str] = {}

    async with (
        ScriptedOpenAIServer(echo) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        provider = OpenAIProvider(client, "scripted")

        async def ask(n: int) -> None:
            async with provider.stream([ChatMessage.user(f"q{n}")]) as events:
                answers[n] = [e async for e in events][-1].text  # type: ignore[union-attr]

        for n in range(3):
            await ask(n)
        async with anyio.create_task_group() as tg:
            for n in range(3, 10):
                tg.start_soon(ask, n)
    assert answers == {n: f"re q{n}" for n in range(10)}
    assert len(server.requests) == 10


SCRIPTS: list[Any] = [
    [text("Hello world", reasoning="think first")],
    [tool_calls(("add", {"a": 1, "b": 2}), ("mul", "{}", "fixed"), chunk_size=4)],
    [text("x" * 40, chunk_size=7, usage=(9, 9))],
]


@pytest.mark.parametrize("script", SCRIPTS)
async def test_same_events_in_process_and_over_http(script: Script) -> None:
    conversation = [ChatMessage.system("s"), ChatMessage.user("what now?")]

    async def collect(provider: ScriptedProvider | OpenAIProvider) -> list[ProviderEvent]:
        async with provider.stream(conversation) as events:
            return [e async for e in events]

    in_process = await collect(ScriptedProvider(script))
    async with (
        ScriptedOpenAIServer(script) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        over_http = await collect(
            OpenAIProvider(client, "scripted", retry=RetryPolicy(max_attempts=1))
        )
    assert over_http == in_process


@pytest.mark.anyio
async def test_the_bodys_own_exception_comes_out_as_itself() -> None:
    class Mine(Exception):
        pass

    with pytest.raises(Mine, match="from the body") as caught:
        async with ScriptedOpenAIServer([]):
            raise Mine("from the body")
    assert not isinstance(caught.value, BaseExceptionGroup)


async def test_like_llama_cpp_one_trailing_assistant_is_continued_and_two_are_refused() -> None:
    quirks = Quirks(prefill=True, refuse_trailing_assistants=True)
    one = [*CHAT["messages"], {"role": "assistant", "content": "Once upon"}]
    two = [*one, {"role": "assistant", "content": "a time"}]
    async with (
        ScriptedOpenAIServer([text(" a time"), text("unused")], quirks=quirks) as server,
        httpx2.AsyncClient(base_url=server.base_url) as http,
    ):
        continued = await http.post("/chat/completions", json={**CHAT, "messages": one})
        refused = await http.post("/chat/completions", json={**CHAT, "messages": two})
        answered = await http.post("/chat/completions", json=CHAT)
    assert continued.json()["choices"][0]["message"]["content"] == "Once upon a time"
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["message"] == "Cannot have 2 or more assistant messages at the end of the list"
    assert error["type"] == "invalid_request_error"
    # A refused request takes no turn of the script.
    assert answered.json()["choices"][0]["message"]["content"] == "unused"
    assert server.calls == 2
