from __future__ import annotations

from raf.engine import Workflow, WorkflowBuilder
from raf.function_agent import FunctionAgent
from tests.engine.support import Calls


def every_edge_kind() -> Workflow:
    calls = Calls()

    def is_long(message: str) -> bool:
        return len(message) > 10

    return (
        WorkflowBuilder("shapes")
        .add_fan_out(calls.forward("start"), [calls.forward("a"), calls.forward("b")])
        .add_fan_in(["a", "b"], calls.forward("join"))
        .add_edge("join", FunctionAgent("writer", lambda m: "w"), condition=is_long)
        .add_switch(
            "join", [(lambda m: m == "x", calls.output("x"))], default=calls.output("other")
        )
        .set_start("start")
        .build()
    )


def test_mermaid_shows_every_edge_kind() -> None:
    text = every_edge_kind().to_mermaid()
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    n0["start"]:::start' in lines
    assert '    n4["writer (agent)"]' in lines
    assert "    n0 -->|fan-out| n1" in lines
    assert "    n1 -->|fan-in| n3" in lines and "    n2 -->|fan-in| n3" in lines
    assert "    n3 -.->|is_long| n4" in lines
    assert "    n3 -.->|case 0: condition| n5" in lines
    assert "    n3 -.->|default| n6" in lines


def test_dot_shows_every_edge_kind() -> None:
    text = every_edge_kind().to_dot()
    assert text.startswith('digraph "shapes" {')
    assert '"start" [label="start (function)", peripheries=2];' in text
    assert '"writer" [label="writer (agent)"];' in text
    assert '"join" -> "writer" [label="is_long", style=dashed];' in text
    assert '"a" -> "join" [label="fan-in", arrowhead=invempty];' in text
    assert '"start" -> "a" [label="fan-out", arrowtail=dot, dir=both];' in text
    assert '"join" -> "other" [label="default", style=dashed];' in text
    assert text.rstrip().endswith("}")


def test_labels_are_escaped() -> None:
    calls = Calls()
    workflow = (
        WorkflowBuilder('say "hi"')
        .add_executor(calls.forward('quote"d'))
        .set_start('quote"d')
        .build()
    )
    assert '["quote#quot;d"]' in workflow.to_mermaid()
    assert 'digraph "say \\"hi\\"" {' in workflow.to_dot()
