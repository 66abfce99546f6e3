"""The event log's atomic append: content first, event last, in one transaction."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest

from raf.stores import StoredEvent, new_id

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
