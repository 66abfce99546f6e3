"""Conversion between raf messages and chat-completions message dicts, both ways."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from openai.types.chat import ChatCompletionMessageParam

from raf.messages import (
    ChatMessage,
    Content,
    TextContent,
    ToolCallContent,
    ToolResultContent,
)

# OpenAI accepts a participant `name` of 1 to 64 of these characters; others become `_`.
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def to_chat_completions(messages: Iterable[ChatMessage]) -> list[ChatCompletionMessageParam]:
    """The chat-completions `messages` list for a raf conversation.

    Reasoning is not sent back; a tool message becomes one message per tool result.

    Raises:
        ValueError: a tool message holds no `ToolResultContent`.
    """
    out: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        results = [c for c in message.contents if c.type == "tool_result"]
        if message.role == "tool" and not results:
            raise ValueError(
                f"message {position} has role 'tool' but no ToolResultContent; a tool message "
                "needs ToolResultContent(call_id=...) naming the call it answers "
                "(ChatMessage.tool_result(call_id, result) builds one)"
            )
        if message.role != "tool" and (_has_text_or_calls(message) or not results):
            out.append(_plain_message(message))
        out.extend(
            {"role": "tool", "tool_call_id": r.call_id, "content": r.result} for r in results
        )
    return cast("list[ChatCompletionMessageParam]", out)


def _has_text_or_calls(message: ChatMessage) -> bool:
    return any(c.type in ("text", "tool_call") for c in message.contents)


def _plain_message(message: ChatMessage) -> dict[str, Any]:
    entry: dict[str, Any] = {"role": message.role}
    text = message.text
    if message.author:
        entry["name"] = participant_name(message.author)
    if message.role == "assistant":
        calls = message.tool_calls
        if calls:
            entry["tool_calls"] = [
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in calls
            ]
            entry["content"] = text or None
            return entry
    entry["content"] = text
    return entry


def participant_name(author: str) -> str:
    """`author` as a chat participant `name` the OpenAI API accepts.

    Example:
        >>> participant_name("team lead")
        'team_lead'
    """
    return _NAME_UNSAFE.sub("_", author)[:64]


def from_chat_completions(messages: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """raf messages for a chat-completions `messages` list (what a server receives).

    Consecutive tool messages are kept one raf message each; `developer` counts as `system`.
    """
    out: list[ChatMessage] = []
    for raw in messages:
        role = raw.get("role")
        author = raw.get("name") if isinstance(raw.get("name"), str) else None
        if role == "tool":
            result = ToolResultContent(
                call_id=str(raw.get("tool_call_id", "")), result=_text_of(raw.get("content"))
            )
            out.append(ChatMessage(role="tool", contents=[result]))
            continue
        contents: list[Content] = []
        text = _text_of(raw.get("content"))
        if text:
            contents.append(TextContent(text=text))
        contents.extend(_calls_of(raw.get("tool_calls")))
        if role in ("system", "developer"):
            out.append(ChatMessage(role="system", contents=contents, author=author))
        elif role in ("user", "assistant"):
            out.append(ChatMessage(role=role, contents=contents, author=author))
        else:
            raise ValueError(f"unknown chat-completions role {role!r}")
    return out


def _text_of(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in cast(list[object], content):
            if isinstance(part, dict):
                text = cast(dict[str, object], part).get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts)
    return str(content)


def _calls_of(raw_calls: object) -> list[ToolCallContent]:
    if not isinstance(raw_calls, list):
        return []
    calls: list[ToolCallContent] = []
    for raw in cast(list[object], raw_calls):
        if not isinstance(raw, dict):
            continue
        call = cast(dict[str, Any], raw)
        function = cast(dict[str, Any], call.get("function") or {})
        calls.append(
            ToolCallContent(
                call_id=str(call.get("id", "")),
                name=str(function.get("name", "")),
                arguments=str(function.get("arguments", "")),
            )
        )
    return calls
