"""`LiveRuns`: runs the studio page started, kept going when the page goes away, re-attachable.

A run of the AG-UI route belongs to its request: when the client leaves, the run is cancelled.
The studio's runs belong to the app instead: each plays in the task group the app's lifespan
holds, its encoded events kept in order, so a page that reloads mid-run re-attaches to it and
reads on from the last event it has. Stopping is explicit (`stop`), and leaving the app
cancels what still runs (each run saves its thread under a shield, as always). Memory is
bounded: at most `limit` runs are kept (the oldest finished one makes room), and each keeps
its newest events up to `keep_bytes` of them.

Example:
    >>> import anyio
    >>> async def main() -> list[bytes]:
    ...     runs = LiveRuns()
    ...     async with runs.serving():
    ...         async def play(send):
    ...             await send(b"data: 1\\n\\n")
    ...         run = runs.start("r1", "t1", play)
    ...         return [chunk async for chunk in runs.follow(run, after=0)]
    >>> anyio.run(main)
    [b'data: 1\\n\\n']
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup

__all__ = ["LiveRun", "LiveRuns", "RunsClosed", "TooManyRuns"]

SendBytes = Callable[[bytes], Awaitable[None]]
Play = Callable[[SendBytes], Awaitable[None]]
"""Plays one run, sending its encoded events."""


class TooManyRuns(RuntimeError):
    """Every kept run is still running: no room for another."""


class RunsClosed(RuntimeError):
    """The app's lifespan is not running (or has ended): no run can start."""


@dataclass(slots=True, eq=False)
class LiveRun:
    """One run the studio started: its events so far, and whether it has ended."""

    id: str
    thread_id: str
    events: list[bytes] = field(default_factory=lambda: [])
    """The newest encoded events; the first is event number `base`."""
    base: int = 0
    size: int = 0
    """Bytes of `events`."""
    done: bool = False
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    changed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def count(self) -> int:
        """How many events the run has sent."""
        return self.base + len(self.events)

    def notify(self) -> None:
        """Wake whoever follows the run."""
        fired, self.changed = self.changed, anyio.Event()
        fired.set()


class LiveRuns:
    """The studio's runs of one app (see the module).

    Args:
        limit: the most runs kept, running or finished.
        keep_bytes: how much of its newest events each run keeps for a page re-attaching.
    """

    def __init__(self, *, limit: int = 32, keep_bytes: int = 4_000_000) -> None:
        self._limit = limit
        self._keep_bytes = keep_bytes
        self._runs: dict[str, LiveRun] = {}
        self._group: TaskGroup | None = None
        self._stopping: anyio.Event | None = None
        self._grace = 0.0

    @property
    def stopping(self) -> anyio.Event | None:
        """Set when the app stops: runs end themselves (with `RUN_ERROR`) within the grace.

        A server waits for its open responses before it ends the app's lifespan: a response
        following a run sets it as soon as the server says it stops, so the run ends and
        its follower gets the run's last event before the connection closes."""
        return self._stopping

    @property
    def grace(self) -> float:
        """Seconds runs get to end themselves once the app stops (see `serving`)."""
        return self._grace

    @asynccontextmanager
    async def serving(self, grace: float = 5.0) -> AsyncGenerator[None]:
        """Hold the task group runs play in; leaving tells the runs still playing to stop and
        cancels them after `grace` seconds."""
        async with anyio.create_task_group() as group:
            self._group, self._stopping, self._grace = group, anyio.Event(), grace
            try:
                yield
            finally:
                self._group = None
                self._stopping.set()
                group.cancel_scope.deadline = anyio.current_time() + grace

    def get(self, run_id: str) -> LiveRun | None:
        """The run `run_id`, while it is kept."""
        return self._runs.get(run_id)

    def of_thread(self, thread_id: str) -> list[LiveRun]:
        """The runs of `thread_id` still running."""
        return [r for r in self._runs.values() if r.thread_id == thread_id and not r.done]

    def start(self, run_id: str, thread_id: str, play: Play, *, stopped: bytes = b"") -> LiveRun:
        """Start `play` as the run `run_id` of `thread_id`; `stopped` is its last event
        when `stop` ends it.

        Raises:
            RunsClosed: when the app's lifespan is not running.
            TooManyRuns: when every kept run is still running.
            ValueError: when a kept run has that id.
        """
        if self._group is None:
            raise RunsClosed("the studio's runs play in the app's lifespan, which is not running")
        if run_id in self._runs:
            raise ValueError(f"run {run_id!r} exists already: give each run a new runId")
        if len(self._runs) >= self._limit:
            finished = next((r for r in self._runs.values() if r.done), None)
            if finished is None:
                raise TooManyRuns(f"{self._limit} runs are in flight: stop one, or wait")
            del self._runs[finished.id]
        run = self._runs[run_id] = LiveRun(run_id, thread_id)
        self._group.start_soon(self._play, run, play, stopped)
        return run

    def stop(self, run: LiveRun) -> None:
        """Cancel the run (it saves its thread as any cancelled run does)."""
        run.scope.cancel()

    async def _play(self, run: LiveRun, play: Play, stopped: bytes) -> None:
        async def send(chunk: bytes) -> None:
            run.events.append(chunk)
            run.size += len(chunk)
            while run.size > self._keep_bytes and len(run.events) > 1:
                run.size -= len(run.events.pop(0))
                run.base += 1
            run.notify()

        try:
            with run.scope:
                await play(send)
            if run.scope.cancelled_caught and stopped:
                await send(stopped)
        finally:
            run.done = True
            run.notify()

    async def follow(self, run: LiveRun, *, after: int) -> AsyncIterator[bytes]:
        """The run's events from number `after` on, as they come, until it ends.

        Raises:
            LookupError: when the run no longer keeps event `after`.
        """
        if after < run.base:
            raise LookupError(f"run {run.id!r} keeps events from number {run.base} on")
        index = after
        while True:
            while index < run.count:
                yield run.events[index - run.base]
                index += 1
            if run.done:
                return
            await run.changed.wait()
