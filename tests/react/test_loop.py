from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raf.agent import RunOptions, default_options
from raf.budget import Budget
from raf.errors import BudgetExceeded, MaxRoundsExceeded, ProviderError
from raf.messages import ChatMessage, ToolCallContent
from raf.providers.base import Completion, TextChunk
from raf.react import ReactAgent, ReactLoop
from raf.run import RunContext, discard
from raf.session import Session
from raf.testing.script import Turn, error, text, tool_calls
from raf.testing.scripted_provider import ScriptedProvider
from raf.tools import ToolDefinition, ToolResult, tool
from raf.updates import AgentUpdate, ToolCallArgs, ToolCalled, Usage
from tests.helpers import EventsProvider
from tests.react.support import Outer

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot handle {reason}")


def tool_results(messages: list[ChatMessage]) -> list[tuple[str, bool]]:
    return [(c.result, c.is_error) for m in messages for c in m.contents if c.type == "tool_result"]


async def run_collecting(agent: ReactAgent, prompt: str, **kwargs: Any) -> list[AgentUpdate]:
    async with agent.run(prompt, **kwargs) as updates:
        return [u async for u in updates]


async def test_tool_calls_of_one_turn_run_concurrently_and_keep_call_order() -> None:
    first_in, second_in, second_done = anyio.Event(), anyio.Event(), anyio.Event()

    @tool
    async def first() -> str:
        """Waits for the second tool."""
        first_in.set()
        await second_in.wait()
        await second_done.wait()
        return "first"

    @tool
    async def second() -> str:
        """Waits for the first tool."""
        second_in.set()
        await first_in.wait()
        second_done.set()
        return "second"

    provider = ScriptedProvider([tool_calls(("first", {}), ("second", {})), text("both")])
    agent = ReactAgent("pair", provider, "Run both.", tools=[first, second])
    with anyio.fail_after(5):
        items = await run_collecting(agent, "go")
    called = [u for u in items if isinstance(u, ToolCalled)]
    assert [c.name for c in called] == ["second", "first"]
    tool_messages = provider.requests[1].messages[-2:]
    assert [m.role for m in tool_messages] == ["tool", "tool"]
    assert tool_results(tool_messages) == [("first", False), ("second", False)]
    calls = provider.requests[1].messages[-3].tool_calls
    assert [m.contents[0].call_id for m in tool_messages] == [c.call_id for c in calls]  # type: ignore[union-attr]


async def test_bad_calls_become_error_results_and_the_loop_recovers() -> None:
    provider = ScriptedProvider(
        [
            tool_calls(
                ("explode", {"reason": "tuesdays"}),
                ("add", "{not json"),
                ("multiply", {"a": 1}),
                ("add", {"a": "one", "b": 2}),
                ("add", {"a": 1, "b": 2}),
            ),
            text("recovered"),
        ]
    )
    agent = ReactAgent("calc", provider, "Add.", tools=[add, explode])
    items = await run_collecting(agent, "go")
    results = tool_results(provider.requests[1].messages)
    assert [is_error for _, is_error in results] == [True, True, True, True, False]
    raised, malformed, unknown, invalid, good = (r for r, _ in results)
    assert raised == "tool 'explode' raised ValueError: cannot handle tuesdays"
    assert "invalid arguments for tool 'add'" in malformed and "Invalid JSON" in malformed
    assert "unknown tool 'multiply'" in unknown and "add, explode" in unknown
    assert "invalid arguments for tool 'add'" in invalid and "a: Input should be" in invalid
    assert good == "3"
    errors = sorted(u.name for u in items if isinstance(u, ToolCalled) and u.is_error)
    assert errors == ["add", "add", "explode", "multiply"]
    assert items[-1].type == "message_completed"


async def test_unknown_tool_without_any_tools_says_so() -> None:
    provider = ScriptedProvider([tool_calls(("search", {})), text("fine")])
    agent = ReactAgent("plain", provider, "Talk.")
    assert (await agent.run("go").collect()).text == "fine"
    [(result, is_error)] = tool_results(provider.requests[1].messages)
    assert is_error and "no tools are available" in result


