"""Fenced saves: a checkpoint saved only over the one its writer read (`FencedSaves`).

A writer reads the newest checkpoint id of its session, runs a turn, and saves the turn's
checkpoint as following that id; each store looks, in the transaction that would write it,
whether that is still the newest, and otherwise refuses with `SessionConflict`, writing
nothing. So a stale writer (one whose session lock went to another worker) never saves over a
newer turn.

Example:
    >>> from datetime import UTC, datetime
    >>> checkpoint = Checkpoint(id="c2", session_id="s", workflow_id="w", superstep=0,
    ...                         created_at=datetime.now(UTC))
    >>> check_follows(checkpoint, "c1")
    >>> refused(checkpoint, "c1", "c3").found
    'c3'
"""

from __future__ import annotations

from raf.errors import SessionConflict
from raf.stores.base import Checkpoint

__all__ = ["check_follows", "refused"]


def check_follows(checkpoint: Checkpoint, follows: str | None) -> None:
    """Refuse a save that follows `follows` but would not sort after it (it would not be the
    session's newest checkpoint once saved).

    Raises:
        ValueError: naming both ids, when `checkpoint.id` does not sort after `follows`.
    """
    if follows is not None and checkpoint.id <= follows:
        raise ValueError(
            f"checkpoint {checkpoint.id!r} would sort before {follows!r}, the checkpoint it "
            f"follows in session {checkpoint.session_id!r}; make its id with "
            f"raf.stores.new_id(after={follows!r})"
        )


def refused(
    checkpoint: Checkpoint, follows: str | None, found: str | None
) -> SessionConflict | None:
    """The error refusing to save `checkpoint` over `follows` when its session's newest
    checkpoint is `found`, or None when the save may go ahead."""
    return None if found == follows else SessionConflict(checkpoint.session_id, follows, found)
