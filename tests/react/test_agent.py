from __future__ import annotations

import threading

import anyio
import anyio.to_thread
import pytest
from anyio.lowlevel import checkpoint

from raf.agent import IAgent, RunOptions
from raf.errors import MaxRoundsExceeded
from raf.messages import ChatMessage, ToolCallContent, ToolResultContent
from raf.react import ReactAgent
from raf.session import Session
from raf.testing.script import Turn, text, tool_calls
from raf.testing.scripted_provider import ScriptedProvider
from raf.tools import tool
from raf.updates import AgentUpdate, MessageCompleted
from tests.helpers import task_count
from tests.react.support import Outer

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def stream(agent: IAgent, messages: str, **kwargs: object) -> list[AgentUpdate]:
    async with agent.run(messages, **kwargs) as updates:  # type: ignore[arg-type]
        return [u async for u in updates]


def collapse(updates: list[AgentUpdate]) -> list[str]:
    kinds: list[str] = []
    for u in updates:
        if not kinds or kinds[-1] != u.type:
            kinds.append(u.type)
    return kinds


async def test_plain_answer_and_metadata() -> None:
    provider = ScriptedProvider([text("Hello there")])
    agent = ReactAgent("greeter", provider, "Greet.", description="Says hello.")
    response = await agent.run("hi").collect()
    assert response.text == "Hello there"
    assert response.messages == [ChatMessage.assistant("Hello there", author="greeter")]
    assert response.value is None
    meta = agent.metadata
    assert (meta.kind, meta.description, meta.children, meta.output_schema) == (
        "react",
        "Says hello.",
        (),
        None,
    )
    request = provider.requests[0]
    assert request.messages == [ChatMessage.system("Greet."), ChatMessage.user("hi")]
    assert request.tools == []


async def test_stream_order_and_paths_over_a_tool_round() -> None:
    provider = ScriptedProvider(
        [
            tool_calls(("add", {"a": 2, "b": 3}), text="Let me add"),
            text("It is 5", reasoning="two plus three"),
        ]
    )
    agent = ReactAgent("calc", provider, "Add.", tools=[add])
    run = agent.run("2+3?")
    async with run as updates:
        items = [u async for u in updates]
    assert collapse(items) == [
        "text_delta",
        "tool_call_start",
        "tool_call_args",
        "usage",
        "tool_call_end",
        "message_completed",
        "tool_called",
        "reasoning_delta",
        "text_delta",
        "usage",
        "message_completed",
    ]
    assert {u.path for u in items} == {("calc",)}
    assert "".join(u.text for u in items if u.type == "text_delta") == "Let me addIt is 5"
    assert "".join(u.text for u in items if u.type == "reasoning_delta") == "two plus three"
    args = "".join(u.delta for u in items if u.type == "tool_call_args")
    assert args == '{"a": 2, "b": 3}'
    called = [u for u in items if u.type == "tool_called"]
    assert [(c.name, c.result, c.is_error) for c in called] == [("add", "5", False)]

    response = run.response
    assert response is not None
    call = response.messages[0].tool_calls[0]
    assert [m.role for m in response.messages] == ["assistant", "tool", "assistant"]
    assert response.messages[0].text == "Let me add"
    assert response.messages[1].contents == [ToolResultContent(call_id=call.call_id, result="5")]
    assert all(m.author == "calc" for m in response.messages)
    completed = [u.message for u in items if isinstance(u, MessageCompleted)]
    assert completed == [response.messages[0], response.messages[2]]
    assert provider.requests[1].messages[-2:] == response.messages[:2]


async def test_nested_agent_items_carry_the_full_path() -> None:
    provider = ScriptedProvider([tool_calls(("add", {"a": 1, "b": 1})), text("2")])
    outer = Outer("outer", ReactAgent("calc", provider, "Add.", tools=[add]))
    items = await stream(outer, "1+1")
    assert items and {u.path for u in items} == {("outer", "calc")}


async def test_history_continues_through_the_default_session_and_reset_clears_it() -> None:
    provider = ScriptedProvider([text("first"), text("second"), text("fresh")])
    agent = ReactAgent("chat", provider, "Chat.")
    await agent.run("one").collect()
    await agent.run("two").collect()
    assert [m.text for m in provider.requests[1].messages] == ["Chat.", "one", "first", "two"]
    await agent.reset()
    await agent.run("three").collect()
    assert [m.text for m in provider.requests[2].messages] == ["Chat.", "three"]


async def test_explicit_sessions_do_not_see_each_other() -> None:
    provider = ScriptedProvider(lambda messages: text(f"echo {messages[-1].text}"))
    agent = ReactAgent("chat", provider, "Chat.")
    alice, bob = Session(), Session()
    await agent.run("alice-1", session=alice).collect()
    await agent.run("bob-1", session=bob).collect()
    await agent.run("alice-2", session=alice).collect()
    seen = [m.text for m in provider.requests[2].messages]
    assert seen == ["Chat.", "alice-1", "echo alice-1", "alice-2"]
    assert all("bob" not in t for t in seen)
    assert [m.text for m in provider.requests[1].messages] == ["Chat.", "bob-1"]


