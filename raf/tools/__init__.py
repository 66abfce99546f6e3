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

from raf.tools.cancellation import check_not_cancelled as check_not_cancelled
from raf.tools.definition import ToolDefinition as ToolDefinition
from raf.tools.handler import tool_handler as tool_handler
from raf.tools.tool import DEFAULT_MAX_OUTPUT_CHARS as DEFAULT_MAX_OUTPUT_CHARS
from raf.tools.tool import Tool as Tool
from raf.tools.tool import ToolResult as ToolResult
from raf.tools.tool import tool as tool
from raf.tools.workspace import Workspace as Workspace
from raf.tools.workspace import workspace_tools as workspace_tools

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
