"""ScriptedProvider, and what raf.testing exports."""

from __future__ import annotations

import anyio
import pytest

import raf.testing
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
from raf.testing import (
    ScriptedProvider,
    ScriptExhausted,
    Turn,
    error,
    resolve,
    text,
    tool_calls,
)
from raf.tools.definition import ToolDefinition

pytestmark = pytest.mark.anyio

HI = [ChatMessage.user("hi")]


async def _collect(
    provider: ScriptedProvider, messages: list[ChatMessage] = HI, **kwargs: object
) -> list[ProviderEvent]:
    async with provider.stream(messages, **kwargs) as events:  # type: ignore[arg-type]
        return [e async for e in events]


async def test_events_come_in_order_and_end_with_the_completion() -> None:
    provider = ScriptedProvider([text("a b", reasoning="r s", usage=(4, 3))])
    assert isinstance(provider, LlmProvider)
    assert await _collect(provider) == [
        ReasoningChunk("r "),
        ReasoningChunk("s"),
        TextChunk("a "),
        TextChunk("b"),
        UsageReport(4, 3),
        Completion(
            text="a b", reasoning="r s", input_tokens=4, output_tokens=3, finish_reason="stop"
        ),
    ]


async def test_tool_calls_are_numbered_unless_given_an_id() -> None:
    provider = ScriptedProvider(
        [tool_calls(("f", {"x": 1}), ("g", "{}", "mine")), tool_calls(("h", {}))]
    )
    first = await _collect(provider)
    second = await _collect(provider)
    assert [e for e in first if isinstance(e, ToolCallStarted | ToolCallDelta)] == [
        ToolCallStarted("call_1", "f"),
        ToolCallDelta("call_1", '{"x": 1}'),
        ToolCallStarted("mine", "g"),
        ToolCallDelta("mine", "{}"),
    ]
    completion = second[-1]
    assert isinstance(completion, Completion)
    assert completion.tool_calls == [ToolCallContent(call_id="call_2", name="h", arguments="{}")]
    assert completion.finish_reason == "tool_calls"


async def test_resolve_calls_the_resolve_tool() -> None:
    events = await _collect(ScriptedProvider([resolve({"answer": 42})]))
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert [(c.name, c.arguments) for c in completion.tool_calls] == [("resolve", '{"answer": 42}')]


async def test_requests_are_recorded() -> None:
    tool = ToolDefinition(name="f")
    response_format = {"type": "json_object"}
    provider = ScriptedProvider([text("1"), text("2")])
    await _collect(provider, tools=[tool], response_format=response_format)
    await _collect(provider, [ChatMessage.system("s"), ChatMessage.user("again")])
    assert provider.calls == 2
    first, second = provider.requests
    assert (first.messages, first.tools, first.response_format) == (HI, [tool], response_format)
    assert (second.messages[-1].text, second.tools, second.response_format) == ("again", [], None)


async def test_running_out_of_turns_says_how_to_fix_it() -> None:
    provider = ScriptedProvider([text("only")])
    await _collect(provider)
    with pytest.raises(ScriptExhausted) as info:
        await _collect(provider)
    assert str(info.value) == (
        "the model was called 2 times but the script has 1 turns; "
        "add turns or use a function script"
    )


async def test_error_turns_raise_provider_error() -> None:
    provider = ScriptedProvider([error(503, "overloaded"), text("fine")], model="m")
    with pytest.raises(ProviderError) as info:
        await _collect(provider)
    assert (info.value.status, info.value.model) == (503, "m")
    assert "overloaded" in str(info.value)
    assert (await _collect(provider))[-1] == Completion(
        text="fine", input_tokens=2, output_tokens=1, finish_reason="stop"
    )


async def test_function_scripts_answer_each_call_from_its_messages() -> None:
    def model(messages: list[ChatMessage]) -> Turn:
        last = messages[-1].text
        return error(400) if last == "bad" else text(last.upper())

    provider = ScriptedProvider(model)
    for word in ("one", "two", "three"):
        assert (await _collect(provider, [ChatMessage.user(word)]))[-1].text == word.upper()  # type: ignore[union-attr]
    with pytest.raises(ProviderError):
        await _collect(provider, [ChatMessage.user("bad")])
    assert provider.calls == 4


async def test_delay_can_be_cancelled() -> None:
    provider = ScriptedProvider([text("late", delay=30)])
    with anyio.fail_after(5), anyio.move_on_after(0.01) as scope:
        await _collect(provider)
    assert scope.cancelled_caught


async def test_leaving_early_closes_the_stream() -> None:
    provider = ScriptedProvider([text(" ".join(["w"] * 100))])
    async with provider.stream(HI) as events:
        assert await anext(events) == TextChunk("w ")
    # The events were closed with the stream: nothing more comes out.
    with pytest.raises(StopAsyncIteration):
        await anext(events)


def test_testing_exports_are_importable_and_documented() -> None:
    assert raf.testing.__doc__ and "Example" in raf.testing.__doc__
    assert set(raf.testing.__all__) == {
        "Quirks",
        "Recording",
        "ScriptedProvider",
        "ScriptedOpenAIServer",
        "Turn",
        "text",
        "tool_calls",
        "resolve",
        "error",
        "ScriptExhausted",
    }
    for name in raf.testing.__all__:
        assert getattr(raf.testing, name).__doc__, name
