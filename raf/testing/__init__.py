"""Test doubles for whole agent trees: scripted models, in process or over HTTP.

`ScriptedProvider` plays a script as an `LlmProvider`; `ScriptedOpenAIServer` serves the same
script as an OpenAI-compatible HTTP endpoint for the real `openai` client. A script is a list
of turns (`text`, `tool_calls`, `resolve`, `error`) played in order, or a function from the
request's messages to a turn. `Recording` records the model traffic of a whole tree against a
real endpoint and replays it offline. The server and the recorder load on first use, so
`from raf.testing import ScriptedProvider` does not import the `openai` client.

Example:
    >>> import anyio
    >>> from raf import ReactAgent
    >>> provider = ScriptedProvider([text("Hello there")])
    >>> agent = ReactAgent("greeter", provider, "Greet.")
    >>> anyio.run(lambda: agent.run("hi").collect()).text
    'Hello there'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raf._lazy import lazy_exports
from raf.errors import ScriptExhausted as ScriptExhausted
from raf.testing.quirks import Quirks as Quirks
from raf.testing.script import Turn as Turn
from raf.testing.script import error as error
from raf.testing.script import resolve as resolve
from raf.testing.script import text as text
from raf.testing.script import tool_calls as tool_calls
from raf.testing.scripted_provider import ScriptedProvider as ScriptedProvider

if TYPE_CHECKING:
    from raf.testing.recording import Recording as Recording
    from raf.testing.server import ScriptedOpenAIServer as ScriptedOpenAIServer

# The HTTP server pulls in the openai client's types; tests of in-process agents never need it.
_LAZY: dict[str, str] = {
    "Recording": "raf.testing.recording",
    "ScriptedOpenAIServer": "raf.testing.server",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

__all__ = [
    "Quirks",
    "Recording",
    "ScriptedProvider",
    "ScriptedOpenAIServer",
    "Turn",
    "text",
    "tool_calls",
    "resolve",
    "error",
    "ScriptExhausted",
]
