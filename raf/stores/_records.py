"""How every store turns checkpoints, events and content into stored values and back.

Shared by the memory, SQLite and PostgreSQL stores so all three behave alike: checkpoints are
kept as their exact pydantic JSON, versions are checked both ways, event times are UTC.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pydantic_core
from pydantic import ValidationError

from raf.errors import CheckpointError, CheckpointVersionError
from raf.stores._parts import DamagedParts, Fetch, KnownParts, join, split
from raf.stores.base import SUPPORTED_CHECKPOINT_VERSIONS, Checkpoint, StoredEvent

SCHEMA_VERSION = 2
"""Version of the table layout (2: checkpoint data cut into content-addressed parts); a
database of layout 1 is migrated when opened, one written by a newer layout is refused."""
MIGRATED_FROM = frozenset({1})
"""Layouts a store migrates to `SCHEMA_VERSION` when it opens them."""


def split_checkpoint(
    checkpoint: Checkpoint, known: KnownParts | None = None
) -> tuple[str, dict[str, bytes]]:
    """The JSON text stored for `checkpoint` (its data's root) and its data's parts (but
    for long strings whose parts `known` says the store holds), after checking its version
    and names."""
    check_version(checkpoint.id, checkpoint.version)
    _check_text(
        "checkpoint",
        id=checkpoint.id,
        session_id=checkpoint.session_id,
        workflow_id=checkpoint.workflow_id,
    )
    parts = split(checkpoint.data, known)
    # The row's columns hold the rest of the checkpoint. ASCII: the root is small, and
    # escaping keeps any lone surrogate storable everywhere.
    head: dict[str, Any] = {"version": checkpoint.version, "data": parts.root}
    moment = checkpoint.created_at
    if moment.tzinfo is None or moment.utcoffset() != timedelta(0):
        # Naive, or with an offset: kept as given, so it loads back exactly (the column is UTC).
        head["created_at"] = checkpoint.model_dump(mode="json", include={"created_at"})[
            "created_at"
        ]
    return json.dumps(head, separators=(",", ":")), parts.objects


def join_checkpoint(row: Sequence[Any], fetch: Fetch) -> Checkpoint:
    """The checkpoint stored as `row` (its columns in `CHECKPOINT_COLUMNS` order, the last
    the text `split_checkpoint` wrote), its parts read with `fetch`.

    Blocking, and CPU-bound for a long conversation: stores call it in a worker thread, as
    they call `checkpoint_row`, so the event loop only awaits it.

    Raises:
        CheckpointVersionError: for a version this raf does not know.
        CheckpointError: naming the checkpoint, when its stored text or parts are not a
            checkpoint's (truncated, edited, or parts missing).
    """
    checkpoint_id, session_id, workflow_id, superstep, created_at, version, text = row
    check_version(checkpoint_id, version)
    try:
        head: Any = json.loads(text)
    except ValueError as exc:
        raise _damaged(checkpoint_id, f"its text is not JSON ({exc})") from exc
    if not isinstance(head, dict):
        raise _damaged(checkpoint_id, "its text is not a JSON object")
    fields = cast(dict[str, Any], head)
    if fields.get("version", version) != version:
        raise _damaged(
            checkpoint_id,
            f"its JSON says version {fields.get('version')!r} but it was stored as version "
            f"{version}",
        )
    try:
        data = join(fields.get("data", {}), fetch)
    except DamagedParts as exc:
        raise _damaged(checkpoint_id, f"its data cannot be put together: {exc}") from exc
    moment = fields.get("created_at", created_at)
    try:
        return Checkpoint.model_validate(
            {
                "version": version,
                "id": checkpoint_id,
                "session_id": session_id,
                "workflow_id": workflow_id,
                "superstep": superstep,
                "created_at": moment,
                "data": data,
            }
        )
    except ValidationError as exc:
        raise _damaged(checkpoint_id, first_problem(exc, "the text")) from exc


def first_problem(exc: ValidationError, whole: str) -> str:
    """`where: what` of the first error of `exc` (`whole` when it is about the whole value)."""
    problem = exc.errors()[0]
    where = ".".join(str(part) for part in problem["loc"]) or whole
    return f"{where}: {problem['msg']}"


def _damaged(checkpoint_id: str, problem: str) -> CheckpointError:
    return CheckpointError(
        f"checkpoint {checkpoint_id!r} cannot be read: {problem}; it was truncated or edited "
        "after raf wrote it",
        checkpoint_id=checkpoint_id,
    )


def migrated_checkpoint(checkpoint_id: str, text: str) -> tuple[str, dict[str, bytes]]:
    """A checkpoint row of layout 1 (the whole checkpoint's JSON) as `split_checkpoint` writes it.

    Raises:
        CheckpointError: naming the checkpoint, when its text is not a checkpoint.
    """
    return split_checkpoint(_parsed(checkpoint_id, text))


def check_event(event: StoredEvent) -> None:
    """Refuse an event whose text columns no backend could store alike."""
    _check_text(
        "event",
        id=event.id,
        kind=event.kind,
        key=event.key,
        hash=event.hash or "",
        code_rev=event.code_rev or "",
    )


def _check_text(what: str, **fields: str) -> None:
    # PostgreSQL text cannot hold NUL; refusing it everywhere keeps the stores interchangeable.
    # (JSON data may hold NUL: it is stored escaped.)
    for name, value in fields.items():
        if "\x00" in value:
            raise ValueError(
                f"{what} {name} {value!r} contains a NUL character; use another {name}"
            )


def _parsed(checkpoint_id: str, data: str) -> Checkpoint:
    try:
        return Checkpoint.model_validate_json(data)
    except ValidationError as exc:
        raise _damaged(checkpoint_id, first_problem(exc, "the text")) from exc


def check_version(checkpoint_id: str, version: int) -> None:
    """Raise `CheckpointVersionError` unless `version` is one this raf knows."""
    if version not in SUPPORTED_CHECKPOINT_VERSIONS:
        raise CheckpointVersionError(checkpoint_id, version, tuple(SUPPORTED_CHECKPOINT_VERSIONS))


def as_utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def format_time(moment: datetime) -> str:
    """Fixed-width ISO 8601 text in UTC, so stored times also sort as text."""
    return as_utc(moment).isoformat(timespec="microseconds")


def parse_time(text: str) -> datetime:
    """The UTC datetime written by `format_time`."""
    return as_utc(datetime.fromisoformat(text))


def event_json(event: StoredEvent) -> str:
    """JSON text of `event` with its time in UTC, as the memory store keeps it."""
    check_event(event)
    return event.model_copy(update={"occurred_at": as_utc(event.occurred_at)}).model_dump_json()


CHECKPOINT_COLUMNS = "id, session_id, workflow_id, superstep, created_at, version, data"
"""The `checkpoints` table's columns, in the order of `checkpoint_row` and `join_checkpoint`."""


def checkpoint_row(
    checkpoint: Checkpoint, created_at: object, known: KnownParts | None = None
) -> tuple[tuple[object, ...], dict[str, bytes]]:
    """The `checkpoints` row of `checkpoint`, its time as the backend stores it, and the
    parts its data refers to (to store in the same transaction, before the row)."""
    text, parts = split_checkpoint(checkpoint, known)
    row = (
        checkpoint.id,
        checkpoint.session_id,
        checkpoint.workflow_id,
        checkpoint.superstep,
        created_at,
        checkpoint.version,
        text,
    )
    return row, parts


def event_row(event: StoredEvent, occurred_at: object) -> tuple[object, ...]:
    """The `events` row of `event` (checked first), its time as the backend stores it."""
    check_event(event)
    return (
        event.id,
        occurred_at,
        event.kind,
        event.key,
        event.hash,
        encode_meta(event.meta),
        event.code_rev,
    )


def encode_meta(meta: dict[str, Any]) -> str:
    """JSON text of an event's `meta` (pydantic serialization, so models and dates work)."""
    return pydantic_core.to_json(meta).decode()


def decode_event(
    event_id: str,
    occurred_at: datetime | str,
    kind: str,
    key: str,
    digest: str | None,
    meta: str,
    code_rev: str | None,
) -> StoredEvent:
    """An event from its stored columns (its time as a datetime, or as `format_time` text).

    Raises:
        CheckpointError: naming the event, when a column is not what raf wrote (meta that is
            not a JSON object, a time that is not one).
    """
    try:
        moment = parse_time(occurred_at) if isinstance(occurred_at, str) else occurred_at
    except ValueError as exc:
        raise damaged_event(event_id, f"its time {occurred_at!r} is not a timestamp") from exc
    try:
        fields: Any = json.loads(meta)
    except ValueError as exc:
        raise damaged_event(event_id, f"its meta is not JSON ({exc})") from exc
    if not isinstance(fields, dict):
        raise damaged_event(event_id, f"its meta is {type(fields).__name__}, not a JSON object")
    try:
        return StoredEvent(
            id=event_id,
            occurred_at=as_utc(moment),
            kind=kind,
            key=key,
            hash=digest,
            meta=cast(dict[str, Any], fields),
            code_rev=code_rev,
        )
    except ValidationError as exc:
        raise damaged_event(event_id, first_problem(exc, "the row")) from exc


def damaged_event(event_id: str, problem: str) -> CheckpointError:
    """The error for a logged event (or its content) that is not what raf wrote."""
    return CheckpointError(
        f"event {event_id!r} cannot be read: {problem}; it was edited or damaged after raf "
        "wrote it",
        event_id=event_id,
    )


def check_follows(event: StoredEvent, follows: str | None) -> None:
    """Refuse an append that follows `follows` but would not sort after it.

    Raises:
        ValueError: naming both ids, when `event.id` does not sort after `follows`.
    """
    if follows is not None and event.id <= follows:
        raise ValueError(
            f"event {event.id!r} would sort before {follows!r}, the event it follows on key "
            f"{event.key!r}; make its id with raf.stores.new_id(after={follows!r})"
        )


def content_digest(content: bytes) -> str:
    """The sha256 hex digest content is filed under."""
    return hashlib.sha256(content).hexdigest()


def check_content(event: StoredEvent, content: bytes | None) -> bytes | None:
    """`content` as bytes, after checking `event.hash` is its digest.

    Raises:
        ValueError: when the event's hash is not the content's sha256.
    """
    if content is None:
        return None
    data = bytes(content)
    digest = content_digest(data)
    if event.hash != digest:
        raise ValueError(
            f"event {event.id!r} has hash {event.hash!r}, but its content's sha256 is "
            f"{digest!r}; set hash=raf.stores.content_digest(content)"
        )
    return data


def unknown_checkpoint(checkpoint_id: str) -> KeyError:
    """The error for loading a checkpoint id the store does not have."""
    return KeyError(f"no checkpoint {checkpoint_id!r} in this store")


def unknown_content(digest: str) -> KeyError:
    """The error for reading content the store does not have."""
    return KeyError(f"no content with sha256 {digest!r} in this store")


def duplicate_event(event_id: str) -> ValueError:
    """The error for appending an event id that is already in the log."""
    return ValueError(
        f"event {event_id!r} is already in the log; the log is append-only, give each event a "
        "new id (raf.stores.new_id())"
    )


def schema_mismatch(found: str, where: str) -> RuntimeError:
    """The error for a database whose table layout this raf does not know."""
    return RuntimeError(
        f"{where} has store schema version {found}, but this raf uses version "
        f"{SCHEMA_VERSION} (and migrates {sorted(MIGRATED_FROM)}); open it with the raf "
        "release that wrote it"
    )


def migrates(found: str) -> bool:
    """Whether a database of layout `found` is migrated on open (else, unless it is this
    layout, `schema_mismatch` refuses it)."""
    return found in {str(version) for version in MIGRATED_FROM}
