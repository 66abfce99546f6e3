from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from raf.builders import END, RoleEvent, RoleWorkflowBuilder
from raf.errors import WorkflowError
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore

from .roles_support import Draft, counting_binding, review_builder

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
CRASH = Path(__file__).with_name("roles_crash.py")


async def test_each_tick_takes_one_step_per_topic_until_the_moderator_ends() -> None:
    binding, adapter = counting_binding()
    log = MemoryCheckpointStore()
    runner = review_builder().build_tick_runner(binding, log)
    await runner.start("a", "Write about the sea.")
    await runner.start("b", "Write about the hills.")
    steps: list[list[tuple[str, str]]] = []
    for _ in range(5):
        steps.append([(e.key, e.role) for e in await runner.tick()])
    assert steps == [
        [("a", "writer"), ("b", "writer")],
        [("a", "reviewer"), ("b", "reviewer")],
        [("a", "writer"), ("b", "writer")],
        [("a", "reviewer"), ("b", "reviewer")],
        [],
    ]
    assert adapter.calls == {"write": 4, "review": 4}
    assert [e.kind for e in await log.events(key="a")][-1] == "review.reviewer"


async def test_a_tick_on_an_unchanged_log_does_nothing() -> None:
    decided: list[str] = []

    def moderator(chain: list[RoleEvent], topic_id: str) -> Any:
        decided.append(topic_id)
        return "writer" if len(chain) == 1 else END

    binding, adapter = counting_binding()
    log = MemoryCheckpointStore()
    builder = RoleWorkflowBuilder("w").add_role("writer", "write", Draft).with_moderator(moderator)
    runner = builder.build_tick_runner(binding, log)
    await runner.start("t", "go")
    assert [e.role for e in await runner.tick()] == ["writer"]
    assert await runner.tick() == []
    before = (len(decided), len(await log.events()), dict(adapter.calls))
    assert await runner.tick() == []
    assert await runner.tick() == []
    assert (len(decided), len(await log.events()), dict(adapter.calls)) == before
    await runner.start("u", "more")  # a new topic: only it is looked at
    assert [e.key for e in await runner.tick()] == ["u"]
    assert decided[before[0] :] == ["u"]
    assert decided.count("t") == 2


async def test_a_failing_moderator_in_a_tick_names_the_workflow() -> None:
    binding, _ = counting_binding()
    runner = (
        RoleWorkflowBuilder("w")
        .add_role("writer", "write", Draft)
        .with_moderator(lambda chain, topic: "nobody")
    ).build_tick_runner(binding, MemoryCheckpointStore())
    await runner.start("t", "go")
    with pytest.raises(WorkflowError, match="role workflow 'w': the moderator chose 'nobody'"):
        await runner.tick()


async def _tick_and_kill(path: Path, moment: str) -> None:
    """Run a tick in a child process and SIGKILL it at `moment` of its write."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = await anyio.open_process(
        [sys.executable, str(CRASH), str(path), moment], env=env, stderr=subprocess.STDOUT
    )
    async with process:
        assert process.stdout is not None
        with anyio.fail_after(60):
            seen = b""
            while b"READY" not in seen:
                chunk = await process.stdout.receive()
                seen += chunk
            process.send_signal(signal.SIGKILL)
            assert await process.wait() == -signal.SIGKILL


@pytest.mark.parametrize("moment", ["content-written", "event-written"])
async def test_a_tick_killed_mid_write_leaves_a_log_whose_next_tick_runs_each_step_once(
    tmp_path: Path, moment: str
) -> None:
    path = tmp_path / "log.db"
    binding, adapter = counting_binding()
    async with SqliteCheckpointStore(path) as store:
        await review_builder().build_tick_runner(binding, store).start("t", "Write.")
    await _tick_and_kill(path, moment)

    async with SqliteCheckpointStore(path) as store:
        kinds = [e.kind for e in await store.events(key="t")]
        written = moment == "event-written"
        assert kinds == ["review.__start__", "review.writer"][: 2 if written else 1]
        for event in await store.events():
            assert event.hash is not None
            await store.get(event.hash)  # every event's content is there
        runner = review_builder().build_tick_runner(binding, store)
        roles: list[str] = []
        for _ in range(5):
            roles += [e.role for e in await runner.tick()]
        chain = [e.kind.removeprefix("review.") for e in await store.events(key="t")]
    expected = ["writer", "reviewer", "writer", "reviewer"]
    assert chain == ["__start__", *expected]
    assert roles == (expected[1:] if written else expected)
    # The parent played each step that the killed child had not written, exactly once.
    assert adapter.calls == {"write": 1 if written else 2, "review": 2}
