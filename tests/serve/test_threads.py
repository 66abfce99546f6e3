"""`Threads`: sessions kept in a store's log, so a new server continues them."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from raf.serve.threads import THREAD_EVENT, Threads
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore

pytestmark = pytest.mark.anyio


async def test_a_thread_saved_in_sqlite_opens_in_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    async with SqliteCheckpointStore(path) as store:
        threads = Threads(store)
        thread = await threads.open("chat")
        assert await threads.open("chat") is thread  # live: one Session per thread
        thread.session.set("root#history", ["hi"])
        thread.seen.update({"m1", "m2"})
        await threads.save(thread)
        thread.session.set("root#history", ["hi", "again"])
        await threads.save(thread)
        assert [e.kind for e in await store.events(key="thread:chat")] == [THREAD_EVENT] * 2
    async with SqliteCheckpointStore(path) as reopened:
        again = await Threads(reopened).open("chat")
    assert again.session.id == "chat"
    assert again.session.store is reopened
    assert again.session.get("root#history") == ["hi", "again"]
    assert again.seen == {"m1", "m2"}


async def test_concurrent_opens_share_one_thread(tmp_path: Path) -> None:
    async with SqliteCheckpointStore(tmp_path / "t.db") as store:
        threads = Threads(store)
        opened: list[object] = []

        async def open_one() -> None:
            opened.append(await threads.open("same"))

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(open_one)
    assert len({id(t) for t in opened}) == 1


async def test_an_empty_thread_id_is_refused() -> None:
    with pytest.raises(ValueError, match="threadId is empty"):
        await Threads(MemoryCheckpointStore()).open("")
