"""Assembly of streamed chat-completions chunks (decoded JSON) into provider events.

Chunks are read as plain JSON objects rather than validated models: OpenAI-compatible
servers differ in the fields they send (`reasoning_content` or `reasoning`, missing `created`
or `object`), and an unknown field must never fail a call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from raf._defaults import new_dict, new_list
from raf.messages import ToolCallContent
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

# Servers name the reasoning delta differently; the first one present wins so that a server
# sending both (as some do during a rename) is not counted twice.
_REASONING_FIELDS = ("reasoning_content", "reasoning")


@dataclass(slots=True)
class _PendingCall:
    index: int
    call_id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=new_list)
    started: bool = False


@dataclass(slots=True)
class ChunkAssembler:
    """Turns chunks into events as they arrive, and assembles the final `Completion`.

    Tool calls are keyed by their `index`: the id and name come on the first delta of an
    index, the arguments in pieces. A call is announced (`ToolCallStarted`) once its name is
    known; argument pieces that came earlier follow at once as one `ToolCallDelta`.

    Some servers send every call at index 0, or no index at all, and tell calls apart only
    by their ids: a delta whose id differs from the id of the call at its index starts a new
    call, and a delta without an index continues the call most recently fed.
    """

    text: list[str] = field(default_factory=new_list)
    reasoning: list[str] = field(default_factory=new_list)
    calls: dict[int, _PendingCall] = field(default_factory=new_dict)
    usage: tuple[int, int] | None = None
    finish_reason: str | None = None
    model: str | None = None
    response_id: str | None = None
    # The key in `calls` of the call each server index currently feeds, and of the last call fed.
    _keys: dict[int, int] = field(init=False, default_factory=new_dict)
    _last: int | None = field(init=False, default=None)

    def feed(self, chunk: Mapping[str, Any]) -> list[ProviderEvent]:
        """The events one chunk produces (often one, sometimes none)."""
        if self.model is None:
            self._identify(chunk)
        usage = _object(chunk.get("usage"))
        if usage:
            self.usage = (_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")))
        events: list[ProviderEvent] = []
        for raw_choice in _list(chunk.get("choices")):
            choice = _object(raw_choice)
            if _int(choice.get("index")) != 0:
                continue
            events.extend(self._feed_delta(_object(choice.get("delta"))))
            finish_reason = choice.get("finish_reason")
            if isinstance(finish_reason, str) and finish_reason:
                self.finish_reason = finish_reason
        return events

    def _identify(self, chunk: Mapping[str, Any]) -> None:
        """Note the answering model and the completion's id (sent on every chunk)."""
        model = chunk.get("model")
        if isinstance(model, str) and model:
            self.model = valid_unicode(model)
        response_id = chunk.get("id")
        if isinstance(response_id, str) and response_id:
            self.response_id = valid_unicode(response_id)

    def _feed_delta(self, delta: Mapping[str, Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        reasoning = next(
            (r for r in (delta.get(n) for n in _REASONING_FIELDS) if isinstance(r, str) and r),
            "",
        )
        if reasoning:
            reasoning = valid_unicode(reasoning)
            self.reasoning.append(reasoning)
            events.append(ReasoningChunk(reasoning))
        for piece in (delta.get("content"), delta.get("refusal")):
            if isinstance(piece, str) and piece:
                piece = valid_unicode(piece)
                self.text.append(piece)
                events.append(TextChunk(piece))
        for call_delta in _list(delta.get("tool_calls")):
            events.extend(self._feed_call(_object(call_delta)))
        return events

    def _feed_call(self, delta: Mapping[str, Any]) -> list[ProviderEvent]:
        raw_index = delta.get("index")
        index = (
            raw_index if isinstance(raw_index, int) and not isinstance(raw_index, bool) else None
        )
        raw_id = delta.get("id")
        call_id = valid_unicode(raw_id) if isinstance(raw_id, str) and raw_id else None
        call = self._call_for(index, call_id)
        if call_id is not None and call.call_id is None:
            call.call_id = call_id
        function = _object(delta.get("function"))
        name = function.get("name")
        if isinstance(name, str) and name and call.name is None:
            call.name = valid_unicode(name)
        piece = function.get("arguments")
        piece = valid_unicode(piece) if isinstance(piece, str) else ""
        if piece:
            call.arguments.append(piece)
        if not call.started and call.name is not None:
            return _start(call)
        if call.started and piece:
            return [ToolCallDelta(_call_id(call), piece)]
        return []

    def _call_for(self, index: int | None, call_id: str | None) -> _PendingCall:
        """The call a delta feeds: the one at its index (or the last one), or a new one."""
        key = self._last if index is None else self._keys.get(index)
        call = None if key is None else self.calls[key]
        if call is None or (call_id is not None and call.call_id not in (None, call_id)):
            if index is not None and index not in self.calls:
                key = index
            else:
                key = max(self.calls, default=-1) + 1
            call = self.calls[key] = _PendingCall(key)
        if index is not None:
            self._keys[index] = call.index
        self._last = call.index
        return call

    def finish(self) -> list[ProviderEvent]:
        """The closing events: calls never announced, the usage report, the `Completion`."""
        events: list[ProviderEvent] = []
        tool_calls: list[ToolCallContent] = []
        for index in sorted(self.calls):
            call = self.calls[index]
            if not call.started:
                events.extend(_start(call))
            tool_calls.append(
                ToolCallContent(
                    call_id=_call_id(call),
                    name=call.name or "",
                    arguments=valid_json_text("".join(call.arguments)),
                )
            )
        tokens_in, tokens_out = self.usage or (0, 0)
        if self.usage is not None:
            events.append(UsageReport(tokens_in, tokens_out))
        events.append(
            Completion(
                text="".join(self.text),
                reasoning="".join(self.reasoning),
                tool_calls=tool_calls,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                finish_reason=self.finish_reason,
                model=self.model,
                response_id=self.response_id,
            )
        )
        return events


def _start(call: _PendingCall) -> list[ProviderEvent]:
    call.started = True
    call.call_id = _call_id(call)
    events: list[ProviderEvent] = [ToolCallStarted(call.call_id, call.name or "")]
    pending = "".join(call.arguments)
    if pending:
        events.append(ToolCallDelta(call.call_id, pending))
    return events


def _call_id(call: _PendingCall) -> str:
    # A server that omits ids still gets stable, distinct ones for its calls.
    return call.call_id or f"call_{call.index}"


def _object(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
