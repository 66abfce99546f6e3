"""Tool calls that a model writes as text, for models and servers without native tool calling.

With `text_tool_calls=True` an answer that is nothing but a JSON object
`{"name": <one of the agent's tools>, "arguments": {...}}` — bare, in a ```json fence, or in
`<tool_call>` tags (several tagged calls are fine) — is taken as tool calls. Anything else,
an unknown tool name included, stays text.

While it streams, text that may turn out to be such a call is held back (`HeldText`), so a
consumer sees either the tool calls or the text, never both.

Example:
    >>> calls = parse_text_calls('{"name": "add", "arguments": {"a": 1}}', {"add"}, "t")
    >>> [(c.call_id, c.name, c.arguments) for c in calls or ()]
    [('t_0', 'add', '{"a": 1}')]
    >>> parse_text_calls('{"name": "rm", "arguments": {}}', {"add"}, "t") is None
    True
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any, cast

from raf.messages import ToolCallContent

_FENCE = re.compile(r"^```(?:json)?\s*\n(.*?)\n?```$", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_OPENERS = ("{", "```", "<tool_call>")


def parse_text_calls(
    text: str, names: Collection[str], id_prefix: str
) -> list[ToolCallContent] | None:
    """The tool calls `text` consists of, or None when it is anything else.

    Args:
        text: the model's whole answer.
        names: the tools the agent has; a call to any other name keeps the text as text.
        id_prefix: call ids are `{id_prefix}_0`, `{id_prefix}_1`, ...
    """
    stripped = text.strip()
    if stripped.startswith("<tool_call>"):
        if _TAGGED.sub("", stripped).strip():
            return None
        bodies = [b.strip() for b in _TAGGED.findall(stripped)]
    else:
        fenced = _FENCE.match(stripped)
        bodies = [fenced.group(1).strip() if fenced else stripped]
    calls: list[ToolCallContent] = []
    for index, body in enumerate(bodies):
        call = _call(body, names, f"{id_prefix}_{index}")
        if call is None:
            return None
        calls.append(call)
    return calls or None


def _call(body: str, names: Collection[str], call_id: str) -> ToolCallContent | None:
    try:
        parsed: object = json.loads(body)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    obj = cast(dict[str, Any], parsed)
    name = obj.get("name")
    # Llama-style templates write "parameters"; some models send the arguments as a string.
    arguments = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(name, str) or name not in names or not isinstance(arguments, dict):
        return None
    if set(obj) - {"name", "arguments", "parameters"}:
        return None
    return ToolCallContent(call_id=call_id, name=name, arguments=json.dumps(arguments))


class HeldText:
    """Holds back streamed text while it may still be a tool call written as text."""

    __slots__ = ("_held", "_holding")

    def __init__(self) -> None:
        self._held: list[str] = []
        self._holding = True

    def feed(self, piece: str) -> str:
        """The text to stream now: `piece` itself, what was held with it, or "" to wait."""
        if not self._holding:
            return piece
        self._held.append(piece)
        start = "".join(self._held).lstrip()
        if not start or any(o.startswith(start) or start.startswith(o) for o in _OPENERS):
            return ""
        return self.release()

    def release(self) -> str:
        """Stop holding; the text held so far."""
        self._holding = False
        held, self._held = "".join(self._held), []
        return held
