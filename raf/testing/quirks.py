"""`Quirks`: ways in which OpenAI-compatible servers (llama.cpp, Ollama, vLLM) differ from OpenAI.

`ScriptedOpenAIServer(script, quirks=Quirks(...))` reproduces them, so the suite runs against
what such servers really do.

Example:
    >>> Quirks(prefill=True).prefill
    True
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

TextToolCalls = Literal["bare", "fence", "tags"]
"""How a model writes tool calls as text: bare JSON, a ```json fence, or `<tool_call>` tags."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Quirks:
    """Behaviours of OpenAI-compatible servers that OpenAI's own endpoint does not show."""

    prefill: bool = False
    """A request whose last message is `assistant` is continued, not answered: the reply is
    that message's text followed by the script's (llama.cpp by default, vLLM, Anthropic)."""
    refuse_trailing_assistants: bool = False
    """A request ending in two or more `assistant` messages is answered with HTTP 400 "Cannot
    have 2 or more assistant messages at the end of the list" (llama.cpp)."""
    tool_calls_as_text: TextToolCalls | None = None
    """Scripted tool calls are written as text in this form, as small models do."""
    repeat_tool_name: bool = False
    """Every streamed delta of a tool call carries its name again, not only the first."""
    omit_finish_reason: bool = False
    """The stream ends (with `[DONE]`) without a chunk carrying a `finish_reason`."""
    refused_response_formats: Collection[str] = ()
    """`response_format` types answered with HTTP 400 (say `("json_schema",)`)."""
