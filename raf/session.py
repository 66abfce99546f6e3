"""`Session`: one conversation's state, keyed by agent path, serializable to JSON.

Read what a run kept by agent: `session.history(agent)` (or a path, `"team"`), the pattern
state of a node (`session.state("desk/router")`), which agents kept anything
(`session.paths()`), and what a waiting run asked (`session.pending_requests()`).

A session with a store is the durable conversation: its first run in a process (or
`await session.load()`; `await Session.open(id, store)` does both) reads the newest state
saved under its id, and every finished turn saves it, so the same id continues the
conversation in any process (`raf._session_records` says how it is kept).

Example:
    >>> s = Session(id="chat-1")
    >>> s.set("team/writer#turns", 2)
    >>> Session.from_json(s.to_json()).get("team/writer#turns")
    2
    >>> s.paths(), s.history("team")
    (['team/writer'], [])
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import pydantic_core
from pydantic import TypeAdapter

from raf._session_records import RESERVED_PREFIX, latest_record, read_latest, write_record
from raf._single_writer import SessionWriter
from raf.messages import ChatMessage, message_list_adapter
from raf.pending import REQUESTS, PendingRequest
from raf.updates import RequestInfoUpdate

if TYPE_CHECKING:
    from raf.stores.base import CheckpointStore, SessionLock

T = TypeVar("T")

SESSION_FORMAT_VERSION = 1

MAX_ID_CHARS = 512
"""The longest session id (every store indexes ids; PostgreSQL's index entries are bounded)."""

_requests_adapter: TypeAdapter[list[RequestInfoUpdate]] = TypeAdapter(list[RequestInfoUpdate])


class Identified(Protocol):
    """Anything with an agent `id`, as every `IAgent` has."""

    @property
    def id(self) -> str:
        """The agent id."""
        ...


AgentRef = str | Sequence[str] | Identified
"""An agent in a session: an agent (found by its id), a path `"team/writer"`, or a path
tuple `("team", "writer")` as stream items carry."""


class _Raw:
    """A value read from JSON, validated into its type on first typed access."""

    __slots__ = ("data",)

    def __init__(self, data: Any) -> None:
        self.data = data


class Session:
    """One conversation: history, pending requests and pattern state of every agent in a tree.

    State lives in the session, never in agent instances, so one built workflow serves many
    sessions at once. Keys are agent paths joined by `/`, then `#` and a name.

    With a store, the session is the durable conversation of its id: the first run in a
    process (or `load()`) reads the newest state saved under the id, every finished turn
    saves it (fenced: a stale holder never overwrites a newer turn), and the same id in any
    process continues it.

    Args:
        id: a stable id (a random one when omitted); its state and checkpoints are filed under
            it. At most 512 characters, no NUL, not starting with `raf:` (raf's own keys).
        store: a `CheckpointStore` that keeps the session's state and its runs' checkpoints.

    Example:
        >>> async def answer(store: CheckpointStore, agent) -> None:
        ...     session = await Session.open("chat-1", store)  # in any process
        ...     for request in session.pending_requests():
        ...         print(request.question)
        ...     await agent.run("yes", session=session)  # answers the oldest
    """

    __slots__ = ("_loaded", "_record", "_state", "held", "id", "save_turns", "store", "writer")

    def __init__(self, id: str | None = None, store: CheckpointStore | None = None) -> None:
        self.id: str = checked_id(id) if id else uuid.uuid4().hex
        self.store: CheckpointStore | None = _checked_store(store)
        self._state: dict[str, Any] = {}
        self._record: str | None = None
        self._loaded = False
        self.writer = SessionWriter()
        """Admits one top-level run at a time (`SessionBusy`, or a queue with `on_busy="wait"`)."""
        self.held: SessionLock | None = None
        """The store's lock on the session while a run holds it (None between runs)."""
        self.save_turns = True
        """Whether a finished turn saves the session (with a store); False when whoever
        holds it saves it once its own bookkeeping is written (the HTTP and ACP fronts)."""

    @classmethod
    async def open(cls, id: str, store: CheckpointStore) -> Session:
        """The session `id` of `store` as last saved (new and empty when never saved).

        Raises:
            CheckpointError: when what is saved under the id is not a session's.
        """
        session = cls(id, store)
        await session.load()
        return session

    @property
    def saved(self) -> str | None:
        """The id of the store's record this state was loaded from or last saved as (None
        before the first)."""
        return self._record

    async def load(self) -> None:
        """Replace the state with the newest one saved under the session's id (when there is
        one; a session never saved keeps what it holds).

        Raises:
            TypeError: when the session has no store.
            CheckpointError: when what is saved under the id is not a session's.
        """
        found = await read_latest(self._needs_store("load"), self.id)
        if found is not None:
            self._record, state = found
            self._state = {k: _Raw(v) for k, v in state.items()}
        self._loaded = True

    async def refresh(self) -> None:
        """Load the newest saved state when the store holds a newer one than this object
        (another process ran a turn) or this object never loaded; a run calls it once it
        holds the session."""
        store = self._needs_store("refresh")
        if not self._loaded or await latest_record(store, self.id) != self._record:
            await self.load()

    async def save(self) -> None:
        """Save the state as the session's newest, after the one it was loaded from (every
        finished turn of a run does this).

        Raises:
            TypeError: when the session has no store.
            SessionLockLost: the run holding the session lost its lock (nothing written).
            SessionConflict: another process saved the session since this state was loaded
                (nothing written): `load()` it and run the turn again.
        """
        store = self._needs_store("save")
        held = self.held
        if held is not None:
            check = getattr(held, "check", None)
            if check is not None:
                await check()
        if not self._loaded:  # never loaded: this state follows whatever is saved
            self._record = await latest_record(store, self.id)
            self._loaded = True
        from anyio import to_thread

        # Off the event loop: a long conversation is not the loop's work (the run holds the
        # session, so nothing changes it meanwhile).
        state = await to_thread.run_sync(self.snapshot)
        self._record = await write_record(store, self.id, state, self._record)

    def pending_requests(self) -> list[PendingRequest]:
        """What the session's waiting runs asked and no turn has answered yet, oldest first.

        Example:
            >>> Session().pending_requests()
            []
        """
        found: list[PendingRequest] = []
        for key in self._state:
            if key.endswith(REQUESTS):
                requests = self.get_as(key, _requests_adapter) or []
                found.extend(PendingRequest.of(request) for request in requests)
        return found

    def keep_requests(self, root: str, requests: Sequence[RequestInfoUpdate]) -> None:
        """Record the requests a turn of the run rooted at `root` ended waiting on (none:
        the turn answered them all)."""
        key = root + REQUESTS
        if requests:
            self._state[key] = list(requests)
        else:
            self._state.pop(key, None)

    def _needs_store(self, what: str) -> CheckpointStore:
        if self.store is None:
            raise TypeError(
                f"session {self.id!r} has no store to {what}: pass one, say "
                f"Session({self.id!r}, store=SqliteCheckpointStore('runs.db'))"
            )
        return self.store

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, keys={len(self._state)})"

    def get(self, key: str, default: Any = None) -> Any:
        """The raw value under `key` (JSON data when it came from `from_json`)."""
        value = self._state.get(key, default)
        return value.data if isinstance(value, _Raw) else value

    def get_as(self, key: str, adapter: TypeAdapter[T]) -> T | None:
        """The value under `key` as the type of `adapter`, validating JSON data once."""
        value = self._state.get(key)
        if isinstance(value, _Raw):
            typed = adapter.validate_python(value.data)
            self._state[key] = typed
            return typed
        return cast("T | None", value)

    def set(self, key: str, value: Any) -> None:
        """Store `value` (JSON-able, or pydantic models) under `key`."""
        self._state[key] = value

    def pop(self, key: str, default: Any = None) -> Any:
        """Remove `key` and return its raw value."""
        value = self._state.pop(key, default)
        return value.data if isinstance(value, _Raw) else value

    def keys(self, prefix: str = "") -> list[str]:
        """Keys starting with `prefix`."""
        return [k for k in self._state if k.startswith(prefix)]

    def clear(self, prefix: str = "") -> None:
        """Remove every key starting with `prefix` (everything by default)."""
        if not prefix:
            self._state.clear()
            return
        for key in self.keys(prefix):
            del self._state[key]

    def history(self, agent: AgentRef) -> list[ChatMessage]:
        """The conversation kept for `agent`: every message of its turns, in order (empty
        before its first run).

        The agent a run starts at keeps the history (a nested agent reads its parent's), so
        pass that agent, or the path of the workflow that holds it. An agent object is found
        by its id; when its id has history at several paths, pass the path.

        Example:
            >>> import anyio
            >>> from raf import FunctionAgent
            >>> echo = FunctionAgent("echo", lambda messages: messages[-1].text)
            >>> session = Session()
            >>> response = anyio.run(echo.run("hi", session).collect)
            >>> [m.text for m in session.history(echo)]
            ['hi', 'hi']

        Raises:
            ValueError: when an agent's id has history at several paths.
        """
        key = self._key(agent, "history")
        return list(self.get_as(key, message_list_adapter) or [])

    def state(self, agent: AgentRef) -> dict[str, Any]:
        """The pattern state kept for the node at `agent`, as JSON data (empty when none):
        a handoff router's active agent (`"desk/router"`), a group chat's selector, a
        Magentic orchestrator's ledgers.

        Raises:
            ValueError: when an agent's id has state at several paths.
        """
        return dict(_jsonable(self.get(self._key(agent, "state")) or {}))

    def paths(self) -> list[str]:
        """The agent paths the session keeps anything for, in the order they were first kept."""
        found = (key.partition("#")[0] for key in self._state)
        return list(dict.fromkeys(path for path in found if path))

    def _key(self, agent: AgentRef, name: str) -> str:
        if isinstance(agent, str):
            return f"{agent.strip('/')}#{name}"
        if isinstance(agent, Sequence):
            return "/".join(agent) + f"#{name}"
        agent_id = agent.id
        suffix = f"#{name}"
        found = [
            key
            for key in self._state
            if key.endswith(suffix) and key[: -len(suffix)].rpartition("/")[2] == agent_id
        ]
        if len(found) > 1:
            paths = [key[: -len(suffix)] for key in found]
            raise ValueError(
                f"agent {agent_id!r} has {name} at several paths of session {self.id!r} "
                f"({', '.join(paths)}): pass the path, say session.{name}({paths[0]!r})"
            )
        return found[0] if found else agent_id + suffix

    def snapshot(self) -> dict[str, Any]:
        """The state as JSON-able data."""
        # Restored values may be typed (a checkpoint restores sets, models...), so convert them too.
        return {k: _jsonable(v.data if isinstance(v, _Raw) else v) for k, v in self._state.items()}

    def restore(self, data: dict[str, Any]) -> None:
        """Replace the state with `data`: JSON from `snapshot`, or values decoded from a checkpoint."""
        self._state = {k: _Raw(v) for k, v in data.items()}

    def merge(self, data: dict[str, Any]) -> None:
        """Set every key of `data` (as `restore` does), keeping the other keys."""
        for key, value in data.items():
            self._state[key] = _Raw(value)

    def to_json(self) -> str:
        """Serialize id and state (not the store) as versioned JSON."""
        import json  # not loaded by `import raf`

        return json.dumps(
            {"version": SESSION_FORMAT_VERSION, "id": self.id, "state": self.snapshot()}
        )

    @classmethod
    def from_json(cls, text: str, store: CheckpointStore | None = None) -> Session:
        """Rebuild a session written by `to_json`.

        Raises:
            ValueError: when `text` is not a session of a known version.
        """
        import json

        data: Any = json.loads(text)
        if (
            not isinstance(data, dict)
            or cast(dict[str, Any], data).get("version") != SESSION_FORMAT_VERSION
        ):
            raise ValueError(
                f"not a raf session of version {SESSION_FORMAT_VERSION}: "
                "pass the text of Session.to_json()"
            )
        fields = cast(dict[str, Any], data)
        session = cls(id=str(fields["id"]), store=store)
        session.restore(cast(dict[str, Any], fields["state"]))
        return session


