"""OpenAIProvider through the real openai client against ScriptedOpenAIServer over HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import openai
import pytest
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from raf import ReactAgent
from raf.errors import ProviderError
from raf.messages import ChatMessage, ToolCallContent
from raf.providers.base import (
    Completion,
    LlmProvider,
    ProviderEvent,
    ReasoningChunk,
    TextChunk,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)
from raf.providers.openai import LOCAL_API_KEY, OpenAIProvider, create_client
from raf.providers.retry import RetryPolicy
from raf.testing import ScriptedOpenAIServer, Turn, error, resolve, text, tool_calls
from raf.tools.definition import ToolDefinition

pytestmark = pytest.mark.anyio

HI = [ChatMessage.user("hi")]
FAST = RetryPolicy(initial_delay=0.001, max_delay=0.001, jitter=False)
ADD = ToolDefinition(
    name="add",
    description="Add two numbers.",
    parameters={"type": "object", "properties": {"a": {"type": "number"}}},
)


async def _collect(provider: OpenAIProvider, **kwargs: object) -> list[ProviderEvent]:
    async with provider.stream(HI, **kwargs) as events:  # type: ignore[arg-type]
        return [event async for event in events]


async def test_text_streams_as_chunks_then_one_completion() -> None:
    async with (
        ScriptedOpenAIServer([text("Hello there, world")]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        provider = OpenAIProvider(client, "scripted", retry=FAST)
        assert isinstance(provider, LlmProvider)
        events = await _collect(provider)
        assert not client.is_closed()
    assert [e for e in events if isinstance(e, TextChunk)] == [
        TextChunk("Hello "),
        TextChunk("there, "),
        TextChunk("world"),
    ]
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert (completion.text, completion.finish_reason, completion.tool_calls) == (
        "Hello there, world",
        "stop",
        [],
    )
    (request,) = server.requests
    assert request.body["model"] == "scripted"
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert "tools" not in request.body
    assert "response_format" not in request.body


async def test_reasoning_deltas_stream_before_the_answer() -> None:
    async with (
        ScriptedOpenAIServer([text("42", reasoning="six times seven")]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        events = await _collect(OpenAIProvider(client, "scripted"))
    assert events[:4] == [
        ReasoningChunk("six "),
        ReasoningChunk("times "),
        ReasoningChunk("seven"),
        TextChunk("42"),
    ]
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert completion.reasoning == "six times seven"


@pytest.mark.parametrize("chunk_size", [1, 3, None])
async def test_several_tool_calls_in_one_turn_are_assembled_by_index(
    chunk_size: int | None,
) -> None:
    turn = tool_calls(
        ("add", {"a": 1, "b": 2}),
        ("add", {"a": 30, "b": 12}, "fixed-id"),
        ("lookup", '{"q": "unterminated'),
        chunk_size=chunk_size,
    )
    async with (
        ScriptedOpenAIServer([turn]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        events = await _collect(OpenAIProvider(client, "scripted"), tools=[ADD])
    expected = [
        ToolCallContent(call_id="call_1", name="add", arguments='{"a": 1, "b": 2}'),
        ToolCallContent(call_id="fixed-id", name="add", arguments='{"a": 30, "b": 12}'),
        ToolCallContent(call_id="call_2", name="lookup", arguments='{"q": "unterminated'),
    ]
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [
        ToolCallStarted(c.call_id, c.name) for c in expected
    ]
    for call in expected:
        deltas = [
            e.delta for e in events if isinstance(e, ToolCallDelta) and e.call_id == call.call_id
        ]
        assert "".join(deltas) == call.arguments
        if chunk_size == 1:
            assert len(deltas) == len(call.arguments)
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert completion.tool_calls == expected
    assert completion.finish_reason == "tool_calls"
    assert server.requests[0].body["tools"] == [ADD.to_openai()]
    assert server.requests[0].tools == [ADD]


async def test_response_format_and_defaults_are_sent() -> None:
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object"}},
    }
    async with (
        ScriptedOpenAIServer([resolve({"answer": 1})]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        provider = OpenAIProvider(client, "scripted", temperature=0.25, extra_body={"top_k": 3})
        await _collect(provider, response_format=response_format)
    body = server.requests[0].body
    assert body["response_format"] == response_format
    assert (body["temperature"], body["top_k"]) == (0.25, 3)


async def test_conversation_reaches_the_server_intact() -> None:
    conversation = [
        ChatMessage.system("Be brief."),
        ChatMessage.user("add"),
        ChatMessage(
            role="assistant",
            contents=[ToolCallContent(call_id="c1", name="add", arguments="{}")],
            author="calc",
        ),
        ChatMessage.tool_result("c1", "3"),
    ]
    async with (
        ScriptedOpenAIServer([text("3")]) as server,
        create_client(server.base_url, "test-key") as client,
        OpenAIProvider(client, "scripted").stream(conversation) as events,
    ):
        [event async for event in events]
    assert server.requests[0].messages == conversation


async def test_usage_is_reported() -> None:
    async with (
        ScriptedOpenAIServer([text("ok", usage=(11, 7))]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        events = await _collect(OpenAIProvider(client, "scripted"))
    assert events[-2] == UsageReport(11, 7)
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert (completion.input_tokens, completion.output_tokens) == (11, 7)


async def test_server_error_then_success_is_retried() -> None:
    async with (
        ScriptedOpenAIServer([error(500), text("recovered")]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        events = await _collect(OpenAIProvider(client, "scripted", retry=FAST))
    assert len(server.requests) == 2
    assert events[-1] == Completion(
        text="recovered", input_tokens=2, output_tokens=1, finish_reason="stop"
    )


@pytest.mark.parametrize(
    "headers",
    [{"Retry-After": "0"}, {"retry-after-ms": "1"}, {"Retry-After": "3600"}],
    ids=["seconds", "milliseconds", "capped"],
)
async def test_rate_limit_waits_as_long_as_retry_after_says(headers: dict[str, str]) -> None:
    # The backoff alone would wait a minute: finishing fast shows Retry-After was used
    # (and, for the huge value, capped by max_retry_after).
    slow_backoff = RetryPolicy(initial_delay=60.0, max_delay=60.0, max_retry_after=0.01)
    async with (
        ScriptedOpenAIServer([error(429, headers=headers), text("ok")]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        with anyio.fail_after(5):
            events = await _collect(OpenAIProvider(client, "scripted", retry=slow_backoff))
    assert len(server.requests) == 2
    assert isinstance(events[-1], Completion)


@pytest.mark.parametrize(
    ("status", "advice"),
    [(400, "rejected"), (401, "API key"), (404, "model name"), (422, "rejected")],
)
async def test_client_errors_are_not_retried(status: int, advice: str) -> None:
    async with (
        ScriptedOpenAIServer([error(status, "nope"), text("never")]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        with pytest.raises(ProviderError) as info:
            await _collect(OpenAIProvider(client, "gpt-test", retry=FAST))
    assert len(server.requests) == 1
    err = info.value
    assert (err.status, err.attempts, err.model) == (status, 1, "gpt-test")
    assert isinstance(err.__cause__, openai.APIStatusError)
    assert err.__cause__.status_code == status
    assert "'gpt-test'" in str(err)
    assert f"HTTP {status}" in str(err)
    assert "nope" in str(err)
    assert advice in str(err)


async def test_exhausting_retries_names_model_status_and_attempts() -> None:
    async with (
        ScriptedOpenAIServer([error(503)] * 3) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        provider = OpenAIProvider(
            client, "gpt-test", retry=FAST.model_copy(update={"max_attempts": 3})
        )
        with pytest.raises(ProviderError) as info:
            await _collect(provider)
    assert len(server.requests) == 3
    err = info.value
    assert (err.status, err.attempts) == (503, 3)
    assert "model 'gpt-test' failed with HTTP 503 after 3 attempts" in str(err)
    assert isinstance(err.__cause__, openai.InternalServerError)


async def test_unreachable_endpoint_is_retried_then_reported() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    await listener.aclose()
    async with create_client(f"http://127.0.0.1:{port}/v1", "test-key") as client:
        provider = OpenAIProvider(client, "m", retry=FAST.model_copy(update={"max_attempts": 2}))
        with pytest.raises(ProviderError) as info:
            await _collect(provider)
    err = info.value
    assert (err.status, err.attempts) == (None, 2)
    assert "could not reach" in str(err)
    assert isinstance(err.__cause__, openai.APIConnectionError)


async def test_truncated_stream_raises_after_the_output_it_gave() -> None:
    async with (
        ScriptedOpenAIServer([text("cut short here", truncate=True), text("unused")]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        seen: list[ProviderEvent] = []
        with pytest.raises(ProviderError) as info:
            async with OpenAIProvider(client, "scripted", retry=FAST).stream(HI) as events:
                async for event in events:
                    seen.append(event)
    assert seen == [TextChunk("cut "), TextChunk("short "), TextChunk("here")]
    assert len(server.requests) == 1  # output had been streamed: no retry
    assert "not retried" in str(info.value)


async def test_break_before_the_first_event_is_retried() -> None:
    # An empty truncated answer sends the role chunk and hangs up: no event was yielded yet.
    async with (
        ScriptedOpenAIServer([text("", truncate=True), text("second try")]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        events = await _collect(OpenAIProvider(client, "scripted", retry=FAST))
    assert len(server.requests) == 2
    assert events[0] == TextChunk("second ")
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert completion.text == "second try"


async def test_breaks_before_the_first_event_count_as_attempts() -> None:
    async with (
        ScriptedOpenAIServer([text("", truncate=True)] * 2) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        provider = OpenAIProvider(client, "m", retry=FAST.model_copy(update={"max_attempts": 2}))
        with pytest.raises(ProviderError) as info:
            await _collect(provider)
    assert len(server.requests) == 2
    assert (info.value.status, info.value.attempts) == (None, 2)
    assert "connection error after 2 attempts" in str(info.value)


async def test_leaving_the_stream_early_cancels_the_request_promptly() -> None:
    long_answer = text(" ".join(f"w{i}" for i in range(400)))
    # 400 chunks 20 ms apart take 8 s: the guard below fails unless the request stops.
    async with (
        ScriptedOpenAIServer([long_answer], chunk_delay=0.02) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        provider = OpenAIProvider(client, "scripted")
        await anyio.wait_all_tasks_blocked()
        tasks_before = len(anyio.get_running_tasks())
        with anyio.fail_after(5):
            async with provider.stream(HI) as events:
                first = await anext(events)
            await server.disconnected.wait()
        await anyio.wait_all_tasks_blocked()
        assert len(anyio.get_running_tasks()) == tasks_before
        assert server.disconnects == 1
    assert first == TextChunk("w0 ")


async def test_cancelling_while_waiting_for_the_model_hangs_up() -> None:
    received = anyio.Event()

    def slow_model(messages: list[ChatMessage]) -> Turn:
        received.set()
        return text("late", delay=30)

    async with (
        ScriptedOpenAIServer(slow_model) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        provider = OpenAIProvider(client, "scripted")
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_collect, provider)
                await received.wait()
                tg.cancel_scope.cancel()
            await server.disconnected.wait()
    assert server.disconnects == 1


async def test_timeout_while_waiting_for_the_first_chunk() -> None:
    async with (
        ScriptedOpenAIServer([text("late", delay=30)]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        provider = OpenAIProvider(
            client, "scripted", retry=RetryPolicy(max_attempts=1), timeout=0.2
        )
        with anyio.fail_after(5):
            with pytest.raises(ProviderError) as info:
                await _collect(provider)
            await server.disconnected.wait()
    assert info.value.status is None
    assert "timeout" in str(info.value)


async def test_reserved_arguments_are_refused() -> None:
    async with create_client("http://127.0.0.1:9/v1", "test-key") as client:
        with pytest.raises(TypeError, match="'stream'"):
            OpenAIProvider(client, "m", stream=False)
        with pytest.raises(ValueError, match="timeout"):
            OpenAIProvider(client, "m", timeout=0)


async def test_create_client_disables_the_clients_own_retries() -> None:
    async with create_client("http://127.0.0.1:9/v1", "test-key") as client:
        assert client.max_retries == 0
        assert str(client.base_url) == "http://127.0.0.1:9/v1/"
    assert client.is_closed()


@asynccontextmanager
async def _raw_event_stream_server(
    body: bytes, *, hold: anyio.Event | None = None
) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A server answering every request with `body`, byte for byte, as an event stream.

    Yields the base URL and the request heads received. With `hold`, the server keeps the
    stream open after `body` until `hold` is set: a model that stalls mid-answer.
    (ScriptedOpenAIServer sends text only, so it cannot send bytes that are not UTF-8.)
    """
    heads: list[bytes] = []

    async def answer(stream: SocketStream) -> None:
        async with stream:
            reader = BufferedByteReceiveStream(stream)
            head = await reader.receive_until(b"\r\n\r\n", 65536)
            length = next(
                int(line.partition(b":")[2])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.receive_exactly(length)
            heads.append(head)
            await stream.send(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"connection: close\r\n\r\n" + body
            )
            if hold is not None:
                await hold.wait()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, answer)
        yield f"http://127.0.0.1:{port}/v1", heads
        tg.cancel_scope.cancel()


