"""Event-loop stalls while a big thread is saved and loaded, on SQLite and PostgreSQL.

A checkpoint shaped like a served thread's session (`data={"state": {"root#history": [...]}}`
holding `--messages` chat messages, 60,000 by default: about 5.7 MB of JSON) is saved to a
fresh store, loaded, saved again with one more message (what a later turn writes) and loaded
again, `--rounds` times. Meanwhile a ticker task sleeps 1 ms at a time and records the longest
gap between two ticks: how long the event loop could not serve anyone else (the sleep's own
1 ms included). The table gives, per store and operation, the median time of the operation and
the longest gap seen over all rounds, and the longest pause of Python's garbage collector
meanwhile: a full collection walks every object of the process and holds the GIL, so it
stalls the loop from whichever thread it runs in (`--collector off` shows the rest).

    python -m bench.stall                        # SQLite and PostgreSQL (RAF_BENCH_POSTGRES_DSN)
    python -m bench.stall --stores sqlite --label before

Only public API is used, so the script runs against an older raf too (for a before/after).
Prints the table and writes `bench/results/stall-LABEL.json`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from raf import ChatMessage
from raf.stores import Checkpoint, PostgresCheckpointStore, SqliteCheckpointStore

_RESULTS = Path(__file__).with_name("results")
_DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
_OPERATIONS = ("first save", "load", "save of one more message", "load after it")


class _Ticker:
    """The longest gap between ticks of a task that sleeps 1 ms at a time, and the longest
    pause of Python's garbage collector meanwhile (in whichever thread it ran)."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.longest_collection = 0.0
        self._collecting = 0.0

    def collection(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._collecting = time.perf_counter()
        else:
            pause = time.perf_counter() - self._collecting
            self.longest_collection = max(self.longest_collection, pause)

    async def run(self) -> None:
        while True:
            started = time.perf_counter()
            await anyio.sleep(0.001)
            self.longest = max(self.longest, time.perf_counter() - started)


async def _watched(operation: Callable[[], Awaitable[object]]) -> tuple[float, float, float]:
    """Seconds `operation` took, the longest gap the ticker saw meanwhile, and the longest
    garbage collection."""
    ticker = _Ticker()
    seconds = 0.0
    async with anyio.create_task_group() as group:
        group.start_soon(ticker.run)
        await anyio.sleep(0.01)  # the ticker is running before the clock starts
        ticker.longest = 0.0
        gc.callbacks.append(ticker.collection)
        started = time.perf_counter()
        try:
            await operation()
        finally:
            gc.callbacks.remove(ticker.collection)
        seconds = time.perf_counter() - started
        group.cancel_scope.cancel()
    return seconds, ticker.longest, ticker.longest_collection


def _checkpoint(history: list[dict[str, Any]], turn: int) -> Checkpoint:
    return Checkpoint(
        id=f"thread-{turn:04d}",
        session_id="thread",
        workflow_id="session",
        superstep=turn,
        created_at=datetime.now(UTC),
        data={"state": {"root#history": history}},
    )


@asynccontextmanager
async def _store(kind: str) -> AsyncIterator[Any]:
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="raf-stall-") as folder:
            async with SqliteCheckpointStore(os.path.join(folder, "stall.db")) as store:
                yield store
        return
    import psycopg
    from psycopg import sql

    dsn = os.environ.get("RAF_BENCH_POSTGRES_DSN", _DEFAULT_DSN)
    schema = f"raf_bench_{uuid.uuid4().hex[:12]}"
    try:
        async with PostgresCheckpointStore(dsn, schema=schema) as store:
            yield store
    finally:
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


async def _round(
    store: Any, history: list[dict[str, Any]]
) -> dict[str, tuple[float, float, float]]:
    """Each operation's time and longest stall, on a fresh store."""
    first = _checkpoint(history, 1)
    longer = _checkpoint([*history, ChatMessage.user("one more").model_dump(mode="json")], 2)
    loaded: list[Checkpoint] = []

    async def load(checkpoint_id: str) -> None:
        loaded.append(await store.load(checkpoint_id))

    figures: dict[str, tuple[float, float, float]] = dict(
        zip(
            _OPERATIONS,
            [
                await _watched(lambda: store.save(first)),
                await _watched(lambda: load(first.id)),
                await _watched(lambda: store.save(longer)),
                await _watched(lambda: load(longer.id)),
            ],
            strict=True,
        )
    )
    if [c.data for c in loaded] != [first.data, longer.data]:
        raise AssertionError("a loaded checkpoint is not the one saved")
    return figures


async def _measure(kind: str, messages: int, rounds: int) -> dict[str, Any]:
    history = [
        ChatMessage.user(f"message {index} of a long thread").model_dump(mode="json")
        for index in range(messages)
    ]
    size = len(json.dumps(history))
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in _OPERATIONS}
    for _ in range(rounds):
        async with _store(kind) as store:
            for name, figures in (await _round(store, history)).items():
                samples[name].append(figures)
    return {
        "store": kind,
        "messages": messages,
        "json_bytes": size,
        "operations": {
            name: {
                "median_ms": statistics.median(s for s, _, _ in runs) * 1e3,
                "longest_stall_ms": max(g for _, g, _ in runs) * 1e3,
                "longest_collection_ms": max(c for _, _, c in runs) * 1e3,
                "runs": [
                    {"ms": s * 1e3, "stall_ms": g * 1e3, "collection_ms": c * 1e3}
                    for s, g, c in runs
                ],
            }
            for name, runs in samples.items()
        },
    }


def _report(results: list[dict[str, Any]], backend: str) -> str:
    lines = [
        f"# Event-loop stalls, {results[0]['messages']:,} messages"
        f" ({results[0]['json_bytes'] / 1e6:.2f} MB of JSON), {backend}",
        "",
        "| store | operation | time (median ms) | longest stall (ms) | longest GC pause (ms) |",
        "|---|---|---:|---:|---:|",
    ]
    for result in results:
        for name, figures in result["operations"].items():
            lines.append(
                f"| {result['store']} | {name} | {figures['median_ms']:,.0f} |"
                f" {figures['longest_stall_ms']:,.1f} | {figures['longest_collection_ms']:,.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.stall", description=__doc__)
    parser.add_argument("--stores", default="sqlite,postgres", help="comma-separated")
    parser.add_argument("--messages", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument(
        "--collector", choices=("on", "off"), default="on", help="Python's cyclic GC"
    )
    parser.add_argument("--label", default="latest", help="results go to stall-LABEL.json")
    args = parser.parse_args()
    if args.collector == "off":
        gc.disable()
    results = [
        anyio.run(_measure, kind, args.messages, args.rounds, backend=args.backend)
        for kind in args.stores.split(",")
    ]
    _RESULTS.mkdir(exist_ok=True)
    out = _RESULTS / f"stall-{args.label}.json"
    out.write_text(
        json.dumps(
            {"backend": args.backend, "collector": args.collector, "results": results}, indent=1
        )
    )
    print(_report(results, f"{args.backend}, garbage collector {args.collector}"))


if __name__ == "__main__":
    main()
