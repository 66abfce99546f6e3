"""The `LlmProvider` protocol: one streaming chat call, and the events it yields.

A provider streams `TextChunk`, `ReasoningChunk`, `ToolCallStarted`, `ToolCallDelta` and
`UsageReport` events as they arrive, then one final `Completion` with the assembled message.
Events are plain slotted dataclasses, made per token: not frozen (a frozen dataclass pays a call
per field to build), so treat them as read-only.

Example:
    >>> async def answer(provider: LlmProvider) -> str:
    ...     async with provider.stream([ChatMessage.user("hi")]) as events:
    ...         async for event in events:
    ...             if isinstance(event, Completion):
    ...                 return event.text
    ...     return ""
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from raf._defaults import new_list
from raf._tool_data import ToolDefinition
from raf.messages import ChatMessage, ToolCallContent


@dataclass(slots=True)
class TextChunk:
    """A piece of answer text."""

    text: str


@dataclass(slots=True)
class ReasoningChunk:
    """A piece of reasoning text."""

    text: str


@dataclass(slots=True)
class ToolCallStarted:
    """The model began tool call `call_id` to `name`."""

    call_id: str
    name: str


@dataclass(slots=True)
class ToolCallDelta:
    """A piece of the JSON arguments of call `call_id`."""

    call_id: str
    delta: str


@dataclass(slots=True)
class UsageReport:
    """Token usage of the call."""

    input_tokens: int
    output_tokens: int


@dataclass(slots=True)
class Completion:
    """The whole answer, assembled; always the last event of a stream."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallContent] = field(default_factory=new_list)
    input_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str | None = None
    model: str | None = field(default=None, compare=False)
    """The model that answered, as the server names it (for telemetry; not compared)."""
    response_id: str | None = field(default=None, compare=False)
    """The server's id of the completion (for telemetry; not compared)."""


ProviderEvent = (
    TextChunk | ReasoningChunk | ToolCallStarted | ToolCallDelta | UsageReport | Completion
)
"""Anything a provider stream yields."""


@runtime_checkable
class LlmProvider(Protocol):
    """A chat model behind one streaming call."""

    @property
    def model(self) -> str:
        """The model name, for errors and telemetry."""
        ...

    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolDefinition] = (),
        response_format: dict[str, Any] | None = None,
    ) -> AbstractAsyncContextManager[AsyncIterator[ProviderEvent]]:
        """Stream one model call; `async with` it and iterate the events.

        `response_format` is a chat-completions response format (`{"type": "json_schema", ...}`).
        Raises `ProviderError` when the call fails after retries.
        """
        ...
