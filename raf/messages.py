"""Chat messages and their content parts.

Example:
    >>> from raf import ChatMessage
    >>> ChatMessage.user("hi").text
    'hi'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Literal, cast

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

from raf._describe import describe, short_repr
from raf.providers._unicode import valid_unicode

Role = Literal["system", "user", "assistant", "tool"]

Text = Annotated[str, AfterValidator(valid_unicode)]
"""Text of a message: valid Unicode, every lone surrogate replaced by U+FFFD (as at the
provider boundary), so no message can poison a session, a request or a checkpoint."""


class _Frozen(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


class TextContent(_Frozen):
    """Plain text written by a participant."""

    type: Literal["text"] = "text"
    text: Text
    """The text."""


class ReasoningContent(_Frozen):
    """A model's visible reasoning (thinking) text."""

    type: Literal["reasoning"] = "reasoning"
    text: Text
    """The reasoning text."""


class ToolCallContent(_Frozen):
    """A model's request to call a tool."""

    type: Literal["tool_call"] = "tool_call"
    call_id: Text
    """Identifier pairing the call with its result."""
    name: Text
    """The tool's name."""
    arguments: Text
    """The arguments as the model wrote them: a JSON object, possibly malformed."""


class ToolResultContent(_Frozen):
    """The result of one tool call."""

    type: Literal["tool_result"] = "tool_result"
    call_id: Text
    """The call this answers."""
    result: Text
    """The tool's output as text."""
    is_error: bool = False
    """True when the tool failed or the call was invalid."""


Content = Annotated[
    TextContent | ReasoningContent | ToolCallContent | ToolResultContent,
    Field(discriminator="type"),
]


class ChatMessage(_Frozen):
    """One message of a conversation.

    Example:
        >>> ChatMessage.assistant("done", author="writer").author
        'writer'
    """

    role: Role
    """Who speaks: system, user, assistant or tool."""
    contents: list[Content]
    """The parts of the message, in order."""
    author: Text | None = None
    """The id of the agent that wrote it, when an agent did."""

    @property
    def text(self) -> str:
        """All text parts concatenated, without a separator."""
        return "".join(c.text for c in self.contents if c.type == "text")

    @property
    def tool_calls(self) -> list[ToolCallContent]:
        """The tool calls the message carries."""
        return [c for c in self.contents if c.type == "tool_call"]

    @classmethod
    def user(cls, text: str, author: str | None = None) -> ChatMessage:
        """A user message holding `text`, attributed to `author` when another agent's words
        are shown to an agent this way."""
        return cls._of_text("user", text, author)

    @classmethod
    def system(cls, text: str) -> ChatMessage:
        """A system message holding `text`."""
        return cls._of_text("system", text, None)

    @classmethod
    def assistant(cls, text: str, author: str | None = None) -> ChatMessage:
        """An assistant message holding `text`, optionally attributed to `author`."""
        return cls._of_text("assistant", text, author)

    @classmethod
    def _of_text(cls, role: Role, text: str, author: str | None) -> ChatMessage:
        # Validated from plain data by the model's own validator: the same message as one
        # built from its parts, for about two thirds of the instructions (a message per
        # agent answer, and per answer another agent is shown, on the hot path).
        contents = [{"type": "text", "text": text}]
        data = (
            {"role": role, "contents": contents}
            if author is None
            else {"role": role, "contents": contents, "author": author}
        )
        message: ChatMessage = cls.__pydantic_validator__.validate_python(data)
        return message

    @classmethod
    def tool_result(cls, call_id: str, result: str, *, is_error: bool = False) -> ChatMessage:
        """A tool message answering the call `call_id`."""
        return cls(
            role="tool",
            contents=[ToolResultContent(call_id=call_id, result=result, is_error=is_error)],
        )


MessagesInput = str | ChatMessage | Sequence[ChatMessage]
"""What `IAgent.run` accepts: a user text, one message, or a conversation."""

message_list_adapter: TypeAdapter[list[ChatMessage]] = TypeAdapter(
    list[ChatMessage], config=ConfigDict(defer_build=True)
)


def as_messages(messages: MessagesInput) -> list[ChatMessage]:
    """Normalize run input into a new list of messages.

    Raises:
        TypeError: when the input is none of the accepted forms, saying what to pass instead.

    Example:
        >>> as_messages({"role": "user", "content": "hi"})
        Traceback (most recent call last):
        TypeError: messages is the dict {'role': 'user', 'content': 'hi'}; pass a str, a ChatMessage or a list of ChatMessage, e.g. ChatMessage.user('hi')
    """
    if isinstance(messages, str):
        return [ChatMessage.user(messages)]
    if isinstance(messages, ChatMessage):
        return [messages]
    if isinstance(messages, Mapping | bytes | bytearray) or not isinstance(messages, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"messages is {describe(messages)}; {_ACCEPTED} {_suggest(messages)}")
    result = list(messages)
    for i, m in enumerate(result):
        if not isinstance(m, ChatMessage):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"messages[{i}] is {describe(m)}, not a ChatMessage; {_ACCEPTED} "
                f"[{_suggest(m)}, ...]"
            )
    return result


_ACCEPTED = "pass a str, a ChatMessage or a list of ChatMessage, e.g."
_FACTORIES = ("user", "system", "assistant")


def _suggest(value: object) -> str:
    """A ChatMessage constructor call for `value`: a chat-completions dict or a text."""
    if isinstance(value, str):
        return f"ChatMessage.user({short_repr(value)})"
    if isinstance(value, Mapping):
        entry = cast(Mapping[object, object], value)
        role, content = entry.get("role"), entry.get("content")
        text = short_repr(content) if isinstance(content, str) else "'...'"
        if role in _FACTORIES:
            return f"ChatMessage.{role}({text})"
        if role == "tool":
            return f"ChatMessage.tool_result(call_id, {text})"
    return "ChatMessage.user('...')"
