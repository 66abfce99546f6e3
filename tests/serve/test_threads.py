"""`Threads`: sessions kept in a store's log, so a new server continues them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from raf import Session, SessionBusy
from raf.serve.threads import THREAD_EVENT, Threads, listing_key, turn_keys
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore, StoredEvent, new_id

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
        # One event lists the thread; each save is a checkpoint of its own.
        assert [e.kind for e in await store.events(key=listing_key("chat"))] == [THREAD_EVENT]
        assert len(await store.list(turn_keys("chat")[0])) == 2
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


async def test_a_thread_an_earlier_raf_saved_as_session_json_still_opens(tmp_path: Path) -> None:
    # Before threads were checkpoints, each save put the session's JSON into the content
    # store and appended an event naming it.
    session = Session("old")
    session.set("root#history", ["hi"])
    saved = {"type": THREAD_EVENT, "version": 1, "session": session.to_json(), "seen": ["m1"]}
    async with SqliteCheckpointStore(tmp_path / "old.db") as store:
        digest = await store.put(json.dumps(saved).encode())
        await store.append(
            StoredEvent(
                id=new_id(),
                occurred_at=datetime.now(UTC),
                kind=THREAD_EVENT,
                key="thread:old",
                hash=digest,
            )
        )
        threads = Threads(store)
        thread = await threads.open("old")
        assert thread.session.get("root#history") == ["hi"]
        assert thread.seen == {"m1"}
        thread.session.set("root#history", ["hi", "again"])
        await threads.save(thread)  # saved as a checkpoint now, listed by the old event
        assert [e.kind for e in await store.events(key="thread:old")] == [THREAD_EVENT]
        reopened = await Threads(store).open("old")
    assert reopened.session.get("root#history") == ["hi", "again"]
