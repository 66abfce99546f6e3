"""What a role sees (`ThreadContext`, `Step`), what it gives (`RoleResult`), and the shapes of
roles and adapters.

A role is an async function from a thread to a typed value (`RoleFn`); an adapter makes roles
from a prompt and an output schema (`AdapterFn`), so the same role workflow runs on a ReAct
loop, a single structured-output call, or any agent. A role may also answer with a
`RoleResult`, choosing which small signals the moderator reads (`ResultAdapterFn` makes such
roles).

Example:
    >>> thread = ThreadContext(
    ...     thread_id="t1",
    ...     start=[ChatMessage.user("Plan a trip to Oslo.")],
    ...     steps=[Step(role="planner", value={"days": 3})],
    ... )
    >>> [m.role for m in thread_messages(thread)]
    ['user', 'user']
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field

from raf._defaults import new_dict, new_list
from raf.messages import ChatMessage

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

RoleFn = Callable[["ThreadContext"], Awaitable[T]]
"""A role: given the thread so far, produce its typed output."""


class AdapterFn(Protocol):
    """Makes a role from a prompt and an output schema: `adapter(prompt, schema) -> RoleFn`."""

    def __call__(self, prompt: str, schema: type[M], /) -> RoleFn[M]:
        """The role answering `prompt` with a validated `schema` instance."""
        ...


class RoleResult(BaseModel):
    """A role's answer split in two: the whole output, and the small signals a moderator reads.

    `content` is stored once, by sha256, in the log's content store; `meta` goes into the
    event row and is what `RoleEvent.meta` (so the moderator) sees. A role that returns a plain
    schema instance is split by default: its scalar fields (booleans, numbers, short strings)
    to `meta`, the whole output to `content`.

    Example:
        >>> result = RoleResult(content={"diff": "..." * 1000, "passed": True}, meta={"passed": True})
        >>> result.meta
        {'passed': True}
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    content: Any
    """The role's whole output: an instance of the role's schema, or JSON data that validates
    as one."""
    meta: dict[str, Any] = Field(default_factory=new_dict)
    """Small decision signals (JSON data), kept in the event row for the moderator."""


class ResultAdapterFn(Protocol):
    """Makes a role that may answer with a `RoleResult` (the command, tool and hooked LLM
    roles): `adapter(prompt, schema) -> RoleFn[schema | RoleResult]`. Every `AdapterFn` is
    one too."""

    def __call__(self, prompt: str, schema: type[M], /) -> RoleFn[M | RoleResult]:
        """The role answering `prompt` with a `schema` instance or a `RoleResult`."""
        ...


class Step(BaseModel):
    """One earlier role output of a thread."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    role: str
    """The role that produced it."""
    value: Any
    """Its validated output (a model instance or JSON data): the step's whole content."""
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    """When it was produced."""
    meta: dict[str, Any] = Field(default_factory=new_dict)
    """The small signals it left for the moderator (the event's `meta`)."""


class ThreadContext(BaseModel):
    """The thread a role works on: its opening messages and the role outputs so far."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    thread_id: str
    """Identifies the thread (the topic)."""
    depth: int = 0
    """How many steps deep the thread is."""
    start: list[ChatMessage] = Field(default_factory=new_list)
    """The messages that opened the thread."""
    steps: list[Step] = Field(default_factory=new_list)
    """Earlier role outputs, oldest first."""

    @property
    def bundle_hash(self) -> str:
        """The sha256 of the role's input bundle: the opening messages and each step's role
        and value (not ids or times), so two threads that show a role the same inputs have
        the same hash (to cache or deduplicate role calls).

        Example:
            >>> a = ThreadContext(thread_id="a", steps=[Step(role="r", value={"x": 1})])
            >>> b = ThreadContext(thread_id="b", steps=[Step(role="r", value={"x": 1})])
            >>> a.bundle_hash == b.bundle_hash != ThreadContext(thread_id="a").bundle_hash
            True
        """
        bundle = {
            "start": [m.model_dump(mode="json") for m in self.start],
            "steps": [[step.role, step.value] for step in self.steps],
        }
        data = pydantic_core.to_jsonable_python(bundle, fallback=str)
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def thread_messages(thread: ThreadContext) -> list[ChatMessage]:
    """The conversation a role sees: the opening messages, then one message listing the steps."""
    messages = list(thread.start)
    if thread.steps:
        lines = ["Outputs of the earlier roles of this thread, oldest first:"]
        lines.extend(
            f"[{step.role}] {pydantic_core.to_json(step.value, fallback=str).decode()}"
            for step in thread.steps
        )
        messages.append(ChatMessage.user("\n".join(lines)))
    return messages


def role_output(value: Any, schema: type[M]) -> M | RoleResult:
    """What a role factory's function gave, as a role's answer: a `RoleResult` or an instance
    of `schema` as is, anything else (another model, JSON data) validated as `schema`.

    Raises:
        pydantic.ValidationError: when it does not validate as `schema`.
    """
    if isinstance(value, RoleResult | schema):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump()
    return schema.model_validate(value)
