from __future__ import annotations

from collections.abc import Sequence

from acp.schema import AgentMessageChunk, AgentPlanUpdate, ToolCallProgress, ToolCallStart

from raf.messages import ChatMessage
from raf.serve.acp.updates import TurnUpdates
from raf.updates import (
    ExecutorInvoked,
    ExecutorInvoking,
    MessageCompleted,
    TextDelta,
    ToolCallArgs,
    ToolCalled,
    ToolCallEnd,
    Usage,
)
from raf.updates import (
    ToolCallStart as RafToolCallStart,
)

WRITER = ("team", "writer")


def test_a_tool_call_goes_pending_in_progress_then_failed_with_its_error() -> None:
    turn = TurnUpdates()
    [start] = turn.map(RafToolCallStart(call_id="c1", name="search_files", path=WRITER))
    assert isinstance(start, ToolCallStart)
    assert (start.tool_call_id, start.title, start.kind, start.status) == (
        "team/writer:c1",
        "search_files (writer)",
        "search",
        "pending",
    )
    assert turn.map(ToolCallArgs(call_id="c1", delta='{"pattern": ', path=WRITER)) == []
    assert turn.map(ToolCallArgs(call_id="c1", delta='"x"}', path=WRITER)) == []
    [running] = turn.map(ToolCallEnd(call_id="c1", path=WRITER))
    assert isinstance(running, ToolCallProgress)
    assert (running.status, running.raw_input) == ("in_progress", {"pattern": "x"})
    [failed] = turn.map(
        ToolCalled(
            call_id="c1", name="search_files", result="bad regex", is_error=True, path=WRITER
        )
    )
    assert isinstance(failed, ToolCallProgress)
    assert (failed.status, failed.raw_output) == ("failed", "bad regex")
    assert failed.field_meta == {"raf": {"path": ["team", "writer"]}}


def test_arguments_that_are_not_json_stay_text_and_an_unannounced_result_starts_its_call() -> None:
    turn = TurnUpdates()
    turn.map(RafToolCallStart(call_id="c1", name="t", path=("a",)))
    turn.map(ToolCallArgs(call_id="c1", delta="{broken", path=("a",)))
    [running] = turn.map(ToolCallEnd(call_id="c1", path=("a",)))
    assert isinstance(running, ToolCallProgress) and running.raw_input == "{broken"
    start, done = turn.map(ToolCalled(call_id="c2", name="handoff", result="ok", path=("a",)))
    assert isinstance(start, ToolCallStart) and start.tool_call_id == "a:c2"
    assert isinstance(done, ToolCallProgress) and done.status == "completed"


def test_executors_are_plan_entries_and_a_waiting_one_is_pending() -> None:
    turn = TurnUpdates()
    turn.map(ExecutorInvoking(executor_id="draft", path=("team",)))
    turn.map(ExecutorInvoking(executor_id="check", path=("team", "review")))
    turn.map(ExecutorInvoked(executor_id="draft", path=("team",)))
    [plan] = turn.map(
        ExecutorInvoked(executor_id="check", status="waiting", path=("team", "review"))
    )
    assert isinstance(plan, AgentPlanUpdate)
    assert [(e.content, e.status) for e in plan.entries] == [
        ("draft", "completed"),
        ("review/check", "pending"),
    ]


def test_speakers_are_named_and_items_acp_has_no_place_for_are_dropped() -> None:
    turn = TurnUpdates()
    message = ChatMessage.assistant("Hello", author="writer")
    chunks = [
        *turn.map(TextDelta(text="Hel", path=WRITER)),
        *turn.map(TextDelta(text="lo", path=WRITER)),
        *turn.map(MessageCompleted(message=message, path=WRITER)),
        *turn.map(TextDelta(text="Ok", path=("team", "editor"))),
    ]
    texts = [c.content.text for c in chunks if isinstance(c, AgentMessageChunk)]
    assert "".join(texts) == "**writer**: Hello\n\n**editor**: Ok"
    assert turn.map(Usage(input_tokens=1, output_tokens=2, path=WRITER)) == []
    unsaid = turn.unsaid([message, ChatMessage.assistant("published", author="publish")])
    assert [c.content.text for c in unsaid] == ["\n\n**publish**: published"]


def _paragraphs(updates: Sequence[object]) -> list[str]:
    text = "".join(u.content.text for u in updates if isinstance(u, AgentMessageChunk))
    return text.split("\n\n")


def test_two_agents_streaming_at_once_say_one_paragraph_each() -> None:
    turn = TurnUpdates()
    a, b = ("team", "a"), ("team", "b")
    said: list[object] = []
    for n in range(3):  # their tokens interleave
        said += turn.map(TextDelta(text=f"a{n} ", path=a))
        said += turn.map(TextDelta(text=f"b{n} ", path=b))
    said += turn.map(MessageCompleted(message=ChatMessage.assistant("a0 a1 a2"), path=a))
    said += turn.map(TextDelta(text="b3", path=b))  # b streams on, now in the open
    said += turn.map(MessageCompleted(message=ChatMessage.assistant("b0 b1 b2 b3"), path=b))
    said += turn.rest()
    assert _paragraphs(said) == ["**a**: a0 a1 a2 ", "**b**: b0 b1 b2 b3"]


def test_text_held_when_the_turn_ends_is_said_then() -> None:
    turn = TurnUpdates()
    a, b = ("team", "a"), ("team", "b")
    said = [*turn.map(TextDelta(text="one", path=a)), *turn.map(TextDelta(text="two", path=b))]
    said += turn.rest()
    assert _paragraphs(said) == ["**a**: one", "**b**: two"]


def test_a_failed_or_cancelled_turn_closes_its_tool_calls_and_plan() -> None:
    turn = TurnUpdates()
    turn.map(ExecutorInvoking(executor_id="writer", path=("team",)))
    turn.map(RafToolCallStart(call_id="c1", name="lookup", path=WRITER))
    turn.map(RafToolCallStart(call_id="c2", name="lookup", path=WRITER))
    turn.map(ToolCalled(call_id="c2", name="lookup", result="ok", is_error=False, path=WRITER))
    closed = turn.closed()
    [call, plan] = closed
    assert isinstance(call, ToolCallProgress)
    assert (call.tool_call_id, call.status) == ("team/writer:c1", "failed")
    assert isinstance(plan, AgentPlanUpdate)
    assert [e.status for e in plan.entries] == ["completed"]
    assert turn.closed() == []
