"""`tool_handler`: the `Tool`s of raf as the `(name, arguments) -> text` handler of an adapter.

Example:
    >>> import anyio
    >>> from raf.tools import tool
    >>> @tool
    ... def shout(text: str) -> str:
    ...     '''Say it louder.'''
    ...     return text.upper()
    >>> handler = tool_handler([shout])
    >>> anyio.run(handler, "shout", '{"text": "hi"}')
    'HI'
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from raf.errors import ToolError
from raf.tools.tool import Tool

__all__ = ["tool_handler"]


def tool_handler(tools: Sequence[Tool]) -> Callable[[str, str], Awaitable[str]]:
    """A handler for `create_react_adapter` that runs `tools` by name.

    Pass `[t.definition for t in tools]` as the adapter's tool definitions. A call whose
    result is an error raises `ToolError` with the result's text, which the adapter hands to
    the model as an error result.

    Raises:
        ValueError: when two tools share a name.
    """
    by_name: dict[str, Tool] = {}
    for item in tools:
        if item.name in by_name:
            raise ValueError(f"tool_handler: two tools are named {item.name!r}")
        by_name[item.name] = item

    async def handle(name: str, arguments: str) -> str:
        found = by_name.get(name)
        if found is None:
            raise ToolError(f"unknown tool {name!r}; the tools are: {', '.join(sorted(by_name))}")
        result = await found.call(arguments)
        if result.is_error:
            raise ToolError(result.text)
        return result.text

    return handle