def _text_chunk(piece: str) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


NOT_UTF8 = b"data: \xff\xfe\n\n"
RETRY_THRICE = FAST.model_copy(update={"max_attempts": 3})


async def test_bytes_that_are_not_utf8_fail_the_call_without_retries() -> None:
    async with (
        _raw_event_stream_server(NOT_UTF8) as (base_url, heads),
        create_client(base_url, "test-key") as client,
    ):
        with anyio.fail_after(5), pytest.raises(ProviderError) as info:
            await _collect(OpenAIProvider(client, "raw-model", retry=RETRY_THRICE))
    assert len(heads) == 1  # the same server would send the same bytes again
    err = info.value
    assert (err.model, err.status, err.attempts) == ("raw-model", None, 1)
    assert isinstance(err.__cause__, UnicodeDecodeError)
    assert "model 'raw-model'" in str(err)
    assert "the server sent bytes that are not UTF-8" in str(err)
    assert base_url in str(err)


async def test_bytes_that_are_not_utf8_after_output_break_the_stream() -> None:
    async with (
        _raw_event_stream_server(_text_chunk("hi") + NOT_UTF8) as (base_url, heads),
        create_client(base_url, "test-key") as client,
    ):
        seen: list[ProviderEvent] = []
        with anyio.fail_after(5), pytest.raises(ProviderError) as info:
            async with OpenAIProvider(client, "raw-model", retry=RETRY_THRICE).stream(HI) as events:
                async for event in events:
                    seen.append(event)
    assert seen == [TextChunk("hi")]
    assert len(heads) == 1
    assert isinstance(info.value.__cause__, UnicodeDecodeError)
    assert "the stream of model 'raw-model' broke" in str(info.value)
    assert "the server sent bytes that are not UTF-8" in str(info.value)