def _jsonable(value: Any) -> Any:
    return pydantic_core.to_jsonable_python(value)


def checked_session(session: Session) -> Session:
    """`session`, when it is a `Session`.

    Raises:
        TypeError: saying what to pass (a session id is not a session).
    """
    given = cast(object, session)
    if isinstance(given, Session):
        return given
    hint = f"Session(id={given!r})" if isinstance(given, str) else "Session()"
    raise TypeError(f"session is a Session, not {type(given).__name__}: pass {hint}")


def _checked_store(store: CheckpointStore | None) -> CheckpointStore | None:
    """`store`, when it is a checkpoint store (or None).

    Raises:
        TypeError: saying what to pass (a path is not a store).
    """
    if store is None or all(
        callable(getattr(store, name, None)) for name in ("save", "load", "latest", "list")
    ):
        return store
    hint = (
        f"SqliteCheckpointStore({store!r})"
        if isinstance(store, str)
        else "SqliteCheckpointStore('runs.db')"
    )
    raise TypeError(
        f"Session(store=...) takes a checkpoint store, not {type(store).__name__}: pass a "
        f"store of raf.stores, say {hint}"
    )


def checked_id(session_id: str) -> str:
    """`session_id`, when every store can keep it (a string of valid Unicode without NUL).

    Raises:
        TypeError: when it is not a string.
        ValueError: naming what in it cannot be stored.
    """
    if not isinstance(session_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"a session id is a str, not {type(session_id).__name__}")
    if "\x00" in session_id:
        raise ValueError(f"session id {session_id!r} contains a NUL character; use another id")
    if len(session_id) > MAX_ID_CHARS:
        raise ValueError(
            f"session id {session_id[:40]!r}... has {len(session_id)} characters, more than "
            f"the {MAX_ID_CHARS} a store keeps; use a shorter id (a hash of it, say)"
        )
    if session_id.startswith(RESERVED_PREFIX):
        raise ValueError(
            f"session id {session_id!r} starts with {RESERVED_PREFIX!r}, which raf reserves for "
            "its own keys; use another id"
        )
    try:
        session_id.encode()
    except UnicodeEncodeError:
        raise ValueError(
            f"session id {session_id!r} holds a lone surrogate, which no store can keep; "
            "use another id"
        ) from None
    return session_id
