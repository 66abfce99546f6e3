"""Several tick runners, each its own process (one on asyncio, one on trio), on one store:
every step is played once."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path

import anyio

from raf.stores import PostgresCheckpointStore, SqliteCheckpointStore
from tests.builders.roles_support import counting_binding, review_builder
from tests.forkserver import script
from tests.stores.conftest import postgres_dsn, postgres_schema

__all__ = ["postgres_dsn", "postgres_schema"]

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("roles_worker.py")
TOPICS = 8

Store = SqliteCheckpointStore | PostgresCheckpointStore


def _race(server: str, where: str, plays: Path) -> str:
    """Two runner processes, forked from `server`, started together, until every thread has
    ended."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    processes = [
        subprocess.Popen(
            [*script(server, WORKER), where, str(plays), str(TOPICS), backend],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for backend in ("asyncio", "trio")
    ]
    try:
        for process in processes:  # both ready before either starts
            assert process.stdout is not None
            assert process.stdout.readline() == b"READY\n"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write(b"GO\n")
            process.stdin.flush()
        outputs: list[str] = []
        for process in processes:
            output, _ = process.communicate(timeout=90)
            outputs.append(output.decode())
            assert process.returncode == 0, outputs[-1]
        return "\n".join(outputs)
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                process.wait()


def _check(plays: Path, kinds: dict[str, list[str]], output: str) -> None:
    played = Counter(plays.read_text().split("\n")[:-1])
    twice = [play for play, n in played.items() if n > 1]
    assert not twice, f"played more than once: {twice}; the runners said:\n{output[-4000:]}"
    assert len(played) == TOPICS * 4
    expected = ["__start__", "writer", "reviewer", "writer", "reviewer"]
    assert all(chain == expected for chain in kinds.values()), kinds


async def _open_threads(store: Store) -> None:
    async with store:
        binding, _ = counting_binding()
        runner = review_builder().build_tick_runner(binding, store)
        for number in range(TOPICS):
            await runner.start(f"t{number}", "Write.")


async def _kinds(store: Store) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {}
    async with store:
        for event in await store.events():
            kinds.setdefault(event.key, []).append(event.kind.removeprefix("review."))
    return kinds


def test_two_runner_processes_on_sqlite_never_play_a_step_twice(
    forkserver: str, tmp_path: Path
) -> None:
    path = tmp_path / "log.db"
    anyio.run(_open_threads, SqliteCheckpointStore(path))
    output = _race(forkserver, str(path), tmp_path / "plays")
    _check(tmp_path / "plays", anyio.run(_kinds, SqliteCheckpointStore(path)), output)


def test_two_runner_processes_on_postgres_never_play_a_step_twice(
    forkserver: str, tmp_path: Path, postgres_dsn: str, postgres_schema: str
) -> None:
    def store() -> PostgresCheckpointStore:
        return PostgresCheckpointStore(postgres_dsn, schema=postgres_schema)

    anyio.run(_open_threads, store())
    output = _race(forkserver, f"{postgres_dsn}#{postgres_schema}", tmp_path / "plays")
    _check(tmp_path / "plays", anyio.run(_kinds, store()), output)
