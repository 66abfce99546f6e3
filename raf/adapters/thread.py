"""What a role sees (`ThreadContext`, `Step`) and the shapes of roles and adapters.

A role is an async function from a thread to a typed value (`RoleFn`); an adapter makes roles
from a prompt and an output schema (`AdapterFn`), so the same role workflow runs on a ReAct
loop, a single structured-output call, or any agent.

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

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field

from raf._defaults import new_list
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


class Step(BaseModel):
    """One earlier role output of a thread."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    role: str
    """The role that produced it."""
    value: Any
    """Its validated output (a model instance or JSON data)."""
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    """When it was produced."""


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
