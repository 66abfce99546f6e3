"""`raf run --trace` prints the span tree of the run after its answer."""

from __future__ import annotations

import json

from tests.cli.support import RafCommand


def test_trace_prints_the_span_tree_after_the_answer(raf: RafCommand) -> None:
    done = raf("run", "tests.cli.targets:tools_and_thoughts", "hi", "--trace")
    assert done.status == 0, done.err
    answer, tree = done.out.split("trace\n")
    assert answer.endswith("It said HELLO.\n")
    lines = tree.splitlines()
    assert lines[0].startswith("└── invoke_agent caller")
    assert [line.lstrip("│├└─ ").split("  ")[0] for line in lines[1:]] == [
        "chat scripted",
        "execute_tool shout",
        "chat scripted",
    ]
    assert "finish tool_calls" in lines[1] and "tokens 4 in, 5 out" in lines[1]


def test_with_json_the_tree_goes_to_stderr(raf: RafCommand) -> None:
    done = raf("run", "tests.cli.targets:pair", "hi", "--json", "--trace")
    assert done.status == 0, done.err
    for line in done.out.splitlines():
        json.loads(line)
    assert "invoke_agent pair" in done.err and "superstep pair" in done.err
