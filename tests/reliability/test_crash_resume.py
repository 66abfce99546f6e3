"""A nested workflow killed with SIGKILL at chosen points resumes in a new process, losing
nothing and re-running only what had not been checkpointed.

The run lives in `crash_workflow.py`, in a child process that announces each point (`AT
point`) and blocks there, so the kill lands exactly at it: inside a superstep (a model call
of a nested agent), during a checkpoint write (before it commits), while a tool runs, and
while waiting on a human. Every model and tool call appends a line to a log file once it has
done its work, which counts side effects across both processes. A tool call that ended before
the kill is not made again: the re-run superstep takes its recorded result. The children are
forked from a server that made their imports already (`tests.forkserver`).
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.forkserver import command, kill
from tests.reliability.processes import read_line

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]

EFFECTS = [
    "model:plan",
    "model:lookup:ask",
    "tool:search",
    "model:lookup",
    "model:draft",
    "model:polish",
    "gate:answered",
]
"""Every side effect of one whole run, once each (the concurrent branches in either order)."""


async def run_child(
    server: str, store: str, point: str, tmp: Path, backend: str, *, killed: bool
) -> subprocess.CompletedProcess[bytes] | None:
    """Run the child at `point`, forked from `server`; with `killed`, SIGKILL it once it
    announced the point (the requester ends once the child is gone)."""
    argv = [*command(server, "tests.reliability.crash_workflow"), store, point]
    argv += [str(tmp / "effects.log"), str(tmp / "out.json"), backend]
    with anyio.fail_after(30):
        if not killed:
            done = await anyio.run_process(argv, cwd=ROOT, check=False)
            assert done.returncode == 0, done.stderr.decode()
            return done
        process = await anyio.open_process(
            argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        async with process:
            line = await read_line(process)
            assert line == f"AT {point}", line
            kill(process)
            assert await process.wait() == -signal.SIGKILL
    return None


def effects(tmp: Path) -> list[str]:
    path = tmp / "effects.log"
    return path.read_text().splitlines() if path.exists() else []


def outcome(tmp: Path) -> dict[str, Any]:
    return json.loads((tmp / "out.json").read_text())


UNINTERRUPTED_HISTORY = [
    ["user", None, "go"],
    ["assistant", "plan", "plan says 2/0"],
    ["assistant", "lookup", "lookup says 5/1"],
    ["assistant", "polish", "polish says 4/0"],
    ["user", None, "yes"],
    ["assistant", "gate", "gate got yes"],
]
"""The session history of the run when nothing stops it (the concurrent step keeps each
branch's last message)."""

LOOKUP = ["model:lookup:ask", "tool:search", "model:lookup"]
WRITING = ["model:draft", "model:polish"]

KILLS: dict[str, tuple[list[str], list[str]]] = {
    # Killed in polish's model call: draft's superstep in the nested sequential was
    # checkpointed, so draft does not run again. The concurrent superstep around them had not
    # ended, so its other branch (lookup) runs (again, if it had finished: the scheduler
    # decides which branch goes first).
    "model": (["model:plan", "model:draft"], [*LOOKUP, "model:polish", "gate:answered"]),
    # Killed writing the checkpoint after draft: it never committed, so draft runs again.
    "checkpoint": (["model:plan", "model:draft"], [*LOOKUP, *WRITING, "gate:answered"]),
    # Killed while the tool runs: its work never happened; plan (checkpointed) stays done.
    # The tool is idempotent, so its call, in doubt, runs again.
    "tool": (["model:plan", "model:lookup:ask"], [*LOOKUP, *WRITING, "gate:answered"]),
    # Killed while waiting on a human: every step is done and none runs again.
    "human": (EFFECTS[:-1], ["gate:answered"]),
}
"""Per kill point: side effects that happened before the kill (others of the concurrent step
may have too), and exactly those of the resumed process."""


async def check_kill_and_resume(
    server: str, store: str, point: str, tmp: Path, backend: str
) -> None:
    await run_child(server, store, point, tmp, backend, killed=True)
    required, after = KILLS[point]
    before = effects(tmp)
    assert set(required) <= set(before) <= set(EFFECTS)
    assert len(before) == len(set(before))
    # The waiting run is answered by the next run() on the session saved as JSON; any other
    # is resumed from the latest checkpoint, then answered on the same session.
    resume = "answer" if point == "human" else "resume"
    await run_child(server, store, resume, tmp, backend, killed=False)
    resumed = Counter(effects(tmp)[len(before) :])
    if "tool:search" in before and "tool:search" in after:
        # The search did its work before the kill: the re-run superstep takes its recorded
        # result, or, when the kill came before its end was recorded, runs it again (it is
        # idempotent) -- once at most.
        assert resumed["tool:search"] <= 1
        resumed["tool:search"] = 1
    assert resumed == Counter(after)
    result = outcome(tmp)
    assert result["status"] == "completed"
    assert result["text"] == "gate got yes"
    assert result["history"] == UNINTERRUPTED_HISTORY


async def test_an_uninterrupted_run_makes_each_effect_once(
    forkserver: str, tmp_path: Path, anyio_backend: str
) -> None:
    store = f"sqlite:{tmp_path / 'runs.db'}"
    await run_child(forkserver, store, "none", tmp_path, anyio_backend, killed=False)
    assert Counter(effects(tmp_path)) == Counter(EFFECTS)
    assert outcome(tmp_path)["history"] == UNINTERRUPTED_HISTORY


@pytest.mark.parametrize("point", list(KILLS))
async def test_a_run_killed_on_sqlite_resumes_in_a_new_process(
    forkserver: str, point: str, tmp_path: Path, anyio_backend: str
) -> None:
    store = f"sqlite:{tmp_path / 'runs.db'}"
    await check_kill_and_resume(forkserver, store, point, tmp_path, anyio_backend)


@pytest.mark.parametrize("point", list(KILLS))
async def test_a_run_killed_on_postgres_resumes_in_a_new_process(
    forkserver: str,
    point: str,
    tmp_path: Path,
    anyio_backend: str,
    postgres_dsn: str,
    postgres_schema: str,
) -> None:
    store = f"postgres:{postgres_dsn}#{postgres_schema}"
    await check_kill_and_resume(forkserver, store, point, tmp_path, anyio_backend)
