"""`ToolDefinition`: the plain schema of a tool as models see it.

Defined below the core (`raf._tool_data`), whose `RunOptions.client_tools` names it.

Example:
    >>> d = ToolDefinition(name="add", description="Add two numbers.", parameters={"type": "object"})
    >>> d.to_openai()["function"]["name"]
    'add'
"""

from __future__ import annotations

from raf._tool_data import ToolDefinition as ToolDefinition

__all__ = ["ToolDefinition"]
