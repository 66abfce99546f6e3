from __future__ import annotations

from rich.console import Console

from raf.cli.live_tree import LiveTree
from raf.updates import (
    ExecutorInvoked,
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
