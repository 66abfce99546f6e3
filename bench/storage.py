"""Storage growth: bytes a store keeps per turn of a long conversation, and what loading costs.

A two-agent sequential workflow (each agent answers `--size` bytes of text) runs `--turns`
turns on one session, each turn's input also `--size` bytes, the way a served thread runs:
the run checkpoints after each superstep, and the thread's session is saved after each turn
(`raf.serve.threads.Threads`, what the AG-UI and ACP servers do). After each turn the bench
reads how many bytes the store holds (the stored text and parts of checkpoints, events and
objects, as the database reports them) and compares the growth with the turn's own size (the
JSON of the messages the turn added). At a few points it loads the thread's newest state and
its run's newest checkpoint, and reports the time per stored byte of what was loaded.

    python -m bench.storage                      # SQLite, 1,000 turns of 1 KB
    python -m bench.storage --store postgres     # PostgreSQL (RAF_BENCH_POSTGRES_DSN)
    python -m bench.storage --turns 200 --size 20000

Prints a table and writes `bench/results/storage-STORE.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from raf import ChatMessage, FunctionAgent, SequentialBuilder, Session
from raf.serve.threads import Threads
from raf.stores import PostgresCheckpointStore, SqliteCheckpointStore

_DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
_LOAD_POINTS = (10, 100, 250, 500, 1000, 2000)


def _agent(size: int) -> Any:
    def answer(name: str) -> FunctionAgent:
        return FunctionAgent(name, lambda messages: f"{name} {len(messages)} " + "y" * size)

    return (
        (SequentialBuilder(id="pair").add_agent(answer("first")).add_agent(answer("second")))
        .build()
        .as_agent()
    )


class _Measure:
    """How many bytes the store's tables hold, read from the database itself."""

    def __init__(self, kind: str, where: str, schema: str | None) -> None:
        self.kind, self.where, self.schema = kind, where, schema

    def bytes(self) -> int:
        if self.kind == "sqlite":
            with sqlite3.connect(self.where) as connection:
                row = connection.execute(
                    "SELECT (SELECT coalesce(sum(length(data)), 0) FROM checkpoints)"
                    " + (SELECT coalesce(sum(length(content)), 0) FROM objects)"
                    " + (SELECT coalesce(sum(length(meta) + length(kind) + length(key)"
                    "    + coalesce(length(hash), 0)), 0) FROM events)"
                ).fetchone()
            return int(row[0])
        import psycopg

        with psycopg.connect(self.where, autocommit=True) as connection:
            row = connection.execute(
                f'SELECT (SELECT coalesce(sum(octet_length(data::text)), 0) FROM "{self.schema}".checkpoints)'
                f' + (SELECT coalesce(sum(octet_length(content)), 0) FROM "{self.schema}".objects)'
                f" + (SELECT coalesce(sum(octet_length(meta::text) + octet_length(kind)"
                f"    + octet_length(key) + coalesce(octet_length(hash), 0)), 0)"
                f' FROM "{self.schema}".events)'
            ).fetchone()
        assert row is not None
        return int(row[0])

    def drop(self) -> None:
        if self.kind == "sqlite":
            shutil.rmtree(os.path.dirname(self.where), ignore_errors=True)
            return
        if self.kind == "postgres":
            import psycopg

            with psycopg.connect(self.where, autocommit=True) as connection:
                connection.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


async def _run(kind: str, turns: int, size: int) -> dict[str, Any]:
    if kind == "sqlite":
        folder = tempfile.mkdtemp(prefix="raf-storage-")
        path = os.path.join(folder, "bench.db")
        store: Any = SqliteCheckpointStore(path)
        measure = _Measure("sqlite", path, None)
    else:
        dsn = os.environ.get("RAF_BENCH_POSTGRES_DSN", _DEFAULT_DSN)
        schema = f"raf_bench_{uuid.uuid4().hex[:12]}"
        store = PostgresCheckpointStore(dsn, schema=schema)
        measure = _Measure("postgres", dsn, schema)
    agent = _agent(size)
    threads = Threads(store)
    rows: list[dict[str, Any]] = []
    loads: list[dict[str, Any]] = []
    try:
        async with store:
            before = measure.bytes()
            for turn in range(1, turns + 1):
                started = time.perf_counter()
                async with threads.hold("t") as thread:
                    session: Session = thread.session
                    prompt = ChatMessage.user(f"turn {turn} " + "x" * size)
                    response = await agent.run(prompt, session).collect()
                    await threads.save(thread)
                seconds = time.perf_counter() - started
                after = measure.bytes()
                own = len(prompt.model_dump_json()) + sum(
                    len(m.model_dump_json()) for m in response.messages
                )
                rows.append(
                    {"turn": turn, "written": after - before, "own": own, "seconds": seconds}
                )
                before = after
                if turn in _LOAD_POINTS or turn == turns:
                    loads.append(await _load(store, threads, turn, after))
    finally:
        measure.drop()
    return {"store": kind, "turns": turns, "size": size, "rows": rows, "loads": loads}


async def _load(store: Any, threads: Threads, turn: int, stored: int) -> dict[str, Any]:
    """Time opening the thread and loading its run's newest checkpoint (best of 3)."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        thread = await threads.open("t")
        latest = await store.latest(thread.id)
        assert latest is not None
        checkpoint = await store.load(latest)
        best = min(best, time.perf_counter() - started)
    loaded = len(thread.session.to_json()) + len(json.dumps(checkpoint.data))
    return {"turn": turn, "seconds": best, "loaded_bytes": loaded, "stored_bytes": stored}


def _report(result: dict[str, Any]) -> str:
    rows = result["rows"]
    lines = [
        f"# Storage growth: {result['store']}, {result['turns']} turns of {result['size']} B",
        "",
        "| turns | bytes stored per turn (mean) | turn's own size (mean) | ratio (worst turn) |"
        " ms per turn (mean) |",
        "|---|---|---|---|---|",
    ]
    windows = [(1, 10), (11, 100), (101, 500), (501, 1000), (1001, 2000)]
    for low, high in windows:
        window = [r for r in rows if low <= r["turn"] <= high]
        if not window:
            continue
        written = sum(r["written"] for r in window) / len(window)
        own = sum(r["own"] for r in window) / len(window)
        worst = max(r["written"] / r["own"] for r in window)
        seconds = sum(r["seconds"] for r in window) / len(window)
        lines.append(
            f"| {low}-{min(high, rows[-1]['turn'])} | {written:,.0f} | {own:,.0f} |"
            f" {written / own:.2f} ({worst:.2f}) | {seconds * 1e3:.1f} |"
        )
    lines += [
        "",
        "| after turn | load (ms) | bytes loaded | us per KB loaded |",
        "|---|---|---|---|",
    ]
    for load in result["loads"]:
        per_kb = load["seconds"] * 1e6 / (load["loaded_bytes"] / 1024)
        lines.append(
            f"| {load['turn']} | {load['seconds'] * 1e3:.1f} | {load['loaded_bytes']:,} |"
            f" {per_kb:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.storage", description=__doc__)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--size", type=int, default=1000, help="bytes of text per message")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    result = anyio.run(_run, args.store, args.turns, args.size)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"storage-{args.store}.json").write_text(json.dumps(result, indent=1))
    print(_report(result))


if __name__ == "__main__":
    main()
