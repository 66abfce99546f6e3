"""Role workflows on SQLite: what an idle tick costs, and the bytes a large role output writes.

Two figures:

- **idle tick**: a log of `--threads` finished threads (a `__start__` and one step each);
  after the runner's first tick, how long a tick that finds nothing to do takes (median of
  `--ticks`), and how long that first (cold) tick took.
- **1 MB output**: a run of a role workflow whose role answers with `--output` bytes of text
  (and a boolean), on a fresh SQLite store; the bytes each table holds afterwards (event
  meta, objects, checkpoint rows) against the output's size.

    python -m bench.roles                     # 50,000 threads, 1 MB output
    python bench/roles.py --label before      # the same, with whichever raf is importable

Only public API is used, so the script runs against an older raf too (for a before/after).
Prints the figures and writes `bench/results/roles-LABEL.json`.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from raf import END, AdapterBinding, RoleWorkflowBuilder, Session
from raf.stores import SqliteCheckpointStore, content_digest, new_id

_RESULTS = Path(__file__).with_name("results")


class Note(BaseModel):
    """The bench's role output: a text (large in the bytes figure) and a small signal."""

    text: str
    done: bool


def _moderator(chain: list[Any], topic_id: str) -> Any:
    return "writer" if len(chain) == 1 else END


def _builder() -> RoleWorkflowBuilder:
    return (
        RoleWorkflowBuilder("bench").add_role("writer", "Write.", Note).with_moderator(_moderator)
    )


def _adapter(size: int) -> Any:
    def adapter(prompt: str, schema: type[BaseModel], /) -> Any:
        async def role(thread: Any) -> Any:
            return schema.model_validate({"text": "x" * size, "done": True})

        return role

    return adapter


def _finished_log(path: Path, threads: int) -> None:
    """Write `threads` finished threads straight into a new SQLite log (fast to set up)."""

    async def create() -> None:
        async with SqliteCheckpointStore(path):
            pass  # the tables

    anyio.run(create)
    start = b'[{"role":"user","contents":[{"type":"text","text":"Write."}],"author":null}]'
    step = b'{"text":"done","done":true}'
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    rows: list[tuple[Any, ...]] = []
    for number in range(threads):
        topic = f"topic-{number}"
        rows.append((new_id(), now, "bench.__start__", topic, content_digest(start), "{}", None))
        meta = '{"text":"done","done":true}'
        rows.append((new_id(), now, "bench.writer", topic, content_digest(step), meta, None))
    with sqlite3.connect(path) as connection:
        connection.executemany(
            "INSERT OR IGNORE INTO objects (hash, content) VALUES (?, ?)",
            [(content_digest(start), start), (content_digest(step), step)],
        )
        connection.executemany(
            "INSERT INTO events (id, occurred_at, kind, key, hash, meta, code_rev)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


async def _ticks(path: Path, ticks: int) -> dict[str, float]:
    async with SqliteCheckpointStore(path) as log:
        runner = _builder().build_tick_runner(AdapterBinding(_adapter(10)), log)
        began = time.perf_counter()
        first = await runner.tick()
        cold = time.perf_counter() - began
        assert first == [], "every thread of the bench log is finished"
        idle: list[float] = []
        for _ in range(ticks):
            began = time.perf_counter()
            assert await runner.tick() == []
            idle.append(time.perf_counter() - began)
    return {"cold_tick_ms": cold * 1000, "idle_tick_ms": statistics.median(idle) * 1000}


async def _bytes(path: Path, size: int) -> dict[str, int]:
    async with SqliteCheckpointStore(path) as store:
        workflow = _builder().build(AdapterBinding(_adapter(size)))
        await workflow.as_agent().run("Write.", Session(id="big", store=store)).collect()
    with sqlite3.connect(path) as connection:

        def total(query: str) -> int:
            return int(connection.execute(query).fetchone()[0] or 0)

        figures = {
            "event_meta_bytes": total("SELECT sum(length(meta)) FROM events"),
            "object_bytes": total("SELECT sum(length(content)) FROM objects"),
            "checkpoint_row_bytes": total("SELECT sum(length(data)) FROM checkpoints"),
        }
    figures["total_bytes"] = sum(figures.values())
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run both figures; print them and write `bench/results/roles-LABEL.json`."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=50_000)
    parser.add_argument("--ticks", type=int, default=7)
    parser.add_argument("--output", type=int, default=1_000_000, help="bytes of role output")
    parser.add_argument("--label", default="after")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        ticks_log = Path(folder) / "ticks.db"
        _finished_log(ticks_log, options.threads)
        ticks = anyio.run(_ticks, ticks_log, options.ticks)
        sizes = anyio.run(_bytes, Path(folder) / "bytes.db", options.output)
    result = {
        "label": options.label,
        "threads": options.threads,
        **ticks,
        "output_bytes": options.output,
        **sizes,
        "written_per_output_byte": round(sizes["total_bytes"] / options.output, 2),
    }
    print(
        f"{options.label}: idle tick over {options.threads:,} finished threads "
        f"{ticks['idle_tick_ms']:.2f} ms (first tick {ticks['cold_tick_ms']:.0f} ms); "
        f"a {options.output:,}-byte output wrote {sizes['total_bytes']:,} bytes "
        f"(meta {sizes['event_meta_bytes']:,}, objects {sizes['object_bytes']:,}, "
        f"checkpoint rows {sizes['checkpoint_row_bytes']:,})"
    )
    _RESULTS.mkdir(exist_ok=True)
    (_RESULTS / f"roles-{options.label}.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
