"""Builder workflows checkpoint into SQLite, at every level, and resume without re-running
finished agents."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from raf import ConcurrentBuilder, FunctionAgent, SequentialBuilder, Session
from raf.engine import Workflow
from raf.messages import ChatMessage
from raf.stores import SqliteCheckpointStore

pytestmark = pytest.mark.anyio


def counted(calls: Counter[str], agent_id: str, failures: list[str] | None = None) -> FunctionAgent:
    """An agent answering `id(number of messages)`; it fails while `failures` holds one."""

    def answer(messages: list[ChatMessage]) -> str:
        calls[agent_id] += 1
        if failures:
            raise RuntimeError(failures.pop())
        return f"{agent_id}({len(messages)})"

    return FunctionAgent(agent_id, answer)


async def test_a_nested_builder_workflow_resumes_from_a_middle_checkpoint(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()

    def build() -> Workflow:
        panel = (
            ConcurrentBuilder(id="panel")
            .add_agent(counted(calls, "x"))
            .add_agent(counted(calls, "y"))
            .build()
        )
        return (
            SequentialBuilder(id="flow")
            .add_agent(counted(calls, "a"))
            .add_agent(panel.as_agent())
            .add_agent(counted(calls, "z"))
            .build()
        )

    path = tmp_path / "runs.sqlite"
    async with SqliteCheckpointStore(path) as store:
        first = await build().run("go", Session(id="s1", store=store))
        assert first.status == "completed"
        checkpoints = await store.list("s1")
        saved = [await store.load(c) for c in checkpoints]
        # After a; inside `panel` after its dispatch, its branches and its aggregation; after
        # panel; after z.
        assert [c.data["next"] for c in saved] == [1, 1, 1, 1, 2, 3]
        running = [sorted(k for k in c.data["session"] if k.endswith("#running")) for c in saved]
        assert running == [[], ["panel#running"], ["panel#running"], ["panel#running"], [], []]
        full = [m.text for m in first.outputs[-1]]
        assert full == ["a(1)", "x(2)", "y(2)", "z(4)"]

    calls.clear()
    async with SqliteCheckpointStore(path) as reopened:
        resumed = await build().resume(checkpoints[0], reopened)
        assert [m.text for m in resumed.outputs[-1]] == full
        assert calls == Counter({"x": 1, "y": 1, "z": 1})  # `a` finished before the checkpoint
        calls.clear()
        inside = await build().resume(checkpoints[2], reopened)  # the branches had answered
    assert [m.text for m in inside.outputs[-1]] == full
    assert calls == Counter({"z": 1})


async def test_a_failure_deep_inside_resumes_at_the_failed_agent(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    failures = ["r crashed"]

    def build() -> Workflow:
        steps = (
            SequentialBuilder(id="steps")
            .add_agent(counted(calls, "p"))
            .add_agent(counted(calls, "q"))
            .add_agent(counted(calls, "r", failures))
            .build()
        )
        return (
            SequentialBuilder(id="flow")
            .add_agent(counted(calls, "a"))
            .add_agent(steps.as_agent())
            .add_agent(counted(calls, "z"))
            .build()
        )

    path = tmp_path / "runs.sqlite"
    async with SqliteCheckpointStore(path) as store:
        failed = await build().run("go", Session(id="s", store=store))
    assert failed.status == "failed"
    assert calls == Counter({"a": 1, "p": 1, "q": 1, "r": 1})

    async with SqliteCheckpointStore(path) as reopened:
        done = await build().resume(await reopened.latest("s") or "", reopened)
    assert done.status == "completed"
    assert calls == Counter({"a": 1, "p": 1, "q": 1, "r": 2, "z": 1})
    assert [m.text for m in done.outputs[-1]] == ["a(1)", "p(2)", "q(3)", "r(4)", "z(5)"]