async def test_bytes_that_are_not_utf8_name_the_agent_that_called_the_model() -> None:
    async with (
        _raw_event_stream_server(NOT_UTF8) as (base_url, _),
        create_client(base_url, "test-key") as client,
    ):
        agent = ReactAgent("writer", OpenAIProvider(client, "raw-model", retry=FAST), "Write.")
        with anyio.fail_after(5), pytest.raises(ProviderError) as info:
            await agent.run("go").collect()
    assert info.value.path == ("writer",)
    assert "not UTF-8" in str(info.value)
    assert "'writer'" in str(info.value)


async def test_a_stall_after_output_began_times_out_between_chunks() -> None:
    hold = anyio.Event()
    events: list[ProviderEvent] = []
    try:
        async with (
            _raw_event_stream_server(_text_chunk("hello "), hold=hold) as (base_url, heads),
            create_client(base_url, "key") as client,
        ):
            provider = OpenAIProvider(client, "raw-model", retry=RETRY_THRICE, timeout=0.3)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                async with provider.stream(HI) as stream:
                    async for event in stream:
                        events.append(event)
    finally:
        hold.set()
    assert events == [TextChunk("hello ")]
    assert len(heads) == 1  # output had begun: no retry
    assert "broke after output began" in str(info.value)
    assert "timeout" in str(info.value).lower()


