from __future__ import annotations

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
    chunks = [
        *turn.map(TextDelta(text="Hel", path=WRITER)),
        *turn.map(TextDelta(text="lo", path=WRITER)),
        *turn.map(TextDelta(text="Ok", path=("team", "editor"))),
    ]
    texts = [c.content.text for c in chunks if isinstance(c, AgentMessageChunk)]
    assert "".join(texts) == "**writer**: Hello\n\n**editor**: Ok"
    assert turn.map(Usage(input_tokens=1, output_tokens=2, path=WRITER)) == []
    message = ChatMessage.assistant("Hello", author="writer")
    assert turn.map(MessageCompleted(message=message, path=WRITER)) == []
    unsaid = turn.unsaid([message, ChatMessage.assistant("published", author="publish")])
    assert [c.content.text for c in unsaid] == ["\n\n**publish**: published"]
