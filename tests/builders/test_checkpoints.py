"""Builder workflows checkpoint into SQLite and resume without re-running finished agents."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from raf import ConcurrentBuilder, FunctionAgent, SequentialBuilder, Session
from raf.messages import ChatMessage
from raf.stores import SqliteCheckpointStore

pytestmark = pytest.mark.anyio


async def test_a_nested_builder_workflow_resumes_from_a_middle_checkpoint(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()

    def agent(agent_id: str) -> FunctionAgent:
        def answer(messages: list[ChatMessage]) -> str:
            calls[agent_id] += 1
            return f"{agent_id}({len(messages)})"

        return FunctionAgent(agent_id, answer)

    def build() -> object:
        panel = ConcurrentBuilder(id="panel").add_agent(agent("x")).add_agent(agent("y")).build()
        return (
            SequentialBuilder(id="flow")
            .add_agent(agent("a"))
            .add_agent(panel.as_agent())
            .add_agent(agent("z"))
            .build()
        )

    path = tmp_path / "runs.sqlite"
    async with SqliteCheckpointStore(path) as store:
        first = await build().run("go", Session(id="s1", store=store))  # type: ignore[attr-defined]
        assert first.status == "completed"
        checkpoints = await store.list("s1")
        assert len(checkpoints) == 3  # one per superstep: a, panel, z
        full = [m.text for m in first.outputs[-1]]
        assert full == ["a(1)", "x(2)", "y(2)", "z(4)"]

    calls.clear()
    async with SqliteCheckpointStore(path) as reopened:
        resumed = await build().resume(checkpoints[0], reopened)  # type: ignore[attr-defined]
    assert resumed.status == "completed"
    assert [m.text for m in resumed.outputs[-1]] == full
    assert calls == Counter({"x": 1, "y": 1, "z": 1})  # `a` finished before the checkpoint
