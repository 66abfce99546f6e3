"""What every framework suite provides, and the sizes of the workloads.

A suite builds each workload once and hands back a coroutine function that runs it one time
and reports what happened (`Outcome`), so the worker can time repeated runs and check that
every framework did the same logical work.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Literal, Protocol, TypeVar

CHAIN_LENGTH = 20
"""Agents in the sequential chain of scenario A."""
LONG_CHAIN = 100
"""Agents in the long chain counted beside A (`python -m bench.count L`): a node's cost must
not grow with the conversation it is handed."""
FAN_OUT = 20
"""Agents in the concurrent fan-out of scenario B."""
SESSIONS = 200
"""Concurrent sessions of scenarios C and D."""
SESSION_CHAIN = 5
"""Agents in the sequential chain each session of C and D runs."""
DEPTH = 5
"""Nesting depth of scenario E."""
CHECKPOINT_CHAIN = 10
"""Agents in the checkpointed chain of scenario F."""
TOKEN = "ok"
"""The one text chunk every fake model answers."""
PROMPT = "hi"
"""The user message every run starts from."""
INSTRUCTIONS = "Answer."
"""System instructions of every agent."""


ClockKind = Literal["wall", "cpu"]
"""`wall`: `time.perf_counter`; `cpu`: `time.process_time` (CPU time of the process)."""

_CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
_clock: list[Callable[[], float]] = [time.perf_counter]


def use_clock(kind: ClockKind) -> None:
    """Make `now()` read the `kind` clock (for the whole worker process)."""
    _clock[0] = _CLOCKS[kind]


def now() -> float:
    """The current time on the chosen clock, in seconds.

    Wall time is what a user waits; CPU time leaves out the time the process is descheduled,
    which keeps numbers steady on a machine shared with other work (the workloads run in one
    thread, so the two agree on an idle machine).
    """
    return _clock[0]()


def conversation_size(messages: Sequence[Any], is_system: Callable[[Any], bool]) -> int:
    """How many of a model's input `messages` are not system messages, given that the system
    messages lead (as every suite sends them): counted without a pass over the conversation,
    so the fake model's own check does not grow with it (`python -m bench.count L`)."""
    lead = 0
    while lead < len(messages) and is_system(messages[lead]):
        lead += 1
    return len(messages) - lead


class Unavailable(Exception):
    """The framework cannot run this scenario (not installed, not implemented, not applicable)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run did, checked against the expected logical work.

    Attributes:
        tokens: text chunks equal to `TOKEN` that reached the consumer.
        replies: assistant messages the run produced (in its final response or state).
    """

    tokens: int
    replies: int


Run = Callable[[], Awaitable[Outcome]]
"""Runs a built workload once."""


class PreparedRun:
    """A `Run` that needs untimed set-up before each run (`prepare`), like fresh workflows.

    Args:
        prepare: called before each timed run.
        run: the timed run.
    """

    __slots__ = ("_run", "prepare")

    def __init__(self, prepare: Callable[[], Awaitable[None]], run: Run) -> None:
        self.prepare = prepare
        self._run = run

    def __call__(self) -> Awaitable[Outcome]:
        return self._run()


@dataclass(frozen=True, slots=True)
class Checkpointed:
    """Scenario F's two variants of one chain, and how many checkpoints a run takes."""

    plain: Run
    checkpointed: Run
    checkpoints: Callable[[], Awaitable[int]]
    """Runs the checkpointed variant once more and counts the checkpoints it wrote."""
    close: Callable[[], Awaitable[None]] | None = None
    """Releases the store, if it holds anything open."""


class Model(Protocol):
    """The bookkeeping every zero-latency fake model keeps."""

    largest_input: int
    """Most non-system messages one call was given (checks each agent saw the conversation)."""
    stamp: float
    """`now()` just before the model handed out its last token."""


class Suite(Protocol):
    """One framework's implementation of the scenarios."""

    name: str
    """Short name used on the command line and in the results."""
    modules: tuple[str, ...]
    """What `import` costs are measured on (scenario G)."""
    model: Model
    """The fake model shared by the suite's agents."""

    def version(self) -> str:
        """Installed version(s), for the report."""
        ...

    def details(self) -> dict[str, str]:
        """How the suite maps the scenarios onto the framework (leaf kind, stream mode...)."""
        ...

    async def chain(self, agents: int) -> Run:
        """A sequential chain of `agents`, consumed through the framework's stream."""
        ...

    async def fan_out(self, agents: int) -> Run:
        """`agents` run concurrently on the same input, then aggregated."""
        ...

    async def sessions(self, sessions: int, agents: int) -> Run:
        """`sessions` concurrent runs of a chain of `agents`, in one event loop."""
        ...

    async def nested(self, depth: int) -> Callable[[], Awaitable[float]]:
        """One leaf wrapped `depth` times; a run returns its token's latency in seconds."""
        ...

    async def checkpointed(self, agents: int, directory: str) -> Checkpointed:
        """A chain of `agents` with and without a SQLite checkpoint store under `directory`."""
        ...


E = TypeVar("E")


class PlayedCall(Generic[E]):
    """One fake model call: `async with` gives the events `_play` makes (an async generator),
    and leaving the block closes it. Subclasses set `self._events = None` and write `_play`."""

    __slots__ = ("_events",)

    _events: AsyncGenerator[E] | None

    async def __aenter__(self) -> AsyncGenerator[E]:
        self._events = events = self._play()
        return events

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        events = self._events
        if events is not None:
            await events.aclose()

    def _play(self) -> AsyncGenerator[E]:
        raise NotImplementedError
