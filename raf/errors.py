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
    ├── SessionBusy                 another run of the session is in progress
    ├── SessionLockLost             a run's session lock was lost (say, its connection dropped)
    ├── SessionConflict             a fenced save lost the race: the session moved on
    ├── UnknownRequest              a tool result answers no pending request
    ├── UnansweredCalls             a turn answers some of an agent's client tool calls, not all
    ├── AppendConflict              an append lost the race: its key moved on (nothing written)
    ├── RoleStepFailed              a tick runner's step of one topic failed (topic, role)
    ├── DurableRunError             a durable run cannot run here, or failed in its workflow
    └── CheckpointError(ValueError) a checkpoint or event cannot be read (truncated, edited, foreign)
        └── CheckpointVersionError  a checkpoint of a format version this raf does not know
    GraphValidationError(ValueError)    a workflow is ill-formed at build time
    CheckpointValueError(TypeError)     a value a run must checkpoint has no JSON form (the
                                        failing node's run raises WorkflowError with it)
    ScriptExhausted(AssertionError)     a scripted model was called more often than scripted

Example:
    >>> err = MaxRoundsExceeded("no answer after 3 model calls", path=("team", "writer"))
    >>> str(err)
    "no answer after 3 model calls (at 'team/writer')"
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

AgentPath = tuple[str, ...]
"""Agent ids from the agent `run()` was called on down to one agent."""


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


class SessionLockLost(AgentError):
    """A run's lock on its session was lost (its PostgreSQL connection dropped, its lock file
    was replaced): the run stopped before writing, since another worker may hold the session
    now. Run the turn again.

    Attributes:
        session_id: the session whose lock was lost.
        reason: how it was lost.

    Example:
        >>> str(SessionLockLost("chat-1", "its PostgreSQL connection dropped"))
        "the lock of session 'chat-1' was lost (its PostgreSQL connection dropped): this run stopped before writing; another worker may hold the session now; run the turn again"
    """

    def __init__(self, session_id: str, reason: str, *, path: AgentPath = ()) -> None:
        super().__init__(
            f"the lock of session {session_id!r} was lost ({reason}): this run stopped before "
            "writing; another worker may hold the session now; run the turn again",
            path=path,
        )
        self.session_id = session_id
        self.reason = reason


class SessionConflict(AgentError):
    """A fenced save (`FencedSaves.save_following`) found that another writer saved the
    session since this one read it; nothing was written. Load the session again and run the
    turn again.

    Attributes:
        key: the session id saved under.
        expected: the newest checkpoint id the save said it follows (None: the session had none).
        found: the session's newest checkpoint id when the save was refused.
    """

    def __init__(self, key: str, expected: str | None, found: str | None) -> None:
        super().__init__(
            f"a save to session {key!r} expected its newest checkpoint to be {expected!r}, but "
            f"another writer saved {found!r} since; nothing was written; load the session "
            "again and run the turn again"
        )
        self.key = key
        self.expected = expected
        self.found = found


class UnknownRequest(AgentError):
    """A tool message answers a request (or tool call) that is not pending; nothing was run
    or stored.

    Attributes:
        request_id: the id the answer names.
        pending: the ids of the requests that are pending, oldest first.
    """

    def __init__(self, request_id: str, pending: list[str], *, path: AgentPath = ()) -> None:
        what = f"the pending requests are {pending}" if pending else "no request is pending"
        super().__init__(
            f"the tool result for {request_id!r} answers no pending request or tool call of "
            f"the conversation ({what}); answer one of those by its id, or send a plain "
            "message",
            path=path,
        )
        self.request_id = request_id
        self.pending = pending


class UnansweredCalls(AgentError):
    """A turn answers some of the client tool calls (`RunOptions.client_tools`) an agent
    waits on, not all; nothing ran, and the agent still waits on every one.

    Attributes:
        request_ids: the requests of the calls left open, in call order.

    Example:
        >>> str(UnansweredCalls(["guide/call_2"], path=("guide",)))
        "agent 'guide' waits on the client tool calls ['guide/call_2']: answer each with a tool message whose call_id is its id (at 'guide')"
    """

    def __init__(self, request_ids: list[str], *, path: AgentPath) -> None:
        super().__init__(_unanswered(request_ids, path, "call_id"), path=path)
        self.request_ids = request_ids

    def naming(self, ids: Sequence[str], field: str) -> str:
        """The error as told to a client that knows the open calls by `ids` (in the order of
        `request_ids`) and names one in an answer's `field` (AG-UI: `toolCallId`)."""
        return str(AgentError(_unanswered(ids, self.path, field), path=self.path))


def _unanswered(ids: Sequence[str], path: AgentPath, field: str) -> str:
    return (
        f"agent {format_path(path)!r} waits on the client tool calls {list(ids)}: answer each "
        f"with a tool message whose {field} is its id"
    )


class DurableRunError(AgentError):
    """A durable run (`raf.durable`) cannot run here (not on asyncio), or failed inside its
    workflow (the message names the run id and the original error)."""


class AppendConflict(AgentError):
    """An append named the event it follows, but another writer appended to the key first;
    nothing was written. Read the key again and decide anew.

    Attributes:
        key: the event's key (a topic id).
        expected: the id the append said it follows (None: the key was empty).
        found: the key's last event id when the append was refused.
    """

    def __init__(self, key: str, expected: str | None, found: str | None) -> None:
        super().__init__(
            f"append to key {key!r} expected it to end at event {expected!r}, but another "
            f"writer appended first (it ends at {found!r}); nothing was written; read the key "
            "again and decide anew"
        )
        self.key = key
        self.expected = expected
        self.found = found


class RoleStepFailed(AgentError):
    """A role workflow's step on one topic failed in a tick; the other topics went on.

    Attributes:
        topic_id: the thread's topic.
        role: the role that failed (`__moderator__` for the moderator, `__log__` when the
            thread could not be read).
        attempts: how many ticks in a row this step failed.
        final: True when the tick runner stopped retrying it.
    """

    def __init__(
        self, message: str, *, topic_id: str, role: str, attempts: int, final: bool
    ) -> None:
        super().__init__(message)
        self.topic_id = topic_id
        self.role = role
        self.attempts = attempts
        self.final = final


class CheckpointError(AgentError, ValueError):
    """A checkpoint or a logged event cannot be read or written: `checkpoint_id` (or
    `event_id`) names it, when it has one.

    Raised for a truncated, edited or foreign checkpoint or event row instead of whatever
    decoding it happened to hit; its message says what is wrong and what to do.
    """

    def __init__(
        self,
        message: str,
        *,
        checkpoint_id: str | None = None,
        event_id: str | None = None,
        path: AgentPath = (),
    ) -> None:
        super().__init__(message, path=path)
        self.checkpoint_id = checkpoint_id
        self.event_id = event_id


class CheckpointVersionError(CheckpointError):
    """A checkpoint has a format `version` this raf does not know; it is refused, never
    guessed at."""

    def __init__(self, checkpoint_id: str, version: int, known: tuple[int, ...]) -> None:
        listed = ", ".join(str(v) for v in sorted(known))
        super().__init__(
            f"checkpoint {checkpoint_id!r} has format version {version}, but this raf knows "
            f"only version(s) {listed}; resume it with the raf release that wrote it",
            checkpoint_id=checkpoint_id,
        )
        self.version = version


class CheckpointValueError(TypeError):
    """A value a run must checkpoint is not serializable; `node_id` names the node it
    belongs to."""

    def __init__(self, message: str, *, node_id: str | None = None) -> None:
        super().__init__(message)
        self.node_id = node_id


class GraphValidationError(ValueError):
    """A workflow or builder is ill-formed; raised by `build()`.

    Attributes:
        ids: the offending node or agent ids.
    """

    def __init__(self, message: str, *, ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.ids = ids


class ScriptExhausted(AssertionError):
    """A scripted model (`raf.testing`) was called more often than its script has turns."""


def describe(exc: BaseException) -> dict[str, Any]:
    """A JSON-able summary of an exception, for events and checkpoints."""
    info: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, AgentError):
        info["path"] = list(exc.path)
    return info
