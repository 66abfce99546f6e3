"""What an AG-UI `RunAgentInput` adds to a thread, as raf messages.

AG-UI clients send the whole conversation on every run; raf keeps it in the session. So only
messages whose ids the thread has not seen become input: user text, system and developer
messages, assistant messages a client brings from elsewhere, and tool messages. Resume entries
answer pending requests, each as a tool message whose `call_id` is the request id (raf's typed
answer). Reasoning and activity messages are the client's own record and are skipped.

Example:
    >>> from ag_ui.core import RunAgentInput, UserMessage
    >>> run = RunAgentInput(thread_id="t", run_id="r", messages=[UserMessage(id="m1", content="hi")])
    >>> [m.text for m in new_messages(run, seen=set())]
    ['hi']
    >>> new_messages(run, seen={"m1"})
    []
"""

from __future__ import annotations

import json
from collections.abc import Set
from typing import cast

from ag_ui.core import (
    AssistantMessage,
    DeveloperMessage,
    Message,
    RunAgentInput,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserMessage,
)

from raf.messages import ChatMessage, Content, TextContent, ToolCallContent

__all__ = ["input_ids", "new_messages"]


def input_ids(run: RunAgentInput) -> set[str]:
    """Ids of every message in the input."""
    return {message.id for message in run.messages}


def new_messages(run: RunAgentInput, seen: Set[str]) -> list[ChatMessage]:
    """The raf messages of `run` that the thread has not seen, then the answers of its resume.

    Raises:
        ValueError: for content raf cannot take (media parts), or a resume entry that cancels a
            request (raf asks until it is answered).
    """
    messages = [
        converted
        for message in run.messages
        if message.id not in seen
        for converted in [_convert(message)]
        if converted is not None
    ]
    for entry in run.resume or ():
        if entry.status != "resolved":
            raise ValueError(
                f"resume entry for {entry.interrupt_id!r} has status {entry.status!r}: raf cannot "
                "withdraw a request; answer it with status 'resolved' and a payload"
            )
        messages.append(ChatMessage.tool_result(entry.interrupt_id, json.dumps(entry.payload)))
    return messages


def _convert(message: Message) -> ChatMessage | None:
    match message:
        case UserMessage():
            return ChatMessage.user(_text(message.content, message.id))
        case SystemMessage() | DeveloperMessage():
            return ChatMessage.system(message.content)
        case ToolMessage():
            return ChatMessage.tool_result(
                message.tool_call_id,
                _text(message.content, message.id),
                is_error=message.error is not None,
            )
        case AssistantMessage():
            contents: list[Content] = []
            if message.content:
                contents.append(TextContent(text=message.content))
            for call in message.tool_calls or ():
                contents.append(
                    ToolCallContent(
                        call_id=call.id, name=call.function.name, arguments=call.function.arguments
                    )
                )
            return ChatMessage(role="assistant", contents=contents, author=message.name)
        case _:
            return None


def _text(content: object, message_id: str) -> str:
    if isinstance(content, str):
        return content
    parts = cast(list[object], content) if isinstance(content, list) else [content]
    texts: list[str] = []
    for part in parts:
        if not isinstance(part, TextPart):
            raise ValueError(
                f"message {message_id!r} has a {type(part).__name__}: raf takes text parts only"
            )
        texts.append(part.text)
    return "".join(texts)
