from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raf.adapters import AdapterBinding, ThreadContext
from raf.builders import END, RoleEvent, RoleWorkflowBuilder, TickRunner
from raf.errors import CheckpointError, RoleStepFailed, WorkflowError
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore, StoredEvent, new_id
from tests.forkserver import kill, script

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


async def test_a_failing_moderator_in_a_tick_is_a_failure_of_its_topic_naming_the_workflow() -> (
    None
):
    binding, _ = counting_binding()
    runner = (
        RoleWorkflowBuilder("w")
        .add_role("writer", "write", Draft)
        .with_moderator(lambda chain, topic: "nobody")
    ).build_tick_runner(binding, MemoryCheckpointStore())
    await runner.start("t", "go")
    assert await runner.tick() == []
    failure = runner.failures["t"]
    assert isinstance(failure, RoleStepFailed)
    assert (failure.topic_id, failure.role, failure.attempts) == ("t", "__moderator__", 1)
    assert isinstance(failure.__cause__, WorkflowError)
    assert "role workflow 'w': the moderator chose 'nobody'" in str(failure)


class _Flaky:
    """An adapter whose writer fails on topic `bad` (always, or its first `failures` calls)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: dict[str, int] = {}

    def __call__(self, prompt: str, schema: type[Any], /) -> Any:
        async def role(thread: ThreadContext) -> Any:
            topic = thread.thread_id
            self.calls[topic] = self.calls.get(topic, 0) + 1
            if topic == "bad" and self.calls[topic] <= self.failures:
                raise RuntimeError("the model endpoint is down")
            return Draft(text=f"{topic} {len(thread.steps)}")

        return role


def _writer_runner(adapter: Any, log: Any, steps: int = 2, **options: Any) -> TickRunner:
    def moderator(chain: list[RoleEvent], topic_id: str) -> Any:
        return "writer" if len(chain) <= steps else END

    builder = RoleWorkflowBuilder("w").add_role("writer", "write", Draft).with_moderator(moderator)
    return builder.build_tick_runner(AdapterBinding(adapter), log, **options)


async def test_one_failing_topic_stops_no_other_and_is_retried_up_to_its_limit() -> None:
    adapter = _Flaky(failures=100)
    log = MemoryCheckpointStore()
    runner = _writer_runner(adapter, log, max_attempts=3)
    for topic in ("a", "bad", "c", "d"):
        await runner.start(topic, "go")
    first = await runner.tick()
    assert [e.key for e in first] == ["a", "c", "d"]  # 3 of 3 healthy steps written
    failure = runner.failures["bad"]
    assert (failure.role, failure.attempts, failure.final) == ("writer", 1, False)
    assert "topic 'bad'" in str(failure) and "RuntimeError" in str(failure)
    assert isinstance(failure.__cause__, RuntimeError)
    second = await runner.tick()
    assert [e.key for e in second] == ["a", "c", "d"]
    assert runner.failures["bad"].attempts == 2
    assert await runner.tick() == []  # the others are done; bad fails its third attempt
    assert (runner.failures["bad"].attempts, runner.failures["bad"].final) == (3, True)
    assert await runner.tick() == []
    assert adapter.calls["bad"] == 3  # the stated limit: not tried a fourth time
    assert [e.kind for e in await log.events(key="bad")] == ["w.__start__"]


async def test_a_topic_that_recovers_goes_on_and_leaves_the_failures() -> None:
    adapter = _Flaky(failures=1)
    runner = _writer_runner(adapter, MemoryCheckpointStore())
    await runner.start("bad", "go")
    assert await runner.tick() == []
    assert [e.key for e in await runner.tick()] == ["bad"]
    assert "bad" not in runner.failures


async def test_max_steps_bounds_the_tick_runner() -> None:
    def moderator(chain: list[RoleEvent], topic_id: str) -> Any:
        return "writer"  # never ends

    binding, adapter = counting_binding()
    builder = RoleWorkflowBuilder("w").add_role("writer", "write", Draft).with_moderator(moderator)
    runner = builder.with_max_steps(3).build_tick_runner(binding, MemoryCheckpointStore())
    await runner.start("t", "go")
    written = 0
    for _ in range(20):
        written += len(await runner.tick())
    assert written == 3
    assert adapter.calls == {"write": 3}
    failure = runner.failures["t"]
    assert failure.final and "took 3 steps on topic 't'" in str(failure)


async def test_an_idle_tick_reads_only_what_changed() -> None:
    class Counted(MemoryCheckpointStore):
        reads = 0

        async def events(self, key: str | None = None) -> list[Any]:
            self.reads += 1
            return await super().events(key)

    log = Counted()
    binding, _ = counting_binding()
    runner = review_builder().build_tick_runner(binding, log)
    for number in range(5):
        await runner.start(f"t{number}", "go")
    while await runner.tick():
        pass
    log.reads = 0
    for _ in range(3):
        assert await runner.tick() == []
    assert log.reads == 0
    await runner.start("new", "go")
    assert [e.key for e in await runner.tick()] == ["new"]
    assert log.reads <= 3  # the new topic alone: read, then read again under its lock


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("meta", "{not json"),
        ("meta", "[1]"),
        ("occurred_at", "not a time"),
        ("hash", "0" * 64),  # the __start__ content is missing
    ],
)
async def test_a_damaged_row_fails_its_topic_only_naming_the_event(
    tmp_path: Path, column: str, value: str
) -> None:
    path = tmp_path / "log.db"
    binding, _ = counting_binding()
    async with SqliteCheckpointStore(path) as store:
        runner = review_builder().build_tick_runner(binding, store)
        opened = {topic: await runner.start(topic, "go") for topic in ("a", "bad", "c")}
    with sqlite3.connect(path) as connection:
        connection.execute(
            f"UPDATE events SET {column} = ? WHERE id = ?", (value, opened["bad"].id)
        )
    async with SqliteCheckpointStore(path) as store:
        runner = review_builder().build_tick_runner(binding, store)
        with anyio.fail_after(10):
            assert [e.key for e in await runner.tick()] == ["a", "c"]
            assert [e.key for e in await runner.tick()] == ["a", "c"]
        failure = runner.failures["bad"]
        assert failure.role == "__log__"
        assert isinstance(failure.__cause__, CheckpointError)
        assert failure.__cause__.event_id == opened["bad"].id
        assert opened["bad"].id in str(failure)


async def test_an_invalid_start_content_is_a_checkpoint_error_naming_the_event() -> None:
    log = MemoryCheckpointStore()
    binding, _ = counting_binding()
    runner = review_builder().build_tick_runner(binding, log)
    digest = await log.put(b'{"not": "messages"}')
    opening = StoredEvent(
        id=new_id(), occurred_at=datetime.now(UTC), kind="review.__start__", key="t", hash=digest
    )
    await log.append(opening)
    assert await runner.tick() == []
    cause = runner.failures["t"].__cause__
    assert isinstance(cause, CheckpointError) and cause.event_id == opening.id
    assert "is not the input messages" in str(cause)


async def _tick_and_kill(server: str, path: Path, moment: str) -> None:
    """Run a tick in a child process forked from `server` and SIGKILL it at `moment` of its
    write (the requester ends once the child is gone)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = await anyio.open_process(
        [*script(server, CRASH), str(path), moment], env=env, stderr=subprocess.STDOUT
    )
    async with process:
        assert process.stdout is not None
        with anyio.fail_after(60):
            seen = b""
            while b"READY" not in seen:
                chunk = await process.stdout.receive()
                seen += chunk
            kill(process)
            assert await process.wait() == -signal.SIGKILL


