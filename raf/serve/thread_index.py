"""`ThreadIndex`: the threads a store's log lists, newest first, a page at a time.

Every thread's first save writes one event of kind `raf.serve.thread` (see `Threads`). The
index follows the log with `EventLog.changes`: it keeps the position it has read up to, and
each listing reads only what was appended since (the columns that say whose an event is, a
batch at a time), so listing threads never reads the log's events themselves, and an idle log
costs one empty query. What it keeps is the threads' ids in the order they were created (the
log's write order, the same for every process sharing the store), so a page's cursor means
the same thing to every worker.

Example:
    >>> import anyio
    >>> from raf.serve.threads import Threads
    >>> from raf.stores import MemoryCheckpointStore
    >>> async def main() -> tuple[list[str], int | None]:
    ...     store = MemoryCheckpointStore()
    ...     for name in ("a", "b", "c"):
    ...         async with Threads(store).hold(name) as thread:
    ...             await Threads(store).save(thread)
    ...     page = await ThreadIndex(store).page(limit=2)
    ...     return page.ids, page.before
    >>> anyio.run(main)
    (['c', 'b'], 1)
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio

from raf.serve.threads import THREAD_EVENT, ThreadStore, thread_of

__all__ = ["ThreadIndex", "ThreadPage"]


@dataclass(frozen=True, slots=True)
class ThreadPage:
    """One page of threads, newest first."""

    ids: list[str]
    """The threads' ids."""
    before: int | None
    """The cursor of the next (older) page, or None when this page holds the oldest thread."""


class ThreadIndex:
    """The threads of `store`, in the order they were created (see the module).

    Args:
        store: the threads' store.
        batch: how many log entries one read takes.
    """

    def __init__(self, store: ThreadStore, *, batch: int = 10_000) -> None:
        self._store = store
        self._batch = batch
        self._after = 0
        self._created: list[str] = []
        self._known: set[str] = set()
        self._lock = anyio.Lock()

    async def page(self, *, limit: int, before: int | None = None) -> ThreadPage:
        """The newest `limit` threads created before the cursor `before` (a count of threads,
        from the log's start; None: up to the newest).

        Raises:
            ValueError: when `limit` is not positive or `before` is negative.
        """
        if limit <= 0 or (before is not None and before < 0):
            raise ValueError(f"limit must be positive and before not negative: {limit}, {before}")
        await self._catch_up()
        end = len(self._created) if before is None else min(before, len(self._created))
        start = max(end - limit, 0)
        return ThreadPage(self._created[start:end][::-1], start if start > 0 else None)

    async def _catch_up(self) -> None:
        """Read what the log took in since the last read."""
        async with self._lock:
            while True:
                changes = await self._store.changes(self._after, limit=self._batch)
                for change in changes:
                    thread_id = thread_of(change.key) if change.kind == THREAD_EVENT else None
                    # An earlier raf logged every save: a thread is listed once.
                    if thread_id is not None and thread_id not in self._known:
                        self._known.add(thread_id)
                        self._created.append(thread_id)
                if changes:
                    self._after = changes[-1].position
                if len(changes) < self._batch:
                    return
