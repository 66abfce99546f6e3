"""`ScriptedProvider`: a deterministic `LlmProvider` playing a script, for tests and demos.

Example:
    >>> import anyio
    >>> from raf import ReactAgent
    >>> from raf.testing import text
    >>> provider = ScriptedProvider([text("Hello there")])
    >>> agent = ReactAgent("greeter", provider, "Greet.")
    >>> anyio.run(lambda: agent.run("hi").collect()).text
    'Hello there'
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from raf.errors import ProviderError
from raf.messages import ChatMessage, ToolCallContent
from raf.providers._unicode import valid_json_text, valid_unicode
from raf.providers.base import (
    Completion,
    ProviderEvent,
    ReasoningChunk,
    TextChunk,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)
from raf.testing.script import Script, Turn, TurnPicker, split, turn_usage
from raf.tools.definition import ToolDefinition


@dataclass(frozen=True, slots=True)
class ScriptedRequest:
    """One call the scripted model received."""

    messages: list[ChatMessage]
    tools: list[ToolDefinition]
    response_format: dict[str, Any] | None


class ScriptedProvider:
    """An `LlmProvider` answering each call with the next turn of `script`.

    Args:
        script: turns played in order, or a function `(messages) -> Turn` called per call.
        model: the model name it reports.

    Attributes:
        requests: every call received, in order.
    """

    def __init__(self, script: Script, *, model: str = "scripted") -> None:
        self._picker = TurnPicker(script)
        self._model = model
        self._ids = itertools.count(1)
        self.requests: list[ScriptedRequest] = []

    @property
    def model(self) -> str:
        """The model name."""
        return self._model

    @property
    def calls(self) -> int:
        """How many calls were made."""
        return self._picker.calls

    @asynccontextmanager
    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolDefinition] = (),
        response_format: dict[str, Any] | None = None,
    ) -> AsyncGenerator[AsyncIterator[ProviderEvent]]:
        """Stream the next turn; see `LlmProvider.stream`."""
        request = list(messages)
        self.requests.append(ScriptedRequest(request, list(tools), response_format))
        turn = self._picker.next(request)
        if turn.delay:
            await anyio.sleep(turn.delay)
        if turn.kind == "error":
            raise ProviderError(
                f"model {self._model!r} failed with HTTP {turn.status}: {turn.message}",
                model=self._model,
                status=turn.status,
            )
        events = self._events(turn, request)
        try:
            yield events
        finally:
            await events.aclose()

    async def _events(
        self, turn: Turn, messages: list[ChatMessage]
    ) -> AsyncGenerator[ProviderEvent]:
        # What reaches raf is valid Unicode, as from OpenAIProvider.
        text = valid_unicode(turn.text)
        reasoning = valid_unicode(turn.reasoning or "")
        for piece in split(reasoning, turn.chunk_size):
            yield ReasoningChunk(piece)
        for piece in split(text, turn.chunk_size):
            yield TextChunk(piece)
        calls: list[ToolCallContent] = []
        for call in turn.calls:
            call_id = valid_unicode(call.call_id or f"call_{next(self._ids)}")
            name = valid_unicode(call.name)
            arguments = valid_json_text(call.arguments)
            yield ToolCallStarted(call_id, name)
            for piece in split(arguments, turn.chunk_size or 16):
                yield ToolCallDelta(call_id, piece)
            calls.append(ToolCallContent(call_id=call_id, name=name, arguments=arguments))
        tokens_in, tokens_out = turn_usage(turn, messages)
        yield UsageReport(tokens_in, tokens_out)
        yield Completion(
            text=text,
            reasoning=reasoning,
            tool_calls=calls,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            finish_reason="tool_calls" if calls else "stop",
        )