@pytest.mark.parametrize("moment", ["content-written", "event-written"])
async def test_a_tick_killed_mid_write_leaves_a_log_whose_next_tick_runs_each_step_once(
    forkserver: str, tmp_path: Path, moment: str
) -> None:
    path = tmp_path / "log.db"
    binding, adapter = counting_binding()
    async with SqliteCheckpointStore(path) as store:
        await review_builder().build_tick_runner(binding, store).start("t", "Write.")
    await _tick_and_kill(forkserver, path, moment)

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


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=6))
def test_failing_topics_never_hold_back_the_healthy_ones(failures: list[int]) -> None:
    """Topic i fails its first failures[i] plays: a topic that fails fewer times than the
    limit finishes, one that fails more stops at the limit, and nothing is played twice."""

    class Scripted:
        def __init__(self) -> None:
            self.plays: list[tuple[str, int]] = []

        def __call__(self, prompt: str, schema: type[Any], /) -> Any:
            async def role(thread: ThreadContext) -> Any:
                topic = thread.thread_id
                self.plays.append((topic, thread.depth))
                if sum(1 for t, _ in self.plays if t == topic) <= failures[int(topic)]:
                    raise RuntimeError(f"flaky {topic}")
                return Draft(text=topic)

            return role

    async def main() -> None:
        adapter = Scripted()
        log = MemoryCheckpointStore()
        runner = _writer_runner(adapter, log, steps=2, max_attempts=3)
        for topic in range(len(failures)):
            await runner.start(str(topic), "go")
        for _ in range(12):
            await runner.tick()
        for topic, failed in enumerate(failures):
            steps = [e for e in await log.events(key=str(topic)) if e.kind == "w.writer"]
            if failed < 3:
                assert len(steps) == 2 and str(topic) not in runner.failures
            else:
                assert steps == [] and runner.failures[str(topic)].final
                assert runner.failures[str(topic)].attempts == 3

    anyio.run(main)


async def test_a_cancelled_tick_loses_none_of_the_changes_it_read() -> None:
    started = anyio.Event()
    calls: list[str] = []

    def adapter(prompt: str, schema: type[Any], /) -> Any:
        async def role(thread: ThreadContext) -> Any:
            calls.append(thread.thread_id)
            if len(calls) == 1:
                started.set()
                await anyio.sleep_forever()  # the first play hangs until the tick is cancelled
            return Draft(text="done")

        return role

    log = MemoryCheckpointStore()
    runner = _writer_runner(adapter, log, steps=1)
    await runner.start("t", "go")
    async with anyio.create_task_group() as group:
        group.start_soon(runner.tick)
        await started.wait()
        group.cancel_scope.cancel()
    assert [e.key for e in await runner.tick()] == ["t"]
    assert calls == ["t", "t"]
