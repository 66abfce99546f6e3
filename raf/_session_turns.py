"""What every top-level run does around its turn on a session: stop when its lock is lost, and
keep the turn once it is finished.

A run holds its session through the session's writer and, with a store, the store's lock
(`raf._single_writer.claim_session`, which also brings the session up to the newest saved
state). While the turn runs, `watched` stops it with `SessionLockLost` should that lock be lost
(a dropped PostgreSQL connection, a failover): another worker may hold the session by then. A
turn that finished (answered, or waiting on a human) records what it waits on and, with a
store, saves the session (`Session.save`, a fenced write that checks the lock first). A failed
or cancelled turn saves nothing: the store keeps the turn before it.

Example:
    >>> import anyio
    >>> from raf.session import Session
    >>> async def main() -> list[str]:
    ...     session = Session()
    ...     await finish_turn(session, "desk", [])
    ...     return session.keys()
    >>> anyio.run(main)
    []
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import anyio

from raf._streaming import single_exceptions
from raf.errors import SessionLockLost

if TYPE_CHECKING:
    from raf.session import Session
    from raf.updates import AgentPath, AgentResponse, RequestInfoUpdate

__all__ = ["finish_turn", "kept_turn", "watched"]

R = TypeVar("R")
V = TypeVar("V")


async def kept_turn(
    session: Session, root: str, work: Callable[[], Awaitable[AgentResponse[V]]]
) -> AgentResponse[V]:
    """One top-level turn of the agent `root` on `session`: `work()`, `watched` for a lost
    lock, then `finish_turn` with what the response waits on."""
    response = await watched(session, work, (root,))
    await finish_turn(session, root, response.pending if response.status == "waiting" else ())
    return response


async def finish_turn(session: Session, root: str, requests: Sequence[RequestInfoUpdate]) -> None:
    """Keep a finished turn of the run rooted at `root`: the `requests` it waits on (none
    when it answered), then, with a store, the session's state.

    Raises:
        SessionLockLost: the run's lock was lost (nothing written).
        SessionConflict: another process saved the session meanwhile (nothing written).
    """
    session.keep_requests(root, requests)
    if session.store is not None and session.save_turns:
        await session.save()


async def watched(session: Session, work: Callable[[], Awaitable[R]], path: AgentPath) -> R:
    """`await work()`, stopped with `SessionLockLost` (at `path`) should the store's lock on
    `session` be lost meanwhile."""
    held = session.held
    wait_lost = None if held is None else getattr(held, "wait_lost", None)
    if wait_lost is None or not getattr(held, "can_be_lost", True):
        return await work()
    lost = False
    result: R | None = None
    try:
        with single_exceptions():
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    nonlocal lost
                    await wait_lost()
                    lost = True
                    tg.cancel_scope.cancel()

                tg.start_soon(watch)
                result = await work()
                tg.cancel_scope.cancel()
    except Exception as exc:
        if lost:  # the work failed as it was stopped: the lost lock is what happened
            raise await _lost(session, path) from exc
        raise
    if lost:
        raise await _lost(session, path)
    return result  # pyright: ignore[reportReturnType]


async def _lost(session: Session, path: AgentPath) -> SessionLockLost:
    """The `SessionLockLost` of `session`'s lost lock, saying how the store lost it."""
    held = session.held
    check = None if held is None else getattr(held, "check", None)
    try:
        if check is not None:
            await check()
    except SessionLockLost as exc:
        exc.path = path
        return exc
    return SessionLockLost(session.id, "the store let it go", path=path)
