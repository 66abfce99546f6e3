"""The event log's atomic append: content first, event last, in one transaction."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from raf.errors import AppendConflict, CheckpointError
from raf.stores import SqliteCheckpointStore, StoredEvent, new_id

from .conftest import Backing, Store

pytestmark = pytest.mark.anyio


def _event(content: bytes, **changes: Any) -> StoredEvent:
    fields: dict[str, Any] = {
        "id": new_id(),
        "occurred_at": datetime(2025, 1, 1, tzinfo=UTC),
        "kind": "review.critic",
        "key": "topic",
        "hash": hashlib.sha256(content).hexdigest(),
    }
    fields.update(changes)
    return StoredEvent(**fields)


async def test_an_event_and_its_content_are_appended_together(store: Store) -> None:
    content = b'{"verdict": "accept"}'
    event = _event(content, meta={"verdict": "accept"})
    await store.append(event, content)
    assert await store.events(key="topic") == [event]
    assert event.hash is not None
    assert await store.get(event.hash) == content


async def test_a_hash_that_is_not_the_content_s_is_refused_and_nothing_is_written(
    store: Store,
) -> None:
    event = _event(b"other bytes")
    with pytest.raises(ValueError, match="content's sha256 is"):
        await store.append(event, b"the content")
    assert await store.events() == []
    with pytest.raises(KeyError):
        await store.get(hashlib.sha256(b"the content").hexdigest())


async def test_a_refused_event_takes_its_content_back_out(durable_backing: Backing) -> None:
    async with durable_backing.open() as store:
        first = _event(b"first")
        await store.append(first, b"first")
        again = _event(b"second", id=first.id)
        with pytest.raises(ValueError, match="already in the log"):
            await store.append(again, b"second")
        assert await store.events() == [first]
    rows = durable_backing.sql("SELECT content FROM objects ORDER BY content", ())
    assert [bytes(row[0]) for row in rows] == [b"first"]


async def test_an_append_that_names_the_event_it_follows_is_refused_once_the_key_moved_on(
    store: Store,
) -> None:
    first = _event(b"1")
    await store.append(first, b"1", follows=None)  # the key was empty
    with pytest.raises(AppendConflict) as caught:
        await store.append(_event(b"x"), b"x", follows=None)
    assert (caught.value.key, caught.value.expected, caught.value.found) == (
        "topic",
        None,
        first.id,
    )
    second = _event(b"2")
    await store.append(second, b"2", follows=first.id)
    lost = _event(b"lost")
    with pytest.raises(AppendConflict, match="another writer appended first"):
        await store.append(lost, b"lost", follows=first.id)
    assert [e.id for e in await store.events(key="topic")] == [first.id, second.id]
    with pytest.raises(KeyError):  # the loser's content went back out with it
        await store.get(hashlib.sha256(b"lost").hexdigest())
    other = _event(b"o", key="elsewhere")
    await store.append(other, b"o", follows=None)  # per key: another key is its own
    await store.append(_event(b"3"), b"3")  # unchecked: whatever the key holds


async def test_an_append_must_sort_after_the_event_it_follows(store: Store) -> None:
    later = _event(b"1")
    await store.append(later, b"1")
    early = _event(b"0", id="00000000000000000000000000")
    with pytest.raises(ValueError, match="new_id"):
        await store.append(early, b"0", follows=later.id)
    assert [e.id for e in await store.events()] == [later.id]


async def test_only_one_of_many_racing_appends_following_one_event_wins(store: Store) -> None:
    first = _event(b"1")
    await store.append(first, b"1")
    outcomes: list[str] = []

    async def racer(number: int) -> None:
        try:
            await store.append(_event(str(number).encode()), str(number).encode(), follows=first.id)
            outcomes.append("won")
        except AppendConflict:
            outcomes.append("lost")

    async with anyio.create_task_group() as group:
        for number in range(8):
            group.start_soon(racer, number)
    assert sorted(outcomes) == ["lost"] * 7 + ["won"]
    assert len(await store.events(key="topic")) == 2


async def test_changes_list_what_was_appended_after_a_position_in_write_order(
    store: Store,
) -> None:
    assert await store.changes() == []
    written = [_event(b"c", key=f"k{n % 3}", kind=f"w.r{n}") for n in range(7)]
    for event in written:
        await store.append(event, b"c")
    everything = await store.changes()
    assert [(c.id, c.kind, c.key) for c in everything] == [(e.id, e.kind, e.key) for e in written]
    positions = [c.position for c in everything]
    assert positions == sorted(positions) and len(set(positions)) == 7
    assert await store.changes(positions[-1]) == []
    assert [c.id for c in await store.changes(positions[2], limit=2)] == [
        written[3].id,
        written[4].id,
    ]
    late = _event(b"c", key="k0")
    await store.append(late, b"c")
    assert [c.id for c in await store.changes(positions[-1])] == [late.id]


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("meta", "{not json", "its meta is not JSON"),
        ("meta", "[1, 2]", "its meta is list, not a JSON object"),
        ("occurred_at", "yesterday", "its time 'yesterday' is not a timestamp"),
    ],
)
async def test_a_damaged_event_row_is_a_checkpoint_error_naming_the_event(
    tmp_path: Path, column: str, value: str, problem: str
) -> None:
    path = tmp_path / "log.db"
    async with SqliteCheckpointStore(path) as store:
        good, bad = _event(b"g", key="good"), _event(b"b", key="bad")
        await store.append(good, b"g")
        await store.append(bad, b"b")
    with sqlite3.connect(path) as connection:
        connection.execute(f"UPDATE events SET {column} = ? WHERE id = ?", (value, bad.id))
    async with SqliteCheckpointStore(path) as store:
        with pytest.raises(CheckpointError, match=re.escape(problem)) as caught:
            await store.events(key="bad")
        assert caught.value.event_id == bad.id
        assert bad.id in str(caught.value)
        assert await store.events(key="good") == [good]  # nothing else is poisoned
        assert [c.key for c in await store.changes()] == ["good", "bad"]


async def test_a_non_object_meta_in_postgres_is_a_checkpoint_error(
    durable_backing: Backing,
) -> None:
    async with durable_backing.open() as store:
        bad = _event(b"b", key="bad")
        await store.append(bad, b"b")
        durable_backing.sql("UPDATE events SET meta = '42' WHERE id = ?", (bad.id,))
        with pytest.raises(CheckpointError, match="its meta is int") as caught:
            await store.events()
        assert caught.value.event_id == bad.id
