from __future__ import annotations

from rich.console import Console

from raf.cli.live_tree import LiveTree
from raf.messages import ChatMessage
from raf.updates import (
    ExecutorInvoked,
    ExecutorInvoking,
    MessageCompleted,
    ReasoningDelta,
    RequestInfoUpdate,
    TextDelta,
    ToolCalled,
    ToolCallStart,
    Usage,
)


def render(view: LiveTree) -> str:
    console = Console(width=100, record=True, color_system=None)
    console.print(view.render())
    return console.export_text()


def test_tree_shows_text_tools_and_tokens_by_path() -> None:
    view = LiveTree("team")
    view.apply(TextDelta(text="Hel", path=("team", "writer")))
    view.apply(TextDelta(text="lo", path=("team", "writer")))
    view.apply(ToolCallStart(call_id="c1", name="search", path=("team", "seq", "finder")))
    view.apply(
        ToolCalled(call_id="c1", name="search", result="3 hits", path=("team", "seq", "finder"))
    )
    view.apply(Usage(input_tokens=5, output_tokens=7, path=("team", "writer")))
    view.apply(ExecutorInvoked(executor_id="writer", path=("team",)))
    view.apply(RequestInfoUpdate(request_id="r1", payload="ok?", path=("team",)))
    assert view.text_of(("team", "writer")) == "Hello"
    out = render(view)
    assert "writer  12 tokens" in out
    assert "search ✓ 3 hits" in out
    assert out.index("seq") < out.index("finder")
    assert "waiting for: r1: 'ok?'" in out


def test_reasoning_is_drawn_where_it_happened_between_tool_calls_and_text() -> None:
    view = LiveTree("solo")
    leaf = ("solo", "planner")
    view.apply(ReasoningDelta(text="first I ", path=leaf))
    view.apply(ReasoningDelta(text="look it up", path=leaf))
    view.apply(ToolCallStart(call_id="c1", name="search", path=leaf))
    view.apply(ToolCalled(call_id="c1", name="search", result="no", is_error=True, path=leaf))
    view.apply(ReasoningDelta(text="then I answer", path=leaf))
    view.apply(TextDelta(text="Done.", path=leaf))
    lines = [line.strip("│├└─ ") for line in render(view).splitlines()]
    assert lines[:6] == [
        "solo",
        "planner",
        "… first I look it up",
        "⚙ search ✗ no",
        "… then I answer",
        "Done.",
    ]
    assert lines[6] == "… reasoning   ⚙ tool ◌ running ✓ done   ✗ failed"


def test_a_group_chats_rounds_are_kept_apart_and_labelled() -> None:
    view = LiveTree("room")
    for speaker, said in [("writer", "draft 1"), ("critic", "more"), ("writer", "draft 2")]:
        view.apply(ExecutorInvoking(executor_id="selector", path=("room",)))
        view.apply(ExecutorInvoking(executor_id=speaker, path=("room",)))
        view.apply(TextDelta(text=said, path=("room", speaker)))
        view.apply(MessageCompleted(message=ChatMessage.assistant(said), path=("room", speaker)))
        view.apply(ExecutorInvoked(executor_id=speaker, path=("room",)))
    out = render(view)
    assert [line.strip("│├└─ ") for line in out.splitlines()] == [
        "room",
        "writer · round 1",
        "draft 1",
        "critic · round 2",
        "more",
        "writer · round 3",
        "draft 2",
        "round N: the Nth turn",
    ]
    assert view.text_of(("room", "writer")) == "draft 2"


def test_a_workflow_run_once_has_no_rounds_and_no_legend_without_markers() -> None:
    view = LiveTree("team")
    for member in ("a", "b"):
        view.apply(ExecutorInvoking(executor_id=member, path=("team",)))
        view.apply(TextDelta(text=f"from {member}", path=("team", member)))
    out = render(view)
    assert "round" not in out and "…" not in out
    assert out.splitlines()[-1].strip("│├└─ ") == "from b"
