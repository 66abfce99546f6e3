"""Frontend tools (AG-UI `tools`): offered to every ReAct agent of the tree, called as plain tool
calls the client runs, and answered by the client's tool message on the next run."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from raf import IAgent, ReactAgent, SequentialBuilder, WorkflowBuilder, tool
from raf.engine import FunctionExecutor, NodeContext
from raf.errors import ProviderError
from raf.messages import ChatMessage, ToolResultContent
from raf.serve import create_app
from raf.serve.threads import THREAD_KEY, Thread, Threads
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore
from raf.testing import ScriptedProvider, Turn, text, tool_calls
from tests.serve.events import check_order, text_of, types
from tests.serve.servers import node_summary, running
from tests.serve.test_app import client, run
from tests.serve.trees import run_input, user

SHOW_MAP = {
    "name": "show_map",
    "description": "Show a city on the user's map; answers what the user sees.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def _guide_turn(messages: list[ChatMessage]) -> Turn:
    """Calls show_map for the user's city, then says what the map tool answered."""
    last = messages[-1]
    if last.role == "tool":
        [result] = last.contents
        return text(f"On your map: {result.result}")  # pyright: ignore[reportAttributeAccessIssue]
    return tool_calls(("show_map", {"city": "Lisbon"}))


class Seen:
    """The conversations a scripted model was shown, one per call."""

    def __init__(self) -> None:
        self.calls: list[list[ChatMessage]] = []

    def guide(self, messages: list[ChatMessage]) -> Turn:
        self.calls.append(list(messages))
        return _guide_turn(messages)


def guide(seen: Seen) -> ReactAgent[None]:
    return ReactAgent("guide", ScriptedProvider(seen.guide), "Show the user the city.")


