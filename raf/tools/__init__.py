"""Tools a model can call: `@tool`, `Tool`, `ToolResult`, `ToolDefinition`, and `Workspace`
(read, write, patch, list, search files; run commands).

Example:
    >>> from raf.tools import tool
    >>> @tool
    ... def shout(text: str) -> str:
    ...     '''Say it louder.'''
    ...     return text.upper()
    >>> shout.definition.to_openai()["function"]["description"]
    'Say it louder.'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raf._lazy import lazy_exports
from raf.tools.cancellation import check_not_cancelled as check_not_cancelled
from raf.tools.definition import ToolDefinition as ToolDefinition
from raf.tools.handler import tool_handler as tool_handler
from raf.tools.tool import DEFAULT_MAX_OUTPUT_CHARS as DEFAULT_MAX_OUTPUT_CHARS
from raf.tools.tool import Tool as Tool
from raf.tools.tool import ToolResult as ToolResult
from raf.tools.tool import tool as tool

if TYPE_CHECKING:
    from raf.tools.workspace import Workspace as Workspace
    from raf.tools.workspace import workspace_tools as workspace_tools

# The workspace's tools (shell, patch, the RE2 search) load on first use: an agent with tools
# of its own, or a provider needing `ToolDefinition`, does not map them (about 3.5 MiB).
_LAZY: dict[str, str] = {
    "Workspace": "raf.tools.workspace",
    "workspace_tools": "raf.tools.workspace",
}

__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "Tool",
    "ToolDefinition",
    "ToolResult",
    "Workspace",
    "check_not_cancelled",
    "tool",
    "tool_handler",
    "workspace_tools",
]
