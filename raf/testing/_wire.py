"""Scripted turns as chat-completions JSON: streamed chunks, whole completions, error bodies."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from raf.testing.quirks import TextToolCalls
from raf.testing.script import Turn, split

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """Everything needed to write one turn's answer."""

    turn: Turn
    model: str
    completion_id: str
    created: int
    call_ids: tuple[str, ...]
    """The id of each of the turn's tool calls, in order."""
    usage: tuple[int, int]
    """(prompt, completion) tokens."""
    repeat_tool_name: bool = False
    """Send a tool call's name with every one of its deltas."""
    omit_finish_reason: bool = False
    """Close the stream without a finish reason."""

    @property
    def finish_reason(self) -> str:
        """`tool_calls` when the turn calls tools, else `stop`."""
        return "tool_calls" if self.turn.calls else "stop"

    def _chunk(self, delta: JsonObject, finish_reason: str | None = None) -> JsonObject:
        return {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }

    def content_chunks(self) -> list[JsonObject]:
        """The chunks carrying the answer: role, reasoning, text, then tool calls by index."""
        turn = self.turn
        chunks = [self._chunk({"role": "assistant", "content": ""})]
        chunks += [
            self._chunk({"reasoning_content": piece})
            for piece in split(turn.reasoning or "", turn.chunk_size)
        ]
        chunks += [self._chunk({"content": piece}) for piece in split(turn.text, turn.chunk_size)]
        for index, (call, call_id) in enumerate(zip(turn.calls, self.call_ids, strict=True)):
            opening = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            chunks.append(self._chunk({"tool_calls": [opening]}))
            named = {"name": call.name} if self.repeat_tool_name else {}
            chunks += [
                self._chunk(
                    {"tool_calls": [{"index": index, "function": {**named, "arguments": piece}}]}
                )
                for piece in split(call.arguments, turn.chunk_size or 16)
            ]
        return chunks

    def closing_chunks(self, *, include_usage: bool) -> list[JsonObject]:
        """The final chunk with the finish reason, and the usage chunk when asked for."""
        chunks = [self._chunk({}, None if self.omit_finish_reason else self.finish_reason)]
        if include_usage:
            chunks.append(
                {
                    "id": self.completion_id,
                    "object": "chat.completion.chunk",
                    "created": self.created,
                    "model": self.model,
                    "choices": [],
                    "usage": self._usage(),
                }
            )
        return chunks

    def completion(self) -> JsonObject:
        """The whole `chat.completion` object, for a request without `stream`."""
        turn = self.turn
        message: JsonObject = {"role": "assistant", "content": turn.text or None}
        if turn.reasoning:
            message["reasoning_content"] = turn.reasoning
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call, call_id in zip(turn.calls, self.call_ids, strict=True)
            ]
        return {
            "id": self.completion_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": self._usage(),
        }

    def _usage(self) -> JsonObject:
        prompt, completion = self.usage
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }


def calls_as_text(turn: Turn, style: TextToolCalls) -> Turn:
    """`turn` with its tool calls written into its text, as a model without tool calling does."""
    if not turn.calls:
        return turn
    written: list[str] = []
    for call in turn.calls:
        try:
            arguments: Any = json.loads(call.arguments)
        except ValueError:
            arguments = call.arguments
        body = json.dumps({"name": call.name, "arguments": arguments})
        if style == "fence":
            body = f"```json\n{body}\n```"
        elif style == "tags":
            body = f"<tool_call>\n{body}\n</tool_call>"
        written.append(body)
    text = "\n".join([turn.text, *written] if turn.text else written)
    return replace(turn, kind="text", text=text, calls=())


def error_body(status: int, message: str, *, code: str | None = None) -> JsonObject:
    """An OpenAI-style error object for HTTP `status`."""
    if status == 429:
        kind = "rate_limit_error"
    elif status >= 500:
        kind = "server_error"
    elif status in (401, 403):
        kind = "authentication_error"
    else:
        kind = "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
