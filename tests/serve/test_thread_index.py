"""`ThreadIndex` and `GET /studio/threads` with many threads: pages, cursors, and reads of only
what the log took in since the last listing."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from raf import FunctionAgent
from raf.serve import create_app
from raf.serve.agui.studio import LIST_LIMIT
from raf.serve.thread_index import ThreadIndex
from raf.serve.threads import Threads, turn_keys
from raf.stores import EventChange, PostgresCheckpointStore, SqliteCheckpointStore, StoredEvent

pytestmark = pytest.mark.anyio

MANY = 2 * LIST_LIMIT + 37


class Reading(SqliteCheckpointStore):
    """A SQLite store that records what the log was asked for."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.whole_log = 0
        self.changes_read: list[int] = []

    async def events(self, key: str | None = None) -> list[StoredEvent]:
        if key is None:
            self.whole_log += 1
        return await super().events(key)

    async def changes(self, after: int = 0, *, limit: int = 10_000) -> list[EventChange]:
        found = await super().changes(after, limit=limit)
        self.changes_read.append(len(found))
        return found


async def make_threads(threads: Threads, names: list[str]) -> None:
    for name in names:
        async with threads.hold(name) as thread:
            thread.session.set("k", name)
            await threads.save(thread)
            await threads.save(thread)  # a later save lists nothing new


async def test_the_index_pages_through_many_threads_reading_only_new_entries(
    tmp_path: Path,
) -> None:
    async with Reading(tmp_path / "threads.sqlite") as store:
        threads = Threads(store)
        names = [f"t{n:04d}" for n in range(MANY)]
        await make_threads(threads, names)
        index = ThreadIndex(store, batch=64)
        pages: list[list[str]] = []
        before: int | None = None
        while True:
            page = await index.page(limit=LIST_LIMIT, before=before)
            pages.append(page.ids)
            if page.before is None:
                break
            before = page.before
        assert [len(p) for p in pages] == [LIST_LIMIT, LIST_LIMIT, 37]
        assert [name for p in pages for name in p] == names[::-1]
        first_reads = len(store.changes_read)
        assert sum(store.changes_read) == MANY  # each entry of the log read once
        await make_threads(threads, ["late"])
        newest = await index.page(limit=2)
        assert newest.ids == ["late", names[-1]]
        assert store.changes_read[first_reads:] == [1]  # only what came since
        assert (await index.page(limit=1)).ids == ["late"]
        assert store.changes_read[-1] == 0  # an idle log: one empty read
        assert store.whole_log == 0
        assert (await ThreadIndex(store).page(limit=5, before=3)).ids == names[2::-1]
        with pytest.raises(ValueError, match="limit must be positive"):
            await index.page(limit=0)


async def test_the_route_lists_many_threads_a_page_at_a_time(tmp_path: Path) -> None:
    store = Reading(tmp_path / "studio.sqlite")
    app = create_app(FunctionAgent("echo", lambda m: m[-1].text), store)
    names = [f"t{n:04d}" for n in range(MANY)]
    await make_threads(Threads(store), names)
    turn = (await store.list(turn_keys("t0001")[0]))[-1]
    transport = httpx2.ASGITransport(app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://localhost") as http:
        made = await http.post(f"/studio/threads/t0001/checkpoints/{turn}/fork", json={})
        assert made.status_code == 201
        first = (await http.get("/studio/threads")).json()
        second = (await http.get("/studio/threads", params={"before": first["before"]})).json()
        small = (await http.get("/studio/threads", params={"limit": 3})).json()
        rest = second
        while rest["before"] is not None:
            rest = (await http.get("/studio/threads", params={"before": rest["before"]})).json()
        refused = [
            (await http.get("/studio/threads", params=params)).status_code
            for params in ({"limit": 0}, {"limit": LIST_LIMIT + 1}, {"before": "x"})
        ]
    await store.aclose()
    fork = made.json()["threadId"]
    assert first["truncated"] is True and len(first["threads"]) == LIST_LIMIT
    assert first["threads"][0] == {
        "id": fork,
        "createdAt": first["threads"][0]["createdAt"],
        "forkedFrom": {"thread": "t0001", "checkpoint": turn},
    }
    assert [t["id"] for t in first["threads"][1:3]] == [names[-1], names[-2]]
    assert all(t["forkedFrom"] is None and t["createdAt"] for t in first["threads"][1:])
    assert second["threads"][0]["id"] == names[-LIST_LIMIT]
    assert [t["id"] for t in small["threads"]] == [fork, names[-1], names[-2]]
    assert rest["truncated"] is False and rest["threads"][-1]["id"] == names[0]
    assert refused == [422, 422, 422]
    assert store.whole_log == 0


async def test_two_workers_on_one_postgres_database_page_alike(
    postgres_dsn: str, postgres_schema: str
) -> None:
    first = PostgresCheckpointStore(postgres_dsn, schema=postgres_schema)
    second = PostgresCheckpointStore(postgres_dsn, schema=postgres_schema)
    async with first, second:
        names = [f"t{n:03d}" for n in range(60)]
        await make_threads(Threads(first), names[::2])
        ours, theirs = ThreadIndex(first, batch=7), ThreadIndex(second, batch=7)
        assert (await ours.page(limit=10)).ids == names[::2][::-1][:10]
        for name in names[1::2]:  # the workers take turns creating threads
            await make_threads(Threads(second if name[-1] in "13579" else first), [name])
        page = await ours.page(limit=25)
        assert page.ids == [*names[1::2][::-1], *names[::2][::-1]][:25]
        assert page.before is not None
        # A cursor one worker gave means the same to the other.
        assert await theirs.page(limit=25, before=page.before) == await ours.page(
            limit=25, before=page.before
        )
