"""`Threads`: sessions kept in a store's log, so a new server continues them."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf import SessionBusy
from raf.serve.threads import THREAD_EVENT, Threads
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore

pytestmark = pytest.mark.anyio


async def test_a_thread_saved_in_sqlite_opens_in_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    async with SqliteCheckpointStore(path) as store:
        threads = Threads(store)
        thread = await threads.open("chat")
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


async def test_a_held_thread_is_busy_for_every_other_holder_of_its_store(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    async with SqliteCheckpointStore(path) as store, SqliteCheckpointStore(path) as other:
        async with Threads(store).hold("same") as thread:
            for threads in (Threads(store), Threads(other)):
                with pytest.raises(SessionBusy) as busy:
                    async with threads.hold("same"):
                        pass
                assert busy.value.session_id == "same"
            async with Threads(other).hold("another") as free:
                assert free.id == "another"
            thread.seen.add("m1")
            await Threads(store).save(thread)
        async with Threads(other).hold("same") as again:
            assert again.seen == {"m1"}  # the holder's save, read once it let go


async def test_a_thread_is_read_when_held_not_kept_from_before() -> None:
    store = MemoryCheckpointStore()
    stale = await Threads(store).open("t")
    async with Threads(store).hold("t") as thread:
        thread.seen.add("m1")
        await Threads(store).save(thread)
    assert stale.seen == set()
    async with Threads(store).hold("t") as fresh:
        assert fresh.seen == {"m1"}


async def test_an_empty_thread_id_is_refused() -> None:
    with pytest.raises(ValueError, match="threadId is empty"):
        await Threads(MemoryCheckpointStore()).open("")
    with pytest.raises(ValueError, match="threadId is empty"):
        async with Threads(MemoryCheckpointStore()).hold(""):
            pass
