"""ReAct leaf agents: `ReactAgent`, the shared loop, and the `resolve` tool.

Example:
    >>> import anyio
    >>> from raf.react import ReactAgent
    >>> from raf.testing.script import text
    >>> from raf.testing.scripted_provider import ScriptedProvider
    >>> agent = ReactAgent("greeter", ScriptedProvider([text("Hello!")]), "Greet the user.")
    >>> anyio.run(lambda: agent.run("hi").collect()).text
    'Hello!'
"""

from raf.react.agent import ReactAgent as ReactAgent
from raf.react.loop import Dispatch as Dispatch
from raf.react.loop import ReactLoop as ReactLoop
from raf.react.resolve import RESOLVE_DESCRIPTION as RESOLVE_DESCRIPTION
from raf.react.resolve import RESOLVE_TOOL_NAME as RESOLVE_TOOL_NAME
from raf.react.resolve import resolve_definition as resolve_definition

__all__ = [
    "Dispatch",
    "RESOLVE_DESCRIPTION",
    "RESOLVE_TOOL_NAME",
    "ReactAgent",
    "ReactLoop",
    "resolve_definition",
]
