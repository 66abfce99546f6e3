"""How a session's state is kept in its store: one record per finished turn, saved fenced.

A record is a checkpoint of the session's whole state (`Session.snapshot()`) filed under the
session's record key, `raf:session:ID`, a namespace no session id can reach (ids starting with
`raf:` are refused), so a record never meets a workflow checkpoint, a thread or another kind of
key. The store cuts its data into content-addressed parts, so a save writes only what the turn
added. Saves are expected-version writes: each names the record it follows, and a store refuses
it (`SessionConflict`, nothing written) when another writer saved the session since, so a stale
holder can never overwrite a newer turn. Loading and saving run their JSON work off the event
loop.

Example:
    >>> record_key("chat-1")
    'raf:session:chat-1'
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from raf.errors import CheckpointError, SessionConflict

if TYPE_CHECKING:
    from raf.stores.base import CheckpointStore

__all__ = [
    "RECORD_KIND",
    "RESERVED_PREFIX",
    "SessionRecord",
    "latest_record",
    "read_latest",
    "record_key",
    "write_record",
]

RESERVED_PREFIX = "raf:"
"""Keys raf files its own records under start with it; no session id may."""

RECORD_KIND = "raf.session"
"""The `workflow_id` of a session record's checkpoint."""


class SessionRecord(BaseModel):
    """What one save of a session keeps as its checkpoint's data."""

    model_config = ConfigDict(frozen=True)

    type: Literal["raf.session"] = "raf.session"
    version: Literal[1] = 1
    """Format version."""
    state: dict[str, Any]
    """`Session.snapshot()` of the session after the turn."""


def record_key(session_id: str) -> str:
    """Where the records of session `session_id` are filed in a store."""
    return RESERVED_PREFIX + "session:" + session_id


async def latest_record(store: CheckpointStore, session_id: str) -> str | None:
    """The id of the newest record of `session_id`, or None."""
    return await store.latest(record_key(session_id))


async def read_latest(store: CheckpointStore, session_id: str) -> tuple[str, dict[str, Any]] | None:
    """The newest record of `session_id` (its id and the state it holds), or None.

    Raises:
        CheckpointError: naming the record, when what is stored there is not a session's.
    """
    record_id = await store.latest(record_key(session_id))
    if record_id is None:
        return None
    checkpoint = await store.load(record_id)
    if checkpoint.workflow_id != RECORD_KIND:
        raise _foreign(record_id, session_id, f"it is a checkpoint of {checkpoint.workflow_id!r}")
    try:
        record = SessionRecord.model_validate(checkpoint.data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "its data"
        raise _foreign(record_id, session_id, f"{where}: {problem['msg']}") from exc
    return record_id, record.state


async def write_record(
    store: CheckpointStore, session_id: str, state: dict[str, Any], follows: str | None
) -> str:
    """Save `state` as the newest record of `session_id`, after the record `follows` (None:
    the session has none yet); the new record's id.

    Raises:
        SessionConflict: another writer saved the session since `follows` (nothing written).
    """
    from raf.stores.base import Checkpoint, FencedSaves
    from raf.stores.ids import new_id

    key = record_key(session_id)
    checkpoint = Checkpoint(
        id=new_id(after=follows),
        session_id=key,
        workflow_id=RECORD_KIND,
        superstep=0,
        created_at=datetime.now(UTC),
        data={"type": RECORD_KIND, "version": 1, "state": state},
    )
    if isinstance(store, FencedSaves):
        await store.save_following(checkpoint, follows)
    else:
        # A store of another library: checked, then written (not atomic, but never blind).
        found = await store.latest(key)
        if found != follows:
            raise SessionConflict(key, follows, found)
        await store.save(checkpoint)
    return checkpoint.id


def _foreign(record_id: str, session_id: str, problem: str) -> CheckpointError:
    return CheckpointError(
        f"the saved state {record_id!r} of session {session_id!r} is not a session's ({problem}); "
        "it was edited, or written by something else under a key raf reserves",
        checkpoint_id=record_id,
    )
