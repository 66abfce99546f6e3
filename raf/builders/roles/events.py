"""The data of a role workflow: `RoleEvent`, the `END` of a thread, and the moderator's shape.

Example:
    >>> from datetime import UTC, datetime
    >>> event = RoleEvent(id="01J", occurred_at=datetime.now(UTC), kind="review.critic", key="t1")
    >>> event.role, END
    ('critic', END)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, final

from raf.stores.base import StoredEvent

__all__ = ["END", "START_ROLE", "End", "Moderator", "RoleEvent"]

START_ROLE = "__start__"
"""The role name of the event that opens a thread: kind `{workflow}.__start__`."""


@final
class End:
    """The type of `END`: what a moderator returns when a thread is done."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "END"

    def __reduce__(self) -> str:
        return "END"


END: Final = End()
"""Returned by a moderator when the thread is done."""


class RoleEvent(StoredEvent):
    """One step of a role workflow's thread, as the event log keeps it.

    `kind` is `{workflow}.{role}`, `key` the topic id, `hash` the sha256 of its content (the
    role's whole output as JSON; the input messages for the `__start__` event), `meta` the
    small signals the role left for the moderator (its scalar fields by default, or the
    `RoleResult.meta` it chose; empty for `__start__`).
    """

    @property
    def role(self) -> str:
        """The role that wrote it (`__start__` for the thread's opening event)."""
        return self.kind.rsplit(".", 1)[-1]


Moderator = Callable[[list[RoleEvent], str], "str | End | Awaitable[str | End]"]
"""`fn(chain, topic_id) -> role | END` (sync or async): which role acts next on the thread."""
