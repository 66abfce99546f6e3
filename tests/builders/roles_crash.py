"""A tick that dies: `python roles_crash.py DB MOMENT` ticks the review workflow on the SQLite
log `DB` and, at `MOMENT` (`content-written`: after the content, before the event; or
`event-written`: after the event's transaction), prints READY and waits to be killed."""

from __future__ import annotations

import sys
from typing import Any

import anyio

from raf.stores import SqliteCheckpointStore, StoredEvent
from raf.stores.base import EventChange
from tests.builders.roles_support import counting_binding, review_builder


class _DyingLog:
    """The SQLite log, but a tick's write stops at the chosen moment for ever."""

    def __init__(self, store: SqliteCheckpointStore, moment: str) -> None:
        self._store = store
        self._moment = moment

    async def append(self, event: StoredEvent, content: bytes | None = None, **how: Any) -> None:
        if self._moment == "content-written":
            assert content is not None
            await self._store.put(content)  # the content is in, its event is not
        else:
            await self._store.append(event, content, **how)
        print("READY", flush=True)
        await anyio.sleep_forever()

    async def events(self, key: str | None = None) -> list[StoredEvent]:
        return await self._store.events(key)

    async def changes(self, after: int = 0, *, limit: int = 10_000) -> list[EventChange]:
        return await self._store.changes(after, limit=limit)

    async def put(self, content: bytes) -> str:
        return await self._store.put(content)

    async def get(self, digest: str) -> bytes:
        return await self._store.get(digest)


async def main(path: str, moment: str) -> None:
    binding, _ = counting_binding()
    async with SqliteCheckpointStore(path) as store:
        runner = review_builder().build_tick_runner(binding, _DyingLog(store, moment))
        await runner.tick()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
