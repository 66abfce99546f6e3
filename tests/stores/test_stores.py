"""The behaviour every store shares: memory, SQLite and PostgreSQL alike."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raf.stores import (
    CHECKPOINT_FORMAT_VERSION,
    Checkpoint,
    CheckpointStore,
    CheckpointVersionError,
    EventLog,
    StoredEvent,
    new_id,
)

from .conftest import Backing, Store

pytestmark = pytest.mark.anyio

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def make_checkpoint(session_id: str = "s1", step: int = 0, **changes: Any) -> Checkpoint:
    fields: dict[str, Any] = {
        "id": new_id(),
        "session_id": session_id,
        "workflow_id": "flow",
        "superstep": step,
        "created_at": NOW + timedelta(seconds=step),
        "data": {"pending": [{"to": "writer", "text": f"step {step}"}], "states": {"a": step}},
    }
    fields.update(changes)
    return Checkpoint(**fields)


def make_event(key: str, kind: str = "review.critic", **changes: Any) -> StoredEvent:
    fields: dict[str, Any] = {"id": new_id(), "occurred_at": NOW, "kind": kind, "key": key}
    fields.update(changes)
    return StoredEvent(**fields)


async def test_every_store_implements_both_protocols(store: Store) -> None:
    assert isinstance(store, CheckpointStore)
    assert isinstance(store, EventLog)


async def test_checkpoints_round_trip_and_list_oldest_first(store: Store) -> None:
    first = [make_checkpoint("s1", step) for step in range(3)]
    other = make_checkpoint("s2", 0)
    for checkpoint in [first[0], other, first[1], first[2]]:
        await store.save(checkpoint)

    assert await store.list("s1") == [c.id for c in first]
    assert await store.list("s2") == [other.id]
    assert await store.latest("s1") == first[-1].id
    for checkpoint in [*first, other]:
        loaded = await store.load(checkpoint.id)
        assert loaded == checkpoint
        assert loaded.model_dump_json() == checkpoint.model_dump_json()


async def test_unknown_session_has_no_checkpoints(store: Store) -> None:
    await store.save(make_checkpoint("s1"))
    assert await store.latest("nobody") is None
    assert await store.list("nobody") == []


async def test_list_orders_by_id_not_by_save_order(store: Store) -> None:
    ids = [new_id() for _ in range(5)]
    for checkpoint_id in reversed(ids):
        await store.save(make_checkpoint("s1", id=checkpoint_id))
    assert await store.list("s1") == ids
    assert await store.latest("s1") == ids[-1]


async def test_saving_an_id_again_replaces_the_checkpoint(store: Store) -> None:
    original = make_checkpoint("s1", 1)
    await store.save(original)
    replacement = original.model_copy(update={"superstep": 2, "data": {"new": True}})
    await store.save(replacement)
    assert await store.load(original.id) == replacement
    assert await store.list("s1") == [original.id]


async def test_a_saved_checkpoint_is_a_copy(store: Store) -> None:
    checkpoint = make_checkpoint("s1", data={"items": [1, 2]})
    await store.save(checkpoint)
    checkpoint.data["items"].append(3)
    loaded = await store.load(checkpoint.id)
    assert loaded.data == {"items": [1, 2]}
    loaded.data["items"].append(4)
    assert (await store.load(checkpoint.id)).data == {"items": [1, 2]}


async def test_loading_an_unknown_id_raises_key_error_naming_it(store: Store) -> None:
    with pytest.raises(KeyError, match="no-such-checkpoint"):
        await store.load("no-such-checkpoint")


async def test_a_checkpoint_of_an_unknown_version_is_refused(store: Store) -> None:
    future = make_checkpoint("s1", version=CHECKPOINT_FORMAT_VERSION + 1)
    with pytest.raises(CheckpointVersionError, match=r"format version 2") as caught:
        await store.save(future)
    assert caught.value.checkpoint_id == future.id
    assert caught.value.version == CHECKPOINT_FORMAT_VERSION + 1
    assert await store.list("s1") == []


async def test_none_for_a_name_is_found_nowhere_in_every_store(store: Store) -> None:
    none: Any = None
    assert await store.list(none) == []
    assert await store.latest(none) is None
    assert await store.events(key=none) == []
    with pytest.raises(KeyError, match="None"):
        await store.load(none)
    with pytest.raises(KeyError, match="None"):
        await store.get(none)


async def test_names_with_nul_are_refused_and_never_found(store: Store) -> None:
    with pytest.raises(ValueError, match=r"session_id 'a\\x00b' contains a NUL"):
        await store.save(make_checkpoint("a\x00b"))
    with pytest.raises(ValueError, match=r"key .* contains a NUL"):
        await store.append(make_event("a\x00b"))
    assert await store.list("a\x00b") == []
    assert await store.latest("a\x00b") is None
    assert await store.events(key="a\x00b") == []
    with pytest.raises(KeyError):
        await store.load("a\x00b")
    with pytest.raises(KeyError):
        await store.get("a\x00b")


async def test_checkpoint_json_is_kept_exactly(store: Store) -> None:
    # Key order and NUL characters survive (PostgreSQL's jsonb would lose both).
    data = {"zeta": 1, "alpha": {"b": "\x00nul", "a": [1.5, -0.0, 10**30]}, "": None}
    checkpoint = make_checkpoint("s1", data=data)
    await store.save(checkpoint)
    loaded = await store.load(checkpoint.id)
    assert loaded.model_dump_json() == checkpoint.model_dump_json()
    assert list(loaded.data) == ["zeta", "alpha", ""]


async def test_event_log_keeps_id_order_per_key(store: Store) -> None:
    events = [make_event("topic-a" if i % 2 == 0 else "topic-b", meta={"i": i}) for i in range(8)]
    for event in reversed(events):
        await store.append(event)

    assert await store.events(key="topic-a") == events[0::2]
    assert await store.events(key="topic-b") == events[1::2]
    assert await store.events() == events
    assert await store.events(key="nothing") == []


async def test_events_keep_every_field(store: Store) -> None:
    event = make_event(
        "topic",
        kind="review.__start__",
        hash=hashlib.sha256(b"x").hexdigest(),
        meta={"verdict": "accept", "scores": [1, 2.5], "nested": {"ok": True, "none": None}},
        code_rev="abc123",
    )
    await store.append(event)
    assert await store.events(key="topic") == [event]


async def test_event_times_come_back_in_utc(store: Store) -> None:
    naive = make_event("t", occurred_at=datetime(2025, 1, 1, 10, 0))
    plus_two = make_event(
        "t", occurred_at=datetime(2025, 1, 1, 12, 0, 5, 123456, tzinfo=timezone(timedelta(hours=2)))
    )
    await store.append(naive)
    await store.append(plus_two)
    loaded = await store.events(key="t")
    assert [e.occurred_at for e in loaded] == [
        datetime(2025, 1, 1, 10, 0, tzinfo=UTC),
        datetime(2025, 1, 1, 10, 0, 5, 123456, tzinfo=UTC),
    ]
    assert all(e.occurred_at.utcoffset() == timedelta(0) for e in loaded)


async def test_event_meta_is_stored_as_json(store: Store) -> None:
    event = make_event("t", meta={"when": datetime(2025, 1, 2, tzinfo=UTC), "tuple": (1, 2)})
    await store.append(event)
    (loaded,) = await store.events(key="t")
    assert loaded.meta == {"when": "2025-01-02T00:00:00Z", "tuple": [1, 2]}


async def test_appending_an_id_twice_is_refused(store: Store) -> None:
    event = make_event("t")
    await store.append(event)
    with pytest.raises(ValueError, match="already in the log"):
        await store.append(event.model_copy(update={"kind": "other"}))
    assert await store.events(key="t") == [event]


async def test_content_is_addressed_by_sha256(store: Store) -> None:
    payload = bytes(range(256)) * 4
    digest = await store.put(payload)
    assert digest == hashlib.sha256(payload).hexdigest()
    assert await store.put(payload) == digest
    assert await store.put(b"") == hashlib.sha256(b"").hexdigest()
    assert await store.put(b"other") != digest
    assert await store.get(digest) == payload
    assert await store.get(hashlib.sha256(b"").hexdigest()) == b""


async def test_unknown_content_raises_key_error_naming_it(store: Store) -> None:
    missing = hashlib.sha256(b"never stored").hexdigest()
    with pytest.raises(KeyError, match=missing):
        await store.get(missing)


async def test_same_content_is_stored_once(durable_backing: Backing) -> None:
    async with durable_backing.open() as store:
        digest = await store.put(b"same bytes")
        assert await store.put(b"same bytes") == digest
    assert durable_backing.sql("SELECT hash, content FROM objects", ()) == [(digest, b"same bytes")]


async def test_concurrent_saves_from_many_tasks(store: Store) -> None:
    saved: list[Checkpoint] = []

    async def worker(index: int) -> None:
        for step in range(4):
            checkpoint = make_checkpoint("busy", step, data={"worker": index, "step": step})
            saved.append(checkpoint)
            await store.save(checkpoint)
            await store.append(make_event("busy", meta={"worker": index}))

    async with anyio.create_task_group() as group:
        for index in range(30):
            group.start_soon(worker, index)

    ids = await store.list("busy")
    assert ids == sorted(c.id for c in saved)
    assert len(ids) == 120
    for checkpoint in saved:
        assert await store.load(checkpoint.id) == checkpoint
    assert len(await store.events(key="busy")) == 120


async def test_a_new_store_object_sees_everything(durable_backing: Backing) -> None:
    checkpoint = make_checkpoint("s1")
    event = make_event("t", meta={"x": 1})
    async with durable_backing.open() as first:
        await first.save(checkpoint)
        await first.append(event)
        digest = await first.put(b"content")

    async with durable_backing.open() as second:
        assert await second.list("s1") == [checkpoint.id]
        assert await second.load(checkpoint.id) == checkpoint
        assert await second.events(key="t") == [event]
        assert await second.get(digest) == b"content"


async def test_a_stored_checkpoint_of_an_unknown_version_is_refused(
    durable_backing: Backing,
) -> None:
    checkpoint = make_checkpoint("s1")
    async with durable_backing.open() as store:
        await store.save(checkpoint)
        durable_backing.sql("UPDATE checkpoints SET version = ? WHERE id = ?", (7, checkpoint.id))
        with pytest.raises(CheckpointVersionError, match=rf"{checkpoint.id}.*version 7"):
            await store.load(checkpoint.id)


async def test_a_database_of_another_schema_version_is_refused(durable_backing: Backing) -> None:
    async with durable_backing.open() as store:
        await store.save(make_checkpoint("s1"))
    durable_backing.sql("UPDATE meta SET value = ? WHERE key = 'schema_version'", ("99",))
    with pytest.raises(RuntimeError, match="schema version 99"):
        async with durable_backing.open() as reopened:
            await reopened.list("s1")


async def test_a_closed_store_refuses_work(durable_backing: Backing) -> None:
    store = durable_backing.open()
    async with store:
        await store.save(make_checkpoint("s1"))
    await store.aclose()  # closing twice is fine
    with pytest.raises(anyio.ClosedResourceError):
        await store.list("s1")


async def test_a_store_opens_lazily_without_async_with(durable_backing: Backing) -> None:
    store = durable_backing.open()
    try:
        checkpoint = make_checkpoint("s1")
        await store.save(checkpoint)
        assert await store.latest("s1") == checkpoint.id
    finally:
        await store.aclose()


_id_text = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=12
)
_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
_json_values = st.recursive(
    _json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
_offsets = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    data=st.dictionaries(st.text(max_size=8), _json_values, max_size=5),
    session_id=_id_text,
    workflow_id=_id_text,
    superstep=st.integers(min_value=0, max_value=2**62),
    created_at=st.datetimes(
        min_value=datetime(2000, 1, 1),
        max_value=datetime(2100, 1, 1),
        timezones=st.none() | _offsets,
    ),
)
async def test_any_json_data_round_trips(
    store: Store,
    data: dict[str, Any],
    session_id: str,
    workflow_id: str,
    superstep: int,
    created_at: datetime,
) -> None:
    checkpoint = Checkpoint(
        id=new_id(),
        session_id=session_id,
        workflow_id=workflow_id,
        superstep=superstep,
        created_at=created_at,
        data=data,
    )
    await store.save(checkpoint)
    loaded = await store.load(checkpoint.id)
    assert loaded == checkpoint
    assert loaded.model_dump_json() == checkpoint.model_dump_json()
    assert await store.latest(session_id) == checkpoint.id