async def test_a_base_url_alone_is_enough_a_placeholder_key_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with ScriptedOpenAIServer([text("hi")]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        async with create_client() as client:
            events = await _collect(OpenAIProvider(client, "local", retry=FAST))
    assert [e for e in events if isinstance(e, TextChunk)] == [TextChunk("hi")]
    assert server.requests[0].headers["authorization"] == f"Bearer {LOCAL_API_KEY}"


async def test_a_key_given_or_set_is_sent_to_the_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    async with ScriptedOpenAIServer([text("a"), text("b")]) as server:
        async with create_client(server.base_url) as client:
            await _collect(OpenAIProvider(client, "m", retry=FAST))
        async with create_client(server.base_url, "given") as client:
            await _collect(OpenAIProvider(client, "m", retry=FAST))
    keys = [r.headers["authorization"] for r in server.requests]
    assert keys == ["Bearer from-env", "Bearer given"]


def test_no_key_and_no_base_url_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match=r"^create_client\(\) has no API key and no base URL: set"):
        create_client()


def test_a_url_given_as_the_client_says_to_build_one() -> None:
    with pytest.raises(TypeError) as raised:
        OpenAIProvider("http://localhost", "m")  # type: ignore[arg-type]
    assert str(raised.value) == (
        "OpenAIProvider: client must be an openai.AsyncOpenAI, not the str 'http://localhost'; "
        "pass OpenAIProvider(create_client('http://localhost'), 'm') (raf.create_client builds "
        "one for a base URL)"
    )


async def test_something_else_as_the_client_or_the_model_is_refused_at_once() -> None:
    with pytest.raises(TypeError, match=r"client must be an openai\.AsyncOpenAI .* got dict; pass"):
        OpenAIProvider({}, "m")  # type: ignore[arg-type]
    async with create_client("http://127.0.0.1:9/v1", "k") as client:
        with pytest.raises(TypeError, match=r"model must be a model name .* got None; pass"):
            OpenAIProvider(client, None)  # type: ignore[arg-type]
        assert OpenAIProvider(client, "m").model == "m"
