"""The streaming rows of the event mapping, through two workflow agents (DESIGN §6, §12.2).

A ReAct node reasons, calls a tool and answers inside workflow `inner`, itself a node of
workflow `outer`: its reasoning deltas and tool-call items must reach the top-level stream
of `outer`'s agent, in the order the node streamed them, with the full path.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from raf.agent import IAgent
from raf.engine import WorkflowBuilder
from raf.react import ReactAgent
from raf.testing import ScriptedProvider, text, tool_calls
from raf.tools import tool
from raf.updates import (
    AgentUpdate,
    ExecutorInvoked,
    ExecutorInvoking,
    ReasoningDelta,
    TextDelta,
    ToolCallArgs,
    ToolCalled,
    ToolCallEnd,
    ToolCallStart,
)

pytestmark = pytest.mark.anyio

MAPPED = (ReasoningDelta, ToolCallStart, ToolCallArgs, ToolCallEnd, ToolCalled, TextDelta)
"""The item types the rows under test cover (text deltas too, to pin the order around them)."""


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


def solver() -> ReactAgent:
    """A ReAct agent that reasons, calls `add` (arguments in several chunks), then answers."""
    call = tool_calls(("add", {"a": 2, "b": 3}, "c1"), chunk_size=6)
    script = [
        dataclasses.replace(call, reasoning="I need the add tool"),
        text("It is 5", reasoning="the tool said 5"),
    ]
    return ReactAgent("solver", ScriptedProvider(script), "Use the tools.", tools=[add])


def nested() -> IAgent:
    inner = WorkflowBuilder("inner").add_executor(solver()).set_start("solver").build()
    outer = WorkflowBuilder("outer").add_executor(inner.as_agent()).set_start("inner").build()
    return outer.as_agent()


async def stream(agent: IAgent) -> list[AgentUpdate]:
    async with agent.run("2 + 3?") as updates:
        return [update async for update in updates]


def without_path(update: AgentUpdate) -> dict[str, Any]:
    return update.model_dump(exclude={"path"})


async def test_reasoning_and_tool_call_items_reach_the_top_level_in_order_with_full_paths() -> None:
    alone = [u for u in await stream(solver()) if isinstance(u, MAPPED)]
    items = await stream(nested())
    mapped = [u for u in items if isinstance(u, MAPPED)]

    # Every item the node streamed, in its order, none dropped, none added.
    assert [without_path(u) for u in mapped] == [without_path(u) for u in alone]
    assert {u.path for u in alone} == {("solver",)}
    assert {u.path for u in mapped} == {("outer", "inner", "solver")}

    # The rows under test are really exercised, in the order a ReAct turn streams them.
    kinds = [type(u).__name__ for u in mapped]
    compact = [kind for i, kind in enumerate(kinds) if i == 0 or kinds[i - 1] != kind]
    assert compact == [
        "ReasoningDelta",
        "ToolCallStart",
        "ToolCallArgs",
        "ToolCallEnd",
        "ToolCalled",
        "ReasoningDelta",
        "TextDelta",
    ]
    assert kinds.count("ToolCallArgs") > 1
    first_call = kinds.index("ToolCallStart")
    thought = "".join(u.text for u in mapped[:first_call] if isinstance(u, ReasoningDelta))
    assert thought == "I need the add tool"
    start = next(u for u in mapped if isinstance(u, ToolCallStart))
    assert (start.call_id, start.name) == ("c1", "add")
    arguments = "".join(u.delta for u in mapped if isinstance(u, ToolCallArgs))
    assert arguments == '{"a": 2, "b": 3}'
    assert {u.call_id for u in mapped if isinstance(u, ToolCallArgs | ToolCallEnd)} == {"c1"}
    called = next(u for u in mapped if isinstance(u, ToolCalled))
    assert (called.call_id, called.name, called.result, called.is_error) == (
        "c1",
        "add",
        "5",
        False,
    )

    # They stream while the nodes run: inside both workflows' executor lifecycles.
    lifecycle = [
        (type(u).__name__, u.path, u.executor_id)
        for u in items
        if isinstance(u, ExecutorInvoking | ExecutorInvoked)
    ]
    assert lifecycle == [
        ("ExecutorInvoking", ("outer",), "inner"),
        ("ExecutorInvoking", ("outer", "inner"), "solver"),
        ("ExecutorInvoked", ("outer", "inner"), "solver"),
        ("ExecutorInvoked", ("outer",), "inner"),
    ]
    opened = max(
        i for i, u in enumerate(items) if isinstance(u, ExecutorInvoking) and u.path[-1] == "inner"
    )
    closed = min(i for i, u in enumerate(items) if isinstance(u, ExecutorInvoked))
    assert all(opened < i < closed for i, u in enumerate(items) if isinstance(u, MAPPED))