async def test_max_rounds_exceeded_names_the_path_and_what_to_do() -> None:
    provider = ScriptedProvider(lambda messages: tool_calls(("add", {"a": 1, "b": 1})))
    agent = ReactAgent("calc", provider, "Add.", tools=[add], max_rounds=3)
    items: list[AgentUpdate] = []
    with pytest.raises(MaxRoundsExceeded) as info:
        async with agent.run("loop") as updates:
            async for update in updates:
                items.append(update)
    assert provider.calls == 3
    assert info.value.path == ("calc",)
    assert "3 model calls" in str(info.value) and "max_rounds" in str(info.value)
    assert sum(isinstance(u, ToolCalled) for u in items) == 3


async def test_max_rounds_exceeded_inside_a_parent_has_the_nested_path() -> None:
    provider = ScriptedProvider(lambda messages: tool_calls(("add", {"a": 1, "b": 1})))
    outer = Outer("outer", ReactAgent("calc", provider, "Add.", tools=[add], max_rounds=2))
    with pytest.raises(MaxRoundsExceeded) as info:
        await outer.run("loop").collect()
    assert info.value.path == ("outer", "calc")


async def test_run_options_max_rounds_overrides_the_agent() -> None:
    provider = ScriptedProvider(lambda messages: tool_calls(("add", {"a": 1, "b": 1})))
    agent = ReactAgent("calc", provider, "Add.", tools=[add], max_rounds=10)
    with pytest.raises(MaxRoundsExceeded, match="2 model calls"):
        await agent.run("loop", options=RunOptions(max_rounds=2)).collect()
    assert provider.calls == 2


async def test_usage_is_summed_over_rounds() -> None:
    provider = ScriptedProvider(
        [tool_calls(("add", {"a": 1, "b": 2}), usage=(10, 5)), text("3", usage=(20, 7))]
    )
    agent = ReactAgent("calc", provider, "Add.", tools=[add])
    run = agent.run("1+2")
    async with run as updates:
        usages = [u async for u in updates if isinstance(u, Usage)]
    assert [(u.input_tokens, u.output_tokens, u.path) for u in usages] == [
        (10, 5, ("calc",)),
        (20, 7, ("calc",)),
    ]
    assert run.response is not None
    assert (run.response.usage.input_tokens, run.response.usage.output_tokens) == (30, 12)


async def test_round_budget_raises_with_the_path() -> None:
    provider = ScriptedProvider(lambda messages: tool_calls(("add", {"a": 1, "b": 1})))
    outer = Outer("outer", ReactAgent("calc", provider, "Add.", tools=[add]))
    with pytest.raises(BudgetExceeded) as info:
        await outer.run("go", options=RunOptions(budget=Budget(rounds=2))).collect()
    assert (info.value.kind, info.value.limit, info.value.path) == ("rounds", 2, ("outer", "calc"))
    assert provider.calls == 2


async def test_token_budget_raises_after_the_call_that_crossed_it() -> None:
    provider = ScriptedProvider(
        [tool_calls(("add", {"a": 1, "b": 1}), usage=(40, 10)), text("2", usage=(40, 10))]
    )
    agent = ReactAgent("calc", provider, "Add.", tools=[add])
    with pytest.raises(BudgetExceeded) as info:
        await agent.run("go", options=RunOptions(budget=Budget(tokens=60))).collect()
    assert (info.value.kind, info.value.path) == ("tokens", ("calc",))
    assert provider.calls == 2


async def test_provider_errors_carry_the_path() -> None:
    agent = ReactAgent("calc", ScriptedProvider([error(503)]), "Add.")
    with pytest.raises(ProviderError) as info:
        await agent.run("go").collect()
    assert info.value.status == 503 and info.value.path == ("calc",)


