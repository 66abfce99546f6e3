"""Adapters: typed roles on a ReAct loop, a single structured call, any agent, plain code
(`create_tool_role`) or a command-line coding agent (`create_command_role`).

Example:
    >>> import anyio
    >>> from pydantic import BaseModel
    >>> from raf.adapters import ThreadContext, create_llm_adapter
    >>> from raf.testing.script import text
    >>> from raf.testing.scripted_provider import ScriptedProvider
    >>> class Title(BaseModel):
    ...     title: str
    >>> namer = create_llm_adapter(ScriptedProvider([text('{"title": "Dawn"}')]))("Name it.", Title)
    >>> anyio.run(namer, ThreadContext(thread_id="t")).title
    'Dawn'
"""

from raf.adapters.agent import agent_to_adapter as agent_to_adapter
from raf.adapters.binding import AdapterBinding as AdapterBinding
from raf.adapters.command import create_command_role as create_command_role
from raf.adapters.llm import create_llm_adapter as create_llm_adapter
from raf.adapters.react import ToolHandler as ToolHandler
from raf.adapters.react import create_react_adapter as create_react_adapter
from raf.adapters.structured import response_format as response_format
from raf.adapters.structured import structured_call as structured_call
from raf.adapters.thread import AdapterFn as AdapterFn
from raf.adapters.thread import ResultAdapterFn as ResultAdapterFn
from raf.adapters.thread import RoleFn as RoleFn
from raf.adapters.thread import RoleResult as RoleResult
from raf.adapters.thread import Step as Step
from raf.adapters.thread import ThreadContext as ThreadContext
from raf.adapters.thread import thread_messages as thread_messages
from raf.adapters.tool_role import create_tool_role as create_tool_role

__all__ = [
    "AdapterBinding",
    "AdapterFn",
    "ResultAdapterFn",
    "RoleFn",
    "RoleResult",
    "Step",
    "ThreadContext",
    "ToolHandler",
    "agent_to_adapter",
    "create_command_role",
    "create_llm_adapter",
    "create_react_adapter",
    "create_tool_role",
    "response_format",
    "structured_call",
    "thread_messages",
]
