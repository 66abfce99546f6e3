"""`AguiMapper`: raf stream items to AG-UI events, in an order AG-UI clients accept."""

from __future__ import annotations

from typing import Any

from hypothesis import given

from raf import FunctionAgent, SequentialBuilder
from raf.errors import MaxRoundsExceeded, WorkflowError
from raf.messages import ChatMessage
from raf.serve.agui.mapper import USAGE_EVENT, AguiMapper
from raf.updates import (
    AgentResponse,
    AgentUpdate,
    ExecutorInvoked,
    ExecutorInvoking,
    RequestInfoUpdate,
    TextDelta,
    Usage,
)
from tests.serve.events import check_order
from tests.strategies import agent_streams


def team() -> Any:
    return (
        SequentialBuilder(id="team")
        .add_agent(FunctionAgent("a", lambda m: "x", description="First."))
        .add_agent(FunctionAgent("b", lambda m: "y"))
        .build()
        .as_agent()
    )


def wire(
    updates: list[AgentUpdate], response: AgentResponse | None = None, *, agent: Any = None
) -> list[dict[str, Any]]:
    mapper = AguiMapper(agent or FunctionAgent("root", lambda m: ""), thread_id="t", run_id="r")
    events = mapper.started()
    for update in updates:
        events += mapper.map(update)
    events += mapper.finished(response or AgentResponse())
    return [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in events]


@given(agent_streams())
def test_any_interleaving_of_nested_agents_maps_to_a_valid_order(
    updates: list[AgentUpdate],
) -> None:
    events = wire(updates)
    check_order(events)
    names = {e["subagentRunId"]: e["name"] for e in events if e["type"] == "SUBAGENT_STARTED"}
    owners = {
        e["messageId"]: names.get(e.get("subagentRunId"), "root")
        for e in events
        if e["type"] == "TEXT_MESSAGE_START"
    }
    streamed: dict[str, str] = {}
    for e in events:
        if e["type"] == "TEXT_MESSAGE_CONTENT":
            owner = owners[e["messageId"]]
            streamed[owner] = streamed.get(owner, "") + e["delta"]
    expected: dict[str, str] = {}
    for u in updates:
        if isinstance(u, TextDelta):
            expected["/".join(u.path)] = expected.get("/".join(u.path), "") + u.text
    assert streamed == expected
    called = sum(1 for u in updates if u.type == "tool_called")
    assert sum(1 for e in events if e["type"] == "TOOL_CALL_RESULT") == called


def test_a_node_is_a_step_and_an_agent_node_a_subagent_with_its_path() -> None:
    updates: list[AgentUpdate] = [
        ExecutorInvoking(executor_id="a", path=("team",)),
        TextDelta(text="x", path=("team", "a")),
        ExecutorInvoked(executor_id="a", path=("team",)),
        ExecutorInvoking(executor_id="a", path=("team",)),  # a node runs again: a new invocation
        ExecutorInvoked(executor_id="a", path=("team",)),
    ]
    events = wire(updates, agent=team())
    check_order(events)
    started = [e for e in events if e["type"] == "SUBAGENT_STARTED"]
    assert [e["name"] for e in started] == ["team/a", "team/a"]
    assert started[0]["subagentRunId"] != started[1]["subagentRunId"]
    assert started[0]["description"] == "First."
    assert started[0]["metadata"] == {"path": ["team", "a"], "kind": "function"}
    assert [e["type"] for e in events[1:4]] == [
        "STEP_STARTED",
        "SUBAGENT_STARTED",
        "TEXT_MESSAGE_START",
    ]


def test_a_waiting_step_suspends_its_subagent_and_the_run_ends_with_interrupts() -> None:
    ask = RequestInfoUpdate(
        request_id="team/a/q@0#0", payload={"question": "ok?"}, path=("team", "a")
    )
    updates: list[AgentUpdate] = [
        ExecutorInvoking(executor_id="a", path=("team",)),
        ask,
        ExecutorInvoked(executor_id="a", path=("team",), status="waiting"),
    ]
    response = AgentResponse(status="waiting", pending=[ask], usage=Usage(input_tokens=2))
    events = wire(updates, response, agent=team())
    check_order(events)
    finished = next(e for e in events if e["type"] == "SUBAGENT_FINISHED")
    assert finished["outcome"] == {"type": "suspended", "interruptIds": ["team/a/q@0#0"]}
    [interrupt] = events[-1]["outcome"]["interrupts"]
    assert interrupt["message"] == "ok?"
    assert interrupt["subagentRunId"] == finished["subagentRunId"]
    assert interrupt["metadata"] == {"path": ["team", "a"], "payload": {"question": "ok?"}}


def test_outputs_no_agent_streamed_are_sent_as_messages_of_the_root() -> None:
    response = AgentResponse(messages=[ChatMessage.assistant("Published.", author="publish")])
    events = wire([], response)
    start = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
    assert start["name"] == "publish"
    assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["Published."]


def test_usage_streams_as_a_custom_event_and_sums_on_run_finished() -> None:
    events = wire(
        [
            Usage(input_tokens=3, output_tokens=4, path=("root",)),
            Usage(input_tokens=1, output_tokens=1, path=("root",)),
        ]
    )
    custom = [e for e in events if e["type"] == "CUSTOM"]
    assert [c["name"] for c in custom] == [USAGE_EVENT, USAGE_EVENT]
    assert custom[0]["value"] == {"path": ["root"], "input_tokens": 3, "output_tokens": 4}
    assert events[-1]["usage"] == [{"inputTokens": 4, "outputTokens": 5, "totalTokens": 9}]


def test_a_failure_errors_the_open_subagents_on_its_path() -> None:
    mapper = AguiMapper(team(), thread_id="t", run_id="r")
    mapper.started()
    mapper.map(ExecutorInvoking(executor_id="a", path=("team",)))
    failure = WorkflowError("a", RuntimeError("down"), path=("team",))
    events = [
        e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in mapper.failed(failure)
    ]
    assert [e["type"] for e in events] == ["SUBAGENT_ERROR", "STEP_FINISHED", "RUN_ERROR"]
    assert events[1]["stepName"] == "a"
    assert events[-1]["metadata"] == {"path": ["team", "a"]}
    assert events[-1]["code"] == "WorkflowError"


@given(agent_streams())
def test_a_failure_at_any_point_finishes_every_step_message_and_call(
    updates: list[AgentUpdate],
) -> None:
    mapper = AguiMapper(FunctionAgent("root", lambda m: ""), thread_id="t", run_id="r")
    events = mapper.started()
    for update in updates[: len(updates) // 2]:  # the run fails half-way
        events += mapper.map(update)
    events += mapper.failed(RuntimeError("down"))
    wire = [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in events]
    check_order(wire)
    kinds = [e["type"] for e in wire]
    assert kinds.count("STEP_STARTED") == kinds.count("STEP_FINISHED")
    for bracket in ("TEXT_MESSAGE", "TOOL_CALL", "REASONING_MESSAGE"):
        assert kinds.count(f"{bracket}_START") == kinds.count(f"{bracket}_END")


def test_an_agent_error_names_its_path_from_the_root() -> None:
    mapper = AguiMapper(team(), thread_id="t", run_id="r")
    error = mapper.failed(MaxRoundsExceeded("no answer", path=("team", "b")))[-1]
    assert error.model_dump(by_alias=True)["metadata"] == {"path": ["team", "b"]}
