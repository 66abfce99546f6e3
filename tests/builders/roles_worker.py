"""A tick runner process: `python roles_worker.py STORE PLAYS TOPICS BACKEND` ticks the review
workflow on STORE (a SQLite path, or `postgresql://...#schema`) on the anyio BACKEND once it
reads GO on stdin, writing a line `topic depth` to PLAYS for every role it plays, until each
of the TOPICS threads ended."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import anyio

from raf.adapters import AdapterBinding, ThreadContext
from raf.stores import PostgresCheckpointStore, SqliteCheckpointStore
from tests.builders.roles_support import Counting, review_builder


class _Recording(Counting):
    """The counting roles, each play also a line in the plays file (one write: atomic)."""

    def __init__(self, plays: str) -> None:
        super().__init__()
        self._plays = plays

    def __call__(self, prompt: str, schema: Any, /) -> Any:
        inner = super().__call__(prompt, schema)

        async def role(thread: ThreadContext) -> Any:
            descriptor = os.open(self._plays, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                os.write(descriptor, f"{thread.thread_id} {thread.depth}\n".encode())
            finally:
                os.close(descriptor)
            await anyio.sleep(0.01)  # a role takes a while: the other runner tries meanwhile
            return await inner(thread)

        return role


async def main(where: str, plays: str, topics: int) -> None:
    if where.startswith("postgresql://"):
        dsn, schema = where.split("#")
        store: Any = PostgresCheckpointStore(dsn, schema=schema)
    else:
        store = SqliteCheckpointStore(where)
    async with store:
        runner = review_builder().build_tick_runner(AdapterBinding(_Recording(plays)), store)
        print("READY", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        with anyio.fail_after(60):
            while True:
                await runner.tick()
                events = await store.events()
                if sum(1 for e in events if e.kind == "review.reviewer") == 2 * topics:
                    break
                await anyio.sleep(0.005)
        assert not runner.failures, runner.failures


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stdout, level=logging.WARNING)  # failures show in the output
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), backend=sys.argv[4])
