"""The exceptions raf raises.

    AgentError                      a run failed; `path` says where
    ├── WorkflowError               a workflow node failed (executor id, cause)
    ├── MaxRoundsExceeded           a ReAct loop ran out of model calls
    ├── SchemaValidationError       structured output did not match its schema
    ├── HandoffLimitExceeded        too many handoffs in one turn
    ├── QuorumNotReached            too few valid ballots
    ├── BudgetExceeded              a Budget of tokens, rounds or seconds was crossed
    ├── RunTimeout                  RunOptions.timeout elapsed
    ├── ProviderError               the model endpoint failed after retries
    ├── ToolError                   a tool could not be defined or called
    └── SessionBusy                 another run of the session is in progress
    GraphValidationError(ValueError)    a workflow is ill-formed at build time

Example:
    >>> err = MaxRoundsExceeded("no answer after 3 model calls", path=("team", "writer"))
    >>> str(err)
    "no answer after 3 model calls (at 'team/writer')"
"""

from __future__ import annotations

from typing import Any

AgentPath = tuple[str, ...]


def format_path(path: AgentPath) -> str:
    """Render an agent path as `a/b/c`."""
    return "/".join(path)


class AgentError(Exception):
    """A run failed; `path` names the agent where it happened."""

    def __init__(self, message: str, *, path: AgentPath = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path: AgentPath = path

    def with_path(self, path: AgentPath) -> AgentError:
        """Set the path when it is still unknown, and return self."""
        if not self.path:
            self.path = path
        return self

    def __str__(self) -> str:
        if self.path:
            return f"{self.message} (at {format_path(self.path)!r})"
        return self.message


class WorkflowError(AgentError):
    """A workflow node failed; the original exception is `cause` (and `__cause__`)."""

    def __init__(
        self,
        executor_id: str,
        cause: BaseException | None = None,
        *,
        path: AgentPath = (),
        message: str | None = None,
    ) -> None:
        text = message or f"executor {executor_id!r} failed: {type(cause).__name__}: {cause}"
        super().__init__(text, path=path)
        self.executor_id = executor_id
        self.cause = cause


class MaxRoundsExceeded(AgentError):
    """A ReAct loop used all its model calls without a final answer; raise `max_rounds`."""


class SchemaValidationError(AgentError):
    """Output did not validate against its schema."""


class HandoffLimitExceeded(AgentError):
    """A handoff workflow went past its handoff limit in one turn."""


class QuorumNotReached(AgentError):
    """A vote collected fewer valid ballots than its quorum."""


class BudgetExceeded(AgentError):
    """A `Budget` was crossed; `kind` is `tokens`, `rounds` or `seconds`."""

    def __init__(
        self, message: str, *, kind: str, limit: float, used: float, path: AgentPath = ()
    ) -> None:
        super().__init__(message, path=path)
        self.kind = kind
        self.limit = limit
        self.used = used


class RunTimeout(AgentError):
    """`RunOptions.timeout` elapsed before the run finished."""


class ProviderError(AgentError):
    """The model endpoint failed after all retries."""

    def __init__(
        self,
        message: str,
        *,
        model: str,
        status: int | None = None,
        attempts: int = 1,
        path: AgentPath = (),
    ) -> None:
        super().__init__(message, path=path)
        self.model = model
        self.status = status
        self.attempts = attempts


class ToolError(AgentError):
    """A tool could not be defined, or failed in a way the model cannot recover from."""


class SessionBusy(AgentError):
    """Another top-level run of the session is in progress; wait for it, or pass
    `RunOptions(on_busy="wait")` to queue behind it.

    Attributes:
        session_id: the busy session's id.
    """

    def __init__(self, session_id: str, *, path: AgentPath = ()) -> None:
        super().__init__(
            f"session {session_id!r} is busy: another run of it is in progress; wait for that "
            'run to end, or pass RunOptions(on_busy="wait") to queue this one behind it',
            path=path,
        )
        self.session_id = session_id


class GraphValidationError(ValueError):
    """A workflow or builder is ill-formed; raised by `build()`.

    Attributes:
        ids: the offending node or agent ids.
    """

    def __init__(self, message: str, *, ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.ids = ids


def describe(exc: BaseException) -> dict[str, Any]:
    """A JSON-able summary of an exception, for events and checkpoints."""
    info: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, AgentError):
        info["path"] = list(exc.path)
    return info
