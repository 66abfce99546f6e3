"""Messages as the GenAI semantic conventions record them on spans (opt-in content).

`gen_ai.input.messages` and `gen_ai.output.messages` hold JSON strings in the conventions'
message schema: a role, a list of parts (`text`, `reasoning`, `tool_call`,
`tool_call_response`), the author as `name`, and, on output, the finish reason.

Example:
    >>> from raf.messages import ChatMessage
    >>> messages_json([ChatMessage.user("hi")])
    '[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from raf.messages import ChatMessage

__all__ = ["arguments_value", "messages_json", "output_json"]


def messages_json(messages: Sequence[ChatMessage]) -> str:
    """`messages` as the JSON of `gen_ai.input.messages`."""
    return json.dumps([_message(m) for m in messages], ensure_ascii=False)


def output_json(message: ChatMessage, finish_reason: str | None) -> str:
    """A model's answer as the JSON of `gen_ai.output.messages` (one choice)."""
    shown = _message(message)
    shown["finish_reason"] = finish_reason or "stop"
    return json.dumps([shown], ensure_ascii=False)


def arguments_value(arguments: str) -> Any:
    """Tool-call arguments as an object when they are JSON, else the text itself."""
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _message(message: ChatMessage) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type == "text":
            parts.append({"type": "text", "content": content.text})
        elif content.type == "reasoning":
            parts.append({"type": "reasoning", "content": content.text})
        elif content.type == "tool_call":
            parts.append(
                {
                    "type": "tool_call",
                    "id": content.call_id,
                    "name": content.name,
                    "arguments": arguments_value(content.arguments),
                }
            )
        else:
            parts.append(
                {"type": "tool_call_response", "id": content.call_id, "result": content.result}
            )
    shown: dict[str, Any] = {"role": message.role, "parts": parts}
    if message.author is not None:
        shown["name"] = message.author
    return shown
