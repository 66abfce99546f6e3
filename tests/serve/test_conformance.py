"""AG-UI conformance, judged by the official `@ag-ui/client` 1.x in Node.

Its `HttpAgent` verifies every event it reads (order, open and closed messages, tool calls,
steps, subagents, interrupts) and rejects the run on the first malformed one. The script runs
the nested newsroom workflow (tools, reasoning, subagents, a waiting request), answers the
request with a resume entry, and runs a second question on the same thread.
"""

from __future__ import annotations

from raf.serve import create_app
from raf.stores import MemoryCheckpointStore
from tests.serve.servers import node_summary, running
from tests.serve.test_run_edges import two_questions
from tests.serve.trees import failing_team, newsroom


def test_the_official_client_accepts_a_nested_run_with_a_waiting_request() -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore(), token="tok")) as url:
        summary = node_summary("conformance.mjs", f"{url}/agents/newsroom/run", "tok")
    first, second, third = ([e["type"] for e in run] for run in summary["runs"])
    for kinds in (first, second, third):
        assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    for needed in ("SUBAGENT_STARTED", "TOOL_CALL_RESULT", "REASONING_MESSAGE_CONTENT"):
        assert needed in first
    assert [i["id"] for i in summary["interrupts"]] == ["newsroom/review@1#0~1"]
    assert "SUBAGENT_STARTED" not in second  # answering does not redo the draft
    texts = [m.get("content") for m in summary["messages"] if m["role"] == "assistant"]
    assert "Published: A short piece on the library. [approved]" in texts
    questions = [m["content"] for m in summary["messages"] if m["role"] == "user"]
    assert questions == ["the city library", "the harbour"]
    tools = [m for m in summary["messages"] if m["role"] == "tool"]
    assert [t["content"] for t in tools] == [
        "the city library: founded 1911, 3 branches",
        "the harbour: founded 1911, 3 branches",
    ]


def test_the_official_client_accepts_the_edges_of_a_run() -> None:
    app = create_app([two_questions(), failing_team()], MemoryCheckpointStore())
    with running(app) as url:
        summary = node_summary("edges.mjs", url)
    runs = summary["runs"]
    for name, run in runs.items():
        kinds = [e["type"] for e in run["events"]]
        assert kinds[0] == "RUN_STARTED", name
    left, right = summary["interrupts"]
    assert left != right and left.endswith("~1")
    # A resume naming a request that is not open: RUN_ERROR, and the questions stay open;
    # answering both then sends each answer once.
    assert runs["stray"]["events"][-1]["type"] == "RUN_ERROR"
    assert runs["stray"]["events"][-1]["message"].startswith("no open request 'x'")
    assert summary["stillOpen"] == [left, right]
    said = [
        m["content"] for m in summary["messages"] if m["role"] == "assistant" and m.get("content")
    ]
    assert said.count("left got: blue") == 1 and said.count("right got: red") == 1
    # A failing run: every step it started is finished before RUN_ERROR.
    failed = [e["type"] for e in runs["failed"]["events"]]
    assert failed[-1] == "RUN_ERROR"
    assert failed.count("STEP_STARTED") == failed.count("STEP_FINISHED") == 2
