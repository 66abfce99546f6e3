"""`RoleWorkflowBuilder`: a moderated workflow of typed roles over an append-only event log.

Each role is a prompt and an output schema, made into a `RoleFn` by an `AdapterBinding`
(a ReAct loop, one structured call, any agent, plain code or a command-line coding agent;
per-role overrides). A moderator `fn(chain, topic_id) -> role | END` looks at the thread's
events and picks who acts next. Every step is an event `{workflow}.{role}` keyed by the topic
(the session id): its whole output stored once by sha256 in the log's content store, its
small signals in the event's `meta`; the thread opens with a `{workflow}.__start__` event
holding the input. Each append names the event it follows, so several writers on one log
never write a step twice. `build()` compiles it onto the graph engine (so it runs as an agent
of kind `roles`, nests, checkpoints and streams each role's items on its path);
`build_tick_runner()` drives the same roles in ticks over a log.

Example:
    >>> import anyio
    >>> from pydantic import BaseModel
    >>> from raf.adapters import AdapterBinding
    >>> from raf.stores import MemoryCheckpointStore
    >>> class Draft(BaseModel):
    ...     text: str
    >>> class Review(BaseModel):
    ...     ok: bool
    >>> def adapter(prompt, schema):
    ...     async def role(thread):
    ...         return Draft(text="hello") if schema is Draft else Review(ok=True)
    ...     return role
    >>> def moderator(chain, topic_id):
    ...     last = chain[-1].role
    ...     if last == "__start__":
    ...         return "writer"
    ...     return "reviewer" if last == "writer" else END
    >>> log = MemoryCheckpointStore()
    >>> workflow = (
    ...     RoleWorkflowBuilder("review")
    ...     .add_role("writer", "Write it.", Draft)
    ...     .add_role("reviewer", "Review it.", Review)
    ...     .with_moderator(moderator)
    ...     .build(AdapterBinding(adapter), log=log)
    ... )
    >>> from raf.session import Session
    >>> response = anyio.run(workflow.as_agent().run("Write a greeting.", Session(id="t1")).collect)
    >>> response.value, [e.kind for e in anyio.run(log.events)]
    (Review(ok=True), ['review.__start__', 'review.writer', 'review.reviewer'])
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel

from raf.adapters.binding import AdapterBinding
from raf.agent import check_agent_id
from raf.builders.roles.events import END, START_ROLE, End, Moderator, RoleEvent
from raf.builders.roles.nodes import ModeratorNode, RoleNode, StartNode
from raf.builders.roles.program import MODERATOR_NODE, Role, RoleProgram
from raf.builders.roles.ticks import DEFAULT_CONCURRENCY, DEFAULT_MAX_ATTEMPTS, TickRunner
from raf.engine.builder import WorkflowBuilder
from raf.engine.workflow import Workflow
from raf.errors import GraphValidationError
from raf.stores.base import EventLog
from raf.stores.memory import MemoryCheckpointStore

__all__ = ["END", "End", "Moderator", "RoleEvent", "RoleWorkflowBuilder", "TickRunner"]

DEFAULT_MAX_STEPS = 32
"""Role steps a thread may take before the run fails (the moderator never said END)."""

_RESERVED = frozenset({START_ROLE, MODERATOR_NODE})


class RoleWorkflowBuilder:
    """Builds a moderated role workflow; see the module docstring.

    Args:
        id: the workflow's id, and the first part of its event kinds.

    Raises:
        GraphValidationError: when `id` is not a usable agent id.
    """

    def __init__(self, id: str) -> None:
        try:
            self._name = check_agent_id(id)
        except (TypeError, ValueError) as exc:
            raise GraphValidationError(f"RoleWorkflowBuilder: {exc}") from None
        self._specs: list[tuple[str, str, type[BaseModel]]] = []
        self._moderator: Moderator | None = None
        self._max_steps = DEFAULT_MAX_STEPS

    def add_role(self, name: str, prompt: str, schema: type[BaseModel]) -> Self:
        """Add the role `name`, answering `prompt` with a validated `schema`.

        Raises:
            GraphValidationError: naming the workflow and role, for a duplicate or reserved
                name, one with '.' or '/', or a schema that is not a pydantic model.
        """
        where = f"role workflow {self._name!r}"
        if not isinstance(name, str) or not name or "." in name or "/" in name:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise GraphValidationError(
                f"{where}: role name {name!r} is not usable; give a non-empty name without "
                "'.' or '/'",
                ids=(str(name),),
            )
        if name in _RESERVED:
            raise GraphValidationError(
                f"{where}: role name {name!r} is reserved; choose another", ids=(name,)
            )
        if any(existing == name for existing, _, _ in self._specs):
            raise GraphValidationError(
                f"{where} already has a role named {name!r}; role names must be unique",
                ids=(name,),
            )
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise GraphValidationError(
                f"{where}: the schema of role {name!r} must be a pydantic model class, "
                f"not {schema!r}",
                ids=(name,),
            )
        self._specs.append((name, prompt, schema))
        return self

    def with_moderator(self, fn: Moderator) -> Self:
        """Set the moderator: `fn(chain, topic_id) -> role name | END`, sync or async."""
        if not callable(fn):
            raise GraphValidationError(
                f"role workflow {self._name!r}: the moderator must be a function "
                f"fn(chain, topic_id) -> role | END, not {fn!r}"
            )
        self._moderator = fn
        return self

    def with_max_steps(self, steps: int) -> Self:
        """Fail a thread that takes more than `steps` role steps (32 by default)."""
        if steps < 1:
            raise ValueError(f"role workflow {self._name!r}: max steps must be at least 1")
        self._max_steps = steps
        return self

    def build(
        self,
        binding: AdapterBinding,
        *,
        log: EventLog | None = None,
        code_rev: str | None = None,
    ) -> Workflow:
        """Compile onto the graph engine: a `Workflow` of kind `roles`.

        Args:
            binding: makes each role's function (its override, else the default adapter).
            log: where threads are kept when the session has no store (a new in-memory log
                by default); a session whose store is an `EventLog` keeps them there.
            code_rev: recorded in every event (say, the git revision of the code).

        Raises:
            GraphValidationError: no roles, or no moderator.
        """
        program = self._program(binding, code_rev)
        fallback = log if log is not None else MemoryCheckpointStore()
        builder = WorkflowBuilder(self._name)
        start = StartNode(START_ROLE, program, fallback)
        moderator = ModeratorNode(program, fallback)
        builder.add_executor(start).add_executor(moderator).add_edge(start, moderator)
        for role in program.roles.values():
            node = RoleNode(role, program, fallback)
            builder.add_executor(node).add_edge(moderator, node).add_edge(node, moderator)
        builder.set_start(start).set_max_supersteps(2 * self._max_steps + 4)
        # Right by construction (start -> moderator <-> each role), as the other patterns'.
        return builder.build(check_structure=False).with_kind("roles")

    def build_tick_runner(
        self,
        binding: AdapterBinding,
        log: EventLog,
        *,
        code_rev: str | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> TickRunner:
        """A `TickRunner` advancing this workflow's threads in `log`, one step a tick.

        Args:
            binding: makes each role's function.
            log: the event log the threads live in (several runners, in several processes,
                may share it).
            code_rev: recorded in every event.
            max_attempts: how many ticks in a row a failing step is tried (3).
            concurrency: how many topics a tick works on at once (16).

        Raises:
            GraphValidationError: no roles, or no moderator.
        """
        return TickRunner(
            self._program(binding, code_rev),
            log,
            max_attempts=max_attempts,
            concurrency=concurrency,
        )

    def _program(self, binding: AdapterBinding, code_rev: str | None) -> RoleProgram:
        where = f"role workflow {self._name!r}"
        if not self._specs:
            raise GraphValidationError(f"{where} has no roles; call add_role() at least once")
        if self._moderator is None:
            raise GraphValidationError(
                f"{where} has no moderator; call with_moderator(fn) with "
                "fn(chain, topic_id) -> role | END"
            )
        if not isinstance(binding, AdapterBinding):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise GraphValidationError(
                f"{where}: build() takes an AdapterBinding, not {binding!r}; wrap the adapter "
                "as AdapterBinding(adapter)"
            )
        unknown = sorted(set(binding.overrides) - {name for name, _, _ in self._specs})
        if unknown:
            raise GraphValidationError(
                f"{where}: the binding overrides {', '.join(map(repr, unknown))}, which are not "
                "roles of it",
                ids=tuple(unknown),
            )
        roles = {
            name: Role(name, prompt, schema, binding.bind(name, prompt, schema))
            for name, prompt, schema in self._specs
        }
        return RoleProgram(self._name, roles, self._moderator, code_rev, self._max_steps)