_names = st.one_of(st.sampled_from(["add", "explode", "resolve"]), st.text(max_size=12))
_arguments = st.one_of(
    st.text(max_size=30),
    st.dictionaries(
        st.sampled_from(["a", "b", "reason", "x"]), st.integers() | st.text(max_size=5)
    ).map(json.dumps),
)
_turns = st.lists(
    st.lists(st.tuples(_names, _arguments), min_size=1, max_size=3).map(
        lambda calls: tool_calls(*calls)
    ),
    max_size=6,
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=_turns)
async def test_malformed_model_output_never_crashes_the_loop(turns: list[Turn]) -> None:
    provider = ScriptedProvider([*turns, text("done")])
    agent = ReactAgent("fuzz", provider, "Cope.", tools=[add, explode], max_rounds=4)
    with anyio.fail_after(10):
        try:
            response = await agent.run("go").collect()
        except MaxRoundsExceeded as exc:
            assert len(turns) >= 4
            assert exc.path == ("fuzz",)
            return
    assert len(turns) < 4
    assert response.text == "done"
    calls = [c for m in response.messages for c in m.tool_calls]
    results = [c for m in response.messages for c in m.contents if c.type == "tool_result"]
    assert [c.call_id for c in calls] == [r.call_id for r in results]
    assert len(calls) == sum(len(t.calls) for t in turns)


async def test_calls_and_usage_not_streamed_by_the_provider_are_still_reported() -> None:
    call = ToolCallContent(call_id="c1", name="add", arguments='{"a": 1, "b": 2}')
    provider = EventsProvider(
        [Completion(tool_calls=[call], input_tokens=7, output_tokens=3)],
        [TextChunk("3"), Completion(text="3")],
    )
    agent = ReactAgent("calc", provider, "Add.", tools=[add])
    items = await run_collecting(agent, "1+2")
    assert [u.type for u in items] == [
        "usage",
        "tool_call_start",
        "tool_call_args",
        "tool_call_end",
        "message_completed",
        "tool_called",
        "text_delta",
        "message_completed",
    ]
    assert items[2] == ToolCallArgs(call_id="c1", delta='{"a": 1, "b": 2}', path=("calc",))
    assert items[0] == Usage(input_tokens=7, output_tokens=3, path=("calc",))


async def test_a_stream_without_completion_is_a_provider_error() -> None:
    agent = ReactAgent("calc", EventsProvider([TextChunk("half an ans")]), "Add.")
    with pytest.raises(ProviderError, match="without a completion") as info:
        await agent.run("go").collect()
    assert info.value.path == ("calc",)


async def test_a_failing_dispatcher_surfaces_as_itself_not_as_a_group() -> None:
    async def dispatch(call: ToolCallContent, ctx: RunContext) -> ToolResult:
        if call.name == "bad":
            raise RuntimeError("dispatcher bug")
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    definitions = (ToolDefinition(name="bad"), ToolDefinition(name="slow"))
    loop = ReactLoop(
        ScriptedProvider([tool_calls(("slow", {}), ("bad", {}))]), "", definitions, dispatch
    )
    ctx = RunContext(("loop",), Session(), default_options(), discard)
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="dispatcher bug"):
        await loop.run([ChatMessage.user("go")], ctx)


@pytest.mark.anyio
async def test_message_completed_keeps_the_reasoning_that_streamed() -> None:
    from raf.messages import ReasoningContent
    from raf.react import ReactAgent
    from raf.testing import ScriptedProvider, text
    from raf.updates import MessageCompleted

    agent = ReactAgent(
        "thinker", ScriptedProvider([text("42", reasoning="six times seven")]), "Answer."
    )
    async with agent.run("what is it?") as stream:
        completed = [u for u in [u async for u in stream] if isinstance(u, MessageCompleted)]
    (item,) = completed
    assert item.message.text == "42"
    assert [c.text for c in item.message.contents if isinstance(c, ReasoningContent)] == [
        "six times seven"
    ]
