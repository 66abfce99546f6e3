"""Scripted model turns, shared by `ScriptedProvider` and `ScriptedOpenAIServer`.

Example:
    >>> script = [tool_calls(("add", {"a": 1, "b": 2})), text("3")]
    >>> script[0].calls[0].name
    'add'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from raf._defaults import new_dict
from raf.errors import ScriptExhausted
from raf.messages import ChatMessage


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One tool call a scripted turn makes."""

    name: str
    arguments: str
    """The JSON arguments as sent (may be deliberately malformed)."""
    call_id: str | None = None
    """Fixed call id; numbered automatically when None."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One scripted model answer."""

    kind: Literal["text", "tool_calls", "error"]
    text: str = ""
    reasoning: str | None = None
    calls: tuple[ScriptedCall, ...] = ()
    status: int = 500
    """HTTP status of an `error` turn."""
    message: str = "scripted error"
    delay: float = 0.0
    """Seconds to wait before answering."""
    chunk_size: int | None = None
    """Characters per streamed delta (words when None)."""
    usage: tuple[int, int] | None = None
    """(input, output) tokens; counted from the text when None."""
    headers: dict[str, str] = field(default_factory=new_dict)
    """Extra HTTP headers of an `error` turn (say, Retry-After)."""
    truncate: bool = False
    """Over HTTP: end the stream abruptly, before the final chunk."""
    reset: bool = False
    """Over HTTP, for an `error` turn: reset the connection (TCP RST) instead of answering."""


Script = Sequence[Turn] | Callable[[list[ChatMessage]], Turn]
"""A list of turns played in order, or a function from the request's messages to a turn."""


def text(
    s: str,
    reasoning: str | None = None,
    *,
    delay: float = 0.0,
    chunk_size: int | None = None,
    usage: tuple[int, int] | None = None,
    truncate: bool = False,
) -> Turn:
    """A turn answering with text `s` (and optional reasoning)."""
    return Turn(
        "text",
        text=s,
        reasoning=reasoning,
        delay=delay,
        chunk_size=chunk_size,
        usage=usage,
        truncate=truncate,
    )


def tool_calls(
    *calls: tuple[str, dict[str, Any] | str] | tuple[str, dict[str, Any] | str, str],
    text: str = "",
    delay: float = 0.0,
    chunk_size: int | None = None,
    usage: tuple[int, int] | None = None,
) -> Turn:
    """A turn calling tools: each call is `(name, args)` or `(name, args, call_id)`.

    `args` is a dict (sent as JSON) or a raw string (sent as is, for malformed-output tests).
    """
    built: list[ScriptedCall] = []
    for call in calls:
        name, args = call[0], call[1]
        call_id = call[2] if len(call) == 3 else None
        raw = args if isinstance(args, str) else json.dumps(args)
        built.append(ScriptedCall(name, raw, call_id))
    return Turn(
        "tool_calls",
        text=text,
        calls=tuple(built),
        delay=delay,
        chunk_size=chunk_size,
        usage=usage,
    )


def resolve(value: dict[str, Any] | str, *, delay: float = 0.0) -> Turn:
    """A turn calling the `resolve` tool with `value` (structured output)."""
    return tool_calls(("resolve", value), delay=delay)


def error(
    status: int = 500,
    message: str = "scripted error",
    *,
    delay: float = 0.0,
    headers: dict[str, str] | None = None,
    reset: bool = False,
) -> Turn:
    """A turn failing with HTTP `status`; with `reset`, over HTTP the server resets the
    connection instead of answering (in process it fails with `status` all the same)."""
    return Turn(
        "error", status=status, message=message, delay=delay, headers=headers or {}, reset=reset
    )


def split(s: str, chunk_size: int | None) -> list[str]:
    """Split `s` into deltas: words (keeping spaces) or fixed-size chunks."""
    if not s:
        return []
    if chunk_size is None:
        parts: list[str] = []
        start = 0
        for i, ch in enumerate(s):
            if ch == " " and i + 1 < len(s):
                parts.append(s[start : i + 1])
                start = i + 1
        parts.append(s[start:])
        return parts
    return [s[i : i + chunk_size] for i in range(0, len(s), chunk_size)]


def count_tokens(messages: Sequence[ChatMessage]) -> int:
    """A deterministic stand-in for prompt tokens: words in the messages."""
    total = 0
    for m in messages:
        for c in m.contents:
            body = getattr(c, "text", None) or getattr(c, "result", None) or ""
            total += len(str(body).split()) + 1
    return total


def turn_usage(turn: Turn, messages: Sequence[ChatMessage]) -> tuple[int, int]:
    """(input, output) tokens of `turn` answering `messages`."""
    if turn.usage is not None:
        return turn.usage
    out = len(turn.text.split()) + len((turn.reasoning or "").split())
    out += sum(1 + len(c.arguments) // 4 for c in turn.calls)
    return count_tokens(messages), out


class TurnPicker:
    """Hands out the next turn of a script, numbering model calls."""

    __slots__ = ("_script", "calls")

    def __init__(self, script: Script) -> None:
        self._script = script
        self.calls = 0

    def next(self, messages: list[ChatMessage]) -> Turn:
        """The turn answering `messages`."""
        index = self.calls
        self.calls += 1
        if callable(self._script):
            return self._script(messages)
        if index >= len(self._script):
            raise ScriptExhausted(
                f"the model was called {index + 1} times but the script has "
                f"{len(self._script)} turns; add turns or use a function script"
            )
        return self._script[index]