async def test_concurrent_runs_on_different_sessions_stay_apart() -> None:
    both_waiting = anyio.Event()
    arrived: list[str] = []

    @tool
    async def rendezvous(who: str) -> str:
        arrived.append(who)
        if len(arrived) == 2:
            both_waiting.set()
        await both_waiting.wait()
        return who

    def script(messages: list[ChatMessage]) -> Turn:
        user = next(m.text for m in messages if m.role == "user")
        if messages[-1].role == "tool":
            return text(f"done {user}")
        return tool_calls(("rendezvous", {"who": user}))

    agent = ReactAgent("worker", ScriptedProvider(script), "Work.", tools=[rendezvous])
    sessions = {"a": Session(), "b": Session()}
    results: dict[str, str] = {}

    async def one(name: str) -> None:
        results[name] = (await agent.run(name, session=sessions[name]).collect()).text

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "a")
            tg.start_soon(one, "b")
    assert results == {"a": "done a", "b": "done b"}
    for name, session in sessions.items():
        history = session.get("worker#history")
        texts = [m.text for m in history]
        assert texts[0] == name and f"done {name}" in texts
        assert ("b" if name == "a" else "a") not in texts


async def test_leaving_early_cancels_a_slow_tool_and_leaks_no_task() -> None:
    started = anyio.Event()
    cancelled = anyio.Event()

    @tool
    async def slow() -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    provider = ScriptedProvider([tool_calls(("slow", {}), text="Working on it")])
    agent = ReactAgent("worker", provider, "Work.", tools=[slow])
    before = task_count()
    with anyio.fail_after(5):
        async with agent.run("go") as updates:
            async for update in updates:
                if update.type == "text_delta":
                    break
            await started.wait()
    assert cancelled.is_set()
    await checkpoint()
    assert task_count() == before


async def test_leaving_early_cancels_a_slow_model_call() -> None:
    provider = ScriptedProvider(
        [tool_calls(("add", {"a": 1, "b": 1}), text="Adding"), text("late", delay=3600)]
    )
    agent = ReactAgent("slowpoke", provider, "Add.", tools=[add])
    before = task_count()
    with anyio.fail_after(5):
        async with agent.run("1+1") as updates:
            first = await updates.__anext__()
            assert first.type == "text_delta"
            async for update in updates:
                if update.type == "tool_called":
                    break
            await anyio.wait_all_tasks_blocked()
            assert provider.calls == 2
    await checkpoint()
    assert task_count() == before


async def test_leaving_early_abandons_a_blocked_sync_tool_promptly() -> None:
    release = threading.Event()
    entered = threading.Event()

    @tool
    def blocking() -> str:
        entered.set()
        release.wait(10)
        return "late"

    provider = ScriptedProvider([tool_calls(("blocking", {}))])
    agent = ReactAgent("worker", provider, "Work.", tools=[blocking])
    try:
        with anyio.fail_after(5):
            async with agent.run("go") as updates:
                async for update in updates:
                    if update.type == "tool_call_end":
                        break
                await anyio.to_thread.run_sync(entered.wait)
        # The block was left while the tool still blocked its thread.
        assert entered.is_set() and not release.is_set()
    finally:
        release.set()


async def test_failure_does_not_poison_the_agent() -> None:
    provider = ScriptedProvider(
        [tool_calls(("add", {"a": 1, "b": 1})), tool_calls(("add", {"a": 1, "b": 1})), text("ok")]
    )
    agent = ReactAgent("calc", provider, "Add.", tools=[add], max_rounds=1)
    with pytest.raises(MaxRoundsExceeded, match="1 model calls"):
        await agent.run("go").collect()
    assert (await agent.run("again", options=RunOptions(max_rounds=5)).collect()).text == "ok"


def test_plain_functions_are_wrapped_as_tools_and_names_must_be_unique() -> None:
    def double(x: int) -> int:
        """Double it."""
        return 2 * x

    agent = ReactAgent("calc", ScriptedProvider([]), "Add.", tools=[add, double])
    assert [t.name for t in agent.tools] == ["add", "double"]
    assert agent.max_rounds == 10 and agent.instructions == "Add." and agent.schema is None
    with pytest.raises(ValueError, match="two tools are named 'add'"):
        ReactAgent("calc", ScriptedProvider([]), "Add.", tools=[add, add])
    with pytest.raises(ValueError, match="max_rounds"):
        ReactAgent("calc", ScriptedProvider([]), "Add.", max_rounds=0)


async def test_tool_calls_in_history_reach_the_next_turn() -> None:
    provider = ScriptedProvider(
        [tool_calls(("add", {"a": 1, "b": 2}, "c1")), text("3"), text("yes")]
    )
    agent = ReactAgent("calc", provider, "Add.", tools=[add])
    await agent.run("1+2").collect()
    await agent.run("sure?").collect()
    later = provider.requests[2].messages
    assert later[2].contents[0] == ToolCallContent(
        call_id="c1", name="add", arguments='{"a": 1, "b": 2}'
    )
    assert later[3] == ChatMessage(
        role="tool", contents=[ToolResultContent(call_id="c1", result="3")], author="calc"
    )