def tour(seen: Seen, failing: set[str] | None = None) -> IAgent:
    """tour (graph): plan (sequential: planner → guide [show_map, a frontend tool]) → wrap.

    `failing` names the parts that fail once after the call was answered: `"guide"` (its
    model), `"wrap"`."""
    fails = failing if failing is not None else set()
    planner = ReactAgent(
        "planner", ScriptedProvider(lambda m: text("Plan: Lisbon.")), "Plan the tour."
    )

    def guide_turn(messages: list[ChatMessage]) -> Turn:
        if messages[-1].role == "tool" and "guide" in fails:
            fails.discard("guide")
            raise ProviderError("the model is down", model="scripted")
        return seen.guide(messages)

    guide = ReactAgent("guide", ScriptedProvider(guide_turn), "Show the user the city.")
    plan = SequentialBuilder(id="plan").add_agent(planner).add_agent(guide).build()

    async def wrap(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        if "wrap" in fails:
            fails.discard("wrap")
            raise RuntimeError("wrap failed")
        await ctx.yield_output(
            ChatMessage.assistant(f"Tour done: {conversation[-1].text}", author="wrap")
        )

    return (
        WorkflowBuilder("tour")
        .add_edge(plan.as_agent(), FunctionExecutor("wrap", wrap))
        .set_start("plan")
        .build()
        .as_agent()
    )


def called(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The one tool call the run streamed: its start, with the arguments it streamed."""
    [start] = [e for e in events if e["type"] == "TOOL_CALL_START"]
    args = "".join(
        e["delta"]
        for e in events
        if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == start["toolCallId"]
    )
    return {**start, "args": json.loads(args)}


def answered(
    first: dict[str, Any], call: dict[str, Any], content: str
) -> tuple[dict[str, Any], ...]:
    """The messages a client sends after running the call: the conversation so far, the
    assistant message that made the call, and the tool's result."""
    assistant = {
        "id": call["parentMessageId"],
        "role": "assistant",
        "toolCalls": [
            {
                "id": call["toolCallId"],
                "type": "function",
                "function": {"name": call["toolCallName"], "arguments": json.dumps(call["args"])},
            }
        ],
    }
    result = {"id": "r1", "role": "tool", "toolCallId": call["toolCallId"], "content": content}
    return (first, assistant, result)


@asynccontextmanager
async def on_sqlite(
    agent: IAgent, tmp_path: Path
) -> AsyncIterator[tuple[httpx2.AsyncClient, SqliteCheckpointStore]]:
    """A client of the app serving `agent` with its threads in a SQLite file, and the store."""
    store = SqliteCheckpointStore(tmp_path / "threads.db")
    try:
        async with client(create_app(agent, store)) as http:
            yield http, store
    finally:
        await store.aclose()


pytestmark = pytest.mark.anyio


async def test_a_frontend_tool_call_ends_the_run_open_and_its_result_continues_it() -> None:
    seen = Seen()
    async with client(create_app(guide(seen), MemoryCheckpointStore())) as http:
        ask = user("u1", "Where is Lisbon?")
        first = await run(http, "guide", run_input("t", ask, tools=[SHOW_MAP]))
        call = called(first)
        body = run_input("t", *answered(ask, call, "Lisbon, by the river"), tools=[SHOW_MAP])
        second = await run(http, "guide", body)
    check_order(first)
    check_order(second)
    assert (call["toolCallName"], call["args"]) == ("show_map", {"city": "Lisbon"})
    assert "TOOL_CALL_END" in types(first) and "TOOL_CALL_RESULT" not in types(first)
    assert first[-1]["type"] == "RUN_FINISHED" and first[-1].get("outcome") is None
    assert text_of(second, "guide") == "On your map: Lisbon, by the river"
    assert second[-1]["type"] == "RUN_FINISHED" and second[-1].get("outcome") is None
    # The model saw a plain tool result of its own call, right after the call.
    last = seen.calls[-1]
    assert [m.role for m in last[-3:]] == ["user", "assistant", "tool"]
    [asked] = last[-2].tool_calls
    [result] = last[-1].contents
    assert result.call_id == asked.call_id  # pyright: ignore[reportAttributeAccessIssue]


async def test_the_model_is_offered_the_frontend_tools_besides_its_own() -> None:
    offered: list[list[str]] = []

    class Recording(ScriptedProvider):
        def stream(self, messages: Any, tools: Any = (), **kwargs: Any) -> Any:
            offered.append([t.name for t in tools])
            return super().stream(messages, tools=tools, **kwargs)

    @tool
    def weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: the city.
        """
        return "sunny"

    agent = ReactAgent("guide", Recording([text("Hello.")]), "Help.", tools=[weather])
    async with client(create_app(agent, MemoryCheckpointStore())) as http:
        events = await run(http, "guide", run_input("t", user("u1", "hi"), tools=[SHOW_MAP]))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert offered == [["weather", "show_map"]]


@pytest.mark.parametrize("offered_again", [[SHOW_MAP], []], ids=["tools again", "no tools"])
async def test_a_leaf_of_a_nested_workflow_calls_a_frontend_tool_and_the_turn_goes_on(
    tmp_path: Path, offered_again: list[dict[str, Any]]
) -> None:
    seen = Seen()
    async with on_sqlite(tour(seen), tmp_path) as (http, store):
        ask = user("u1", "A tour, please")
        first = await run(http, "tour", run_input("t", ask, tools=[SHOW_MAP]))
        call = called(first)
        asked = (await Threads(store).open("t")).asked
        body = run_input("t", *answered(ask, call, "a map of Lisbon"), tools=offered_again)
        second = await run(http, "tour", body)
    check_order(first)
    check_order(second)
    finished = first[-1]
    assert finished["type"] == "RUN_FINISHED" and finished.get("outcome") is None
    # The call belongs to the leaf's subagent; the thread knows the request by the call's id.
    subagents = {e["subagentRunId"]: e["name"] for e in first if e["type"] == "SUBAGENT_STARTED"}
    assert subagents[call["subagentRunId"]] == "tour/plan/guide"
    assert asked == {"tour/plan/guide/call_1": call["toolCallId"]}
    assert text_of(second, "guide") == "On your map: a map of Lisbon"
    outputs = [e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert outputs[-1] == "Tour done: On your map: a map of Lisbon"
    assert "Plan: Lisbon." not in outputs  # the planner, done before the call, did not run again


async def test_a_frontend_tool_named_like_an_agents_own_tool_fails_naming_both() -> None:
    @tool
    def show_map(city: str) -> str:
        """Show a city.

        Args:
            city: the city.
        """
        return city

    agent = ReactAgent("guide", ScriptedProvider([text("Hi.")]), "Help.", tools=[show_map])
    async with client(create_app(agent, MemoryCheckpointStore())) as http:
        events = await run(http, "guide", run_input("t", user("u1", "hi"), tools=[SHOW_MAP]))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    message = events[-1]["message"]
    assert "ReactAgent 'guide' has its own tool 'show_map'" in message
    assert "the run's client tools offer a tool 'show_map' too" in message
    assert events[-1]["metadata"]["path"] == ["guide"]


def test_the_official_client_runs_a_frontend_tool_and_the_agent_uses_its_result() -> None:
    with running(create_app(tour(Seen()), MemoryCheckpointStore())) as url:
        summary = node_summary("frontend_tools.mjs", f"{url}/agents/tour/run")
    assert summary["errors"] == [None, None]
    assert summary["state"] == {"units": "metric"}
    assert summary["called"] == [{"name": "show_map", "args": {"city": "Lisbon"}}]
    texts = [m.get("content") for m in summary["messages"] if m["role"] == "assistant"]
    assert "Tour done: On your map: the map shows Lisbon" in texts


async def test_a_round_with_two_frontend_calls_and_an_own_tool_waits_for_both_calls() -> None:
    @tool
    def weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: the city.
        """
        return f"sunny in {city}"

    shown: list[list[ChatMessage]] = []

    def turn(messages: list[ChatMessage]) -> Turn:
        shown.append(list(messages))
        if messages[-1].role == "tool":
            results = [c.result for m in messages if m.role == "tool" for c in m.contents]  # pyright: ignore[reportAttributeAccessIssue]
            return text(" | ".join(results))
        return tool_calls(
            ("show_map", {"city": "Lisbon"}, "map_1"),
            ("weather", {"city": "Lisbon"}, "weather_1"),
            ("show_map", {"city": "Porto"}, "map_2"),
        )

    agent = ReactAgent("guide", ScriptedProvider(turn), "Help.", tools=[weather])
    store = MemoryCheckpointStore()
    async with client(create_app(agent, store)) as http:
        ask = user("u1", "Lisbon and Porto?")
        first = await run(http, "guide", run_input("t", ask, tools=[SHOW_MAP]))
        starts = [e for e in first if e["type"] == "TOOL_CALL_START"]
        asked = (await Threads(store).open("t")).asked
        lisbon, porto = (e["toolCallId"] for e in starts if e["toolCallName"] == "show_map")
        results = [
            {"id": f"r{n}", "role": "tool", "toolCallId": wire, "content": f"map {n}"}
            for n, wire in ((2, porto), (1, lisbon))  # in any order
        ]
        second = await run(http, "guide", run_input("t", ask, *results, tools=[SHOW_MAP]))
    check_order(first)
    check_order(second)
    assert [e["toolCallId"] for e in first if e["type"] == "TOOL_CALL_RESULT"] == [
        next(e["toolCallId"] for e in starts if e["toolCallName"] == "weather")
    ]
    assert asked == {"guide/map_1": lisbon, "guide/map_2": porto}
    assert first[-1]["type"] == "RUN_FINISHED" and first[-1].get("outcome") is None
    assert text_of(second, "guide") == "sunny in Lisbon | map 1 | map 2"
    calls = [c.call_id for c in shown[-1][-4].tool_calls]
    answered_ids = [m.contents[0].call_id for m in shown[-1][-3:]]  # pyright: ignore[reportAttributeAccessIssue]
    assert calls == ["map_1", "weather_1", "map_2"]
    assert answered_ids == ["weather_1", "map_1", "map_2"]


def two_maps(shown: list[list[ChatMessage]]) -> ReactAgent[None]:
    """guide: shows Lisbon and Porto in one round, then says what both calls answered."""

    def turn(messages: list[ChatMessage]) -> Turn:
        shown.append(list(messages))
        if messages[-1].role == "tool":
            return text(" | ".join(m.contents[0].result for m in messages[-2:]))  # pyright: ignore[reportAttributeAccessIssue]
        return tool_calls(("show_map", {"city": "Lisbon"}), ("show_map", {"city": "Porto"}))

    return ReactAgent("guide", ScriptedProvider(turn), "Help.")


async def one_then_both(
    http: httpx2.AsyncClient, agent_id: str, store: Any
) -> tuple[list[dict[str, Any]], dict[str, str], list[dict[str, Any]], str]:
    """Runs asking for two maps, then answering the first call, then both: the partial run's
    events, the thread's open requests after it, the last run's events, the second call's id."""
    ask = user("u1", "Lisbon and Porto?")
    first = await run(http, agent_id, run_input("t", ask, tools=[SHOW_MAP]))
    lisbon, porto = (e["toolCallId"] for e in first if e["type"] == "TOOL_CALL_START")
    one = {"id": "r1", "role": "tool", "toolCallId": lisbon, "content": "map 1"}
    two = {"id": "r2", "role": "tool", "toolCallId": porto, "content": "map 2"}
    partial = await run(http, agent_id, run_input("t", ask, one, tools=[SHOW_MAP]))
    asked = (await Threads(store).open("t")).asked
    both = await run(http, agent_id, run_input("t", ask, one, two, tools=[SHOW_MAP]))
    return partial, asked, both, porto


async def test_answering_one_of_two_open_calls_fails_and_the_agent_still_waits_on_both() -> None:
    store = MemoryCheckpointStore()
    async with client(create_app(two_maps([]), store)) as http:
        partial, asked, both, porto = await one_then_both(http, "guide", store)
    assert types(partial) == ["RUN_STARTED", "RUN_ERROR"]
    # The error names the open call by the id the client knows it by, not raf's request id.
    assert partial[-1]["message"] == (
        f"agent 'guide' waits on the client tool calls [{porto!r}]: answer each with a "
        "tool message whose toolCallId is its id (at 'guide')"
    )
    assert len(asked) == 2  # both calls still open
    assert text_of(both, "guide") == "map 1 | map 2"


def _error_result(call: dict[str, Any], content: str, error: str) -> dict[str, Any]:
    return {
        "id": "r1",
        "role": "tool",
        "toolCallId": call["toolCallId"],
        "content": content,
        "error": error,
    }


@pytest.mark.parametrize("nested", [False, True], ids=["root", "nested"])
async def test_a_frontend_tool_result_with_an_error_reaches_the_model_as_an_error(
    nested: bool,
) -> None:
    seen = Seen()
    agent = tour(seen) if nested else guide(seen)
    async with client(create_app(agent, MemoryCheckpointStore())) as http:
        ask = user("u1", "Where is Lisbon?")
        first = await run(http, agent.id, run_input("t", ask, tools=[SHOW_MAP]))
        call = called(first)
        *before, _ = answered(ask, call, "")
        failed = _error_result(call, "", "the map is offline")
        second = await run(http, agent.id, run_input("t", *before, failed, tools=[SHOW_MAP]))
    check_order(second)
    assert second[-1]["type"] == "RUN_FINISHED"
    assert text_of(second, "guide") == "On your map: the map is offline"
    [result] = seen.calls[-1][-1].contents
    assert isinstance(result, ToolResultContent)
    assert (result.result, result.is_error) == ("the map is offline", True)


def conversation(thread: Thread) -> dict[str, Any]:
    """The thread's session state, but for what the AG-UI front keeps beside it."""
    return {k: v for k, v in thread.session.snapshot().items() if k != THREAD_KEY}


@pytest.mark.parametrize("failing", ["guide", "wrap"])
async def test_a_failed_turn_after_a_nested_call_was_answered_leaves_it_waiting(
    tmp_path: Path, failing: str
) -> None:
    seen = Seen()
    async with on_sqlite(tour(seen, {failing}), tmp_path) as (http, store):
        ask = user("u1", "A tour, please")
        first = await run(http, "tour", run_input("t", ask, tools=[SHOW_MAP]))
        call = called(first)
        before = await Threads(store).open("t")
        body = run_input("t", *answered(ask, call, "a map of Lisbon"), tools=[SHOW_MAP])
        failed = await run(http, "tour", body)
        after = await Threads(store).open("t")
        again = await run(http, "tour", body)
    assert failed[-1]["type"] == "RUN_ERROR"
    # The failed turn left the thread as it was: the guide still waits on the same call.
    assert after.asked == before.asked == {"tour/plan/guide/call_1": call["toolCallId"]}
    # (What the front keeps beside it counts the failed run too.)
    assert conversation(after) == conversation(before)
    assert again[-1]["type"] == "RUN_FINISHED"
    outputs = [e["delta"] for e in again if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert outputs[-1] == "Tour done: On your map: a map of Lisbon"
    # The guide's model asked once, then went on from the answer (again, when the turn
    # failed after it), never asking anew.
    went_on = ["tool", "tool"] if failing == "wrap" else ["tool"]
    assert [m[-1].role for m in seen.calls] == ["user", *went_on]


async def test_a_result_for_no_open_call_fails_naming_the_open_calls_by_the_clients_ids() -> None:
    async with client(create_app(tour(Seen()), MemoryCheckpointStore())) as http:
        ask = user("u1", "A tour, please")
        first = await run(http, "tour", run_input("t", ask, tools=[SHOW_MAP]))
        call = called(first)
        stray = {"id": "r1", "role": "tool", "toolCallId": "nope", "content": "a map"}
        refused = await run(http, "tour", run_input("t", ask, stray, tools=[SHOW_MAP]))
    assert types(refused) == ["RUN_STARTED", "RUN_ERROR"]
    message = refused[-1]["message"]
    assert f"the pending requests are [{call['toolCallId']!r}]" in message
    assert "tour/plan/guide/call_1" not in message


def trip(seen: Seen) -> IAgent:
    """trip (graph): plan (graph: split → [guide (show_map, a frontend tool), ask (an
    interrupt)] → merge) → done. Each of plan's two requests can be answered in its own turn."""

    async def split(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        await ctx.send(conversation)

    async def ask(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        day = await ctx.request_info({"question": "Which day?"})
        await ctx.send([ChatMessage.assistant(f"on {day}", author="ask")])

    async def merge(reports: list[list[ChatMessage]], ctx: NodeContext) -> None:
        said = " | ".join(r[-1].text for r in reports)
        await ctx.yield_output(ChatMessage.assistant(said, author="merge"))

    plan = (
        WorkflowBuilder("plan")
        .add_executor(FunctionExecutor("split", split))
        .add_fan_out("split", [guide(seen), FunctionExecutor("ask", ask)])
        .add_fan_in(["guide", "ask"], FunctionExecutor("merge", merge))
        .set_start("split")
        .build()
        .as_agent()
    )

    async def done(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant(f"Trip: {conversation[-1].text}"))

    return (
        WorkflowBuilder("trip")
        .add_edge(plan, FunctionExecutor("done", done))
        .set_start("plan")
        .build()
        .as_agent()
    )


async def test_an_error_answer_in_a_turn_that_still_waits_on_an_interrupt_stays_an_error(
    tmp_path: Path,
) -> None:
    seen = Seen()
    async with on_sqlite(trip(seen), tmp_path) as (http, _):
        ask = user("u1", "A trip, please")
        first = await run(http, "trip", run_input("t", ask, tools=[SHOW_MAP]))
        call = called(first)
        [interrupt] = first[-1]["outcome"]["interrupts"]
        *before, _ = answered(ask, call, "")
        failed = _error_result(call, "", "the map is offline")
        second = await run(http, "trip", run_input("t", *before, failed, tools=[SHOW_MAP]))
        day = {"interruptId": interrupt["id"], "status": "resolved", "payload": "Monday"}
        resumed = run_input("t", *before, failed, tools=[SHOW_MAP], resume=[day])
        third = await run(http, "trip", resumed)
    # The second run answers the call only: plan still waits on the day.
    assert second[-1]["type"] == "RUN_FINISHED"
    assert [i["id"] for i in second[-1]["outcome"]["interrupts"]] == [interrupt["id"]]
    assert [m[-1].role for m in seen.calls] == ["user", "tool"]  # the guide went on once
    outputs = [e["delta"] for e in third if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert outputs[-1] == "Trip: On your map: the map is offline | on Monday"
    [result] = seen.calls[-1][-1].contents
    assert isinstance(result, ToolResultContent)
    assert (result.result, result.is_error) == ("the map is offline", True)


async def test_a_nested_agent_answered_one_call_of_two_waits_on_the_other_keeping_the_first(
    tmp_path: Path,
) -> None:
    shown: list[list[ChatMessage]] = []
    agent = SequentialBuilder(id="team").add_agent(two_maps(shown)).build().as_agent()
    async with on_sqlite(agent, tmp_path) as (http, store):
        partial, asked, both, porto = await one_then_both(http, "team", store)
    assert partial[-1]["type"] == "RUN_FINISHED" and partial[-1].get("outcome") is None
    assert list(asked.values()) == [porto]  # the answered call is no longer open
    assert text_of(both, "guide") == "map 1 | map 2"
    assert len(shown) == 2  # the model asked, then went on once both were answered
