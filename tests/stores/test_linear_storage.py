"""Checkpoints keep each message once: storage grows with a conversation, not its square; old
databases migrate on open; damaged rows and parts fail with a `CheckpointError` naming the
checkpoint."""

from __future__ import annotations

import json
from typing import Any

import pytest

from raf.errors import CheckpointError
from raf.stores import Checkpoint

from .conftest import Backing
from .test_stores import make_checkpoint

pytestmark = pytest.mark.anyio

_STORED_BYTES = {
    "sqlite": "SELECT (SELECT coalesce(sum(length(data)), 0) FROM checkpoints)"
    " + (SELECT coalesce(sum(length(content)), 0) FROM objects)",
    "postgres": "SELECT (SELECT coalesce(sum(octet_length(data::text)), 0) FROM checkpoints)"
    " + (SELECT coalesce(sum(octet_length(content)), 0) FROM objects)",
}


def _message(turn: int) -> dict[str, Any]:
    return {"t": "message", "v": {"role": "user", "text": f"turn {turn}: " + "w" * 1000}}


def _checkpoint(history: list[dict[str, Any]], step: int) -> Checkpoint:
    session = {"w/agent#history": {"t": "list", "v": list(history)}}
    return make_checkpoint("s", step, data={"session": session, "next": step})


def _stored(backing: Backing) -> int:
    ((total,),) = backing.sql(_STORED_BYTES[backing.kind], ())
    return int(total)


async def test_each_save_of_a_growing_history_stores_about_the_new_message(
    durable_backing: Backing,
) -> None:
    history: list[dict[str, Any]] = []
    growth: list[int] = []
    async with durable_backing.open() as store:
        before = _stored(durable_backing)
        for turn in range(150):
            history.append(_message(turn))
            checkpoint = _checkpoint(history, turn)
            await store.save(checkpoint)
            after = _stored(durable_backing)
            growth.append(after - before)
            before = after
        assert await store.load(checkpoint.id) == checkpoint
    own = len(json.dumps(_message(0)))
    # Saving the 150th turn costs what saving the 10th did, about the message itself; the
    # whole history (150 KB by then) is never written again.
    assert sum(growth[-20:]) / 20 < 1.6 * own
    assert sum(growth[-20:]) < 1.3 * sum(growth[10:30])


async def test_a_database_of_the_first_layout_is_migrated_when_opened(
    durable_backing: Backing,
) -> None:
    kept = _checkpoint([_message(turn) for turn in range(30)], 3)
    async with durable_backing.open() as store:
        await store.save(kept)
    # Turn the database back into layout 1: the whole checkpoint's JSON in its row, no parts.
    durable_backing.sql("DELETE FROM objects", ())
    durable_backing.sql(
        "UPDATE checkpoints SET data = ? WHERE id = ?", (kept.model_dump_json(), kept.id)
    )
    durable_backing.sql("UPDATE meta SET value = ? WHERE key = 'schema_version'", ("1",))

    async with durable_backing.open() as reopened:
        assert await reopened.load(kept.id) == kept
    assert durable_backing.sql("SELECT value FROM meta WHERE key = 'schema_version'", ()) == [
        ("2",)
    ]
    ((parts,),) = durable_backing.sql("SELECT count(*) FROM objects", ())
    assert parts > 30  # each message became a part


async def test_a_missing_part_fails_naming_the_checkpoint(durable_backing: Backing) -> None:
    checkpoint = _checkpoint([_message(turn) for turn in range(12)], 0)
    async with durable_backing.open() as store:
        await store.save(checkpoint)
        durable_backing.sql("DELETE FROM objects", ())
    async with durable_backing.open() as reopened:  # a new object: it knows no parts
        with pytest.raises(CheckpointError, match=rf"{checkpoint.id}.*missing") as caught:
            await reopened.load(checkpoint.id)
    assert caught.value.checkpoint_id == checkpoint.id


async def test_a_row_whose_json_version_disagrees_with_its_column_is_refused(
    durable_backing: Backing,
) -> None:
    checkpoint = _checkpoint([_message(0)], 0)
    async with durable_backing.open() as store:
        await store.save(checkpoint)
        ((text,),) = durable_backing.sql(
            "SELECT data FROM checkpoints WHERE id = ?", (checkpoint.id,)
        )
        edited = json.loads(text) if isinstance(text, str) else text
        edited["version"] = 5
        durable_backing.sql(
            "UPDATE checkpoints SET data = ? WHERE id = ?", (json.dumps(edited), checkpoint.id)
        )
        with pytest.raises(CheckpointError, match=rf"{checkpoint.id}.*version 5"):
            await store.load(checkpoint.id)


async def test_a_row_that_is_not_a_json_object_is_refused(durable_backing: Backing) -> None:
    checkpoint = _checkpoint([_message(0)], 0)
    async with durable_backing.open() as store:
        await store.save(checkpoint)
        durable_backing.sql(
            "UPDATE checkpoints SET data = ? WHERE id = ?", ('"not a checkpoint"', checkpoint.id)
        )
        with pytest.raises(CheckpointError, match=rf"{checkpoint.id}"):
            await store.load(checkpoint.id)
