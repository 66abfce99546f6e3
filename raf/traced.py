"""What a traced run asks of its telemetry, and where a run finds that telemetry when it starts.

The core hands a run's telemetry down in its `Turn` and awaits an agent's work inside it;
`raf.tracing` implements it (`raf.tracing.telemetry.Telemetry`, on OpenTelemetry) and
installs the function that decides, at each run's start, whether the run is traced. The
core imports nothing of `raf.tracing`: the layers point one way (DESIGN §1).

Example:
    >>> from raf.run import Turn
    >>> Turn().telemetry is None
    True
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from raf._tool_data import ToolResult
    from raf.agent import IAgent
    from raf.messages import ChatMessage, ToolCallContent
    from raf.session import Session
    from raf.updates import AgentPath, AgentResponse, Usage

__all__ = [
    "ModelNamed",
    "RunTelemetry",
    "Stepping",
    "install_telemetry",
    "telemetry_at_start",
]

R = TypeVar("R")
Answer = TypeVar("Answer")
"""What a model call gives: the `Completion`, or the text a pattern's own call reads."""
Status_ = TypeVar("Status_", bound=str)
"""How a workflow run ended (`completed`, `failed` or `waiting`)."""


class Stepping(Protocol):
    """A workflow run as a superstep's span sees it (the engine's `Runner`)."""

    @property
    def scope(self) -> tuple[str, ...]:
        """The workflow's agent path in the run."""
        ...

    @property
    def failure(self) -> tuple[str, BaseException] | None:
        """The node that failed and its error, once one did."""
        ...


class ModelNamed(Protocol):
    """A model provider as a `chat` span names it (any `LlmProvider`)."""

    @property
    def model(self) -> str:
        """The model name."""
        ...


class RunTelemetry(Protocol):
    """The spans and metrics of one traced run: each hook awaits the work it is handed inside
    its span (so nested work nests) and gives back what the work gave."""

    async def run(
        self,
        agent: IAgent,
        path: AgentPath,
        session: Session,
        messages: Sequence[ChatMessage],
        work: Awaitable[AgentResponse[Any]],
    ) -> AgentResponse[Any]:
        """Await `work`, the run of the root `agent`."""
        ...

    def agent(
        self,
        agent: IAgent,
        path: AgentPath,
        session: Session,
        messages: Sequence[ChatMessage],
        work: Awaitable[AgentResponse[Any]],
    ) -> Awaitable[AgentResponse[Any]]:
        """Await `work`, the run of the nested `agent` at `path`."""
        ...

    async def workflow(
        self, workflow_id: str, session: Session, *, resumed: bool, work: Awaitable[Status_]
    ) -> Status_:
        """Await `work`, a workflow run directly (not as an agent)."""
        ...

    async def superstep(
        self,
        run: Stepping,
        workflow_id: str,
        index: int,
        nodes: Sequence[str],
        work: Awaitable[R],
        *,
        resumed: bool = False,
    ) -> R:
        """Await `work`, superstep `index` of a workflow run."""
        ...

    async def chat(
        self,
        provider: ModelNamed,
        path: AgentPath | None,
        session: Session | None,
        messages: Sequence[ChatMessage],
        work: Awaitable[tuple[Answer, Usage]],
    ) -> tuple[Answer, Usage]:
        """Await `work`, one model call (`path` and `session` are None for a call made outside
        an agent's loop)."""
        ...

    async def tool(
        self, call: ToolCallContent, path: AgentPath, work: Awaitable[ToolResult]
    ) -> ToolResult:
        """Await `work`, one tool call."""
        ...

    def asked(self, session: Session, request_id: str, node_id: str, scope: AgentPath) -> None:
        """A node asked a human `request_id`."""
        ...

    def answered(self, session: Session, request_id: str, node_id: str, scope: AgentPath) -> None:
        """The answer to `request_id` reached its node."""
        ...


TelemetrySource = Callable[[], "RunTelemetry | None"]
"""Decides, when a run starts, whether it is traced: its telemetry, or None."""


class _Source:
    """The one place the core asks whether a run is traced.

    Why a registration point and not an argument: whether a run is traced is ambient
    OpenTelemetry configuration (the providers an application set, `raf.tracing.instrument`'s
    context), not something a caller of `agent.run()` passes; the function that reads it
    lives above the core, which may not import it. So `raf` installs `raf.tracing`'s decision
    here once, when the package is imported (`raf/__init__.py`), before any run can start.
    It holds that function only: what varies per run (the settings, the run's telemetry)
    stays in context variables and in the run's `Turn`.
    """

    __slots__ = ("source",)

    def __init__(self) -> None:
        self.source: TelemetrySource | None = None


_SOURCE = _Source()


def install_telemetry(source: TelemetrySource) -> None:
    """Make `source` decide, at each run's start, the run's telemetry (it replaces the one
    installed before; `raf` installs `raf.tracing.active` when it is imported).

    Example:
        >>> from raf.tracing import active
        >>> install_telemetry(active)  # what `import raf` did already
    """
    _SOURCE.source = source


def telemetry_at_start() -> RunTelemetry | None:
    """The telemetry of a run starting now, or None when it is not traced (called once per
    run, by the root of an agent tree or a workflow run directly).

    Example:
        >>> from raf.tracing import instrument
        >>> with instrument(enabled=False):
        ...     telemetry_at_start() is None
        True
    """
    source = _SOURCE.source
    return None if source is None else source()
