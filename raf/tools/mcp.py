"""MCP tools: the tools of a Model Context Protocol server as raf `Tool`s (`raf[mcp]`).

`mcp_tools(server)` is an async context manager: entering it connects to the server (a
command started over stdio, an in-process `MCPServer`, or a URL), lists its tools, and gives
them as `Tool`s that `ReactAgent` and `create_react_adapter` use like any other; leaving it
ends the session (and stops a stdio server). A call the server fails, a server that dies, a
call that outlives its timeout: each comes back as an error result for the model, never a
crash of the run or a hang.

Example:
    >>> import anyio
    >>> from mcp.server.mcpserver import MCPServer
    >>> server = MCPServer("calc")
    >>> @server.tool()
    ... def add(a: int, b: int) -> int:
    ...     '''Add two numbers.'''
    ...     return a + b
    >>> async def main() -> str:
    ...     async with mcp_tools(server) as tools:
    ...         return (await tools[0].call('{"a": 2, "b": 3}')).text
    >>> anyio.run(main)
    '5'
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc

from raf._streaming import single_exceptions
from raf.errors import ToolError
from raf.tools.arguments import json_object
from raf.tools.definition import ToolDefinition
from raf.tools.tool import DEFAULT_MAX_OUTPUT_CHARS, Tool, ToolResult, log_tool_failure, truncate

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult, ContentBlock
    from mcp_types import Tool as McpToolInfo

    from raf.run import RunContext

__all__ = ["DEFAULT_CALL_TIMEOUT", "McpTool", "McpTools", "mcp_tools"]

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds an MCP tool call may take before it becomes an error result."""

_logger = logging.getLogger("raf")
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]")
_MAX_LISTING_PAGES = 100  # a server whose listing never ends cannot hang the connection


class McpTool(Tool):
    """One tool of a connected MCP server; its schema is the server's, calls go to the server.

    Made by `mcp_tools`; valid while its `async with` block is open.
    """

    __slots__ = ("_client", "_remote_name", "_server", "_timeout")

    def __init__(
        self,
        client: Client,
        info: McpToolInfo,
        *,
        server: str,
        name: str,
        timeout: float,
        max_output_chars: int,
    ) -> None:
        # Not `Tool.__init__`: the schema comes from the server, not from a signature.
        self._client = client
        self._remote_name = info.name
        self._server = server
        self._timeout = timeout
        self.fn = self._call_remote
        self.max_output_chars = max_output_chars
        self.definition = ToolDefinition(
            name=name,
            description=info.description or "",
            parameters=info.input_schema or {"type": "object", "properties": {}},
        )

    def __repr__(self) -> str:
        return f"McpTool(name={self.name!r}, server={self._server!r})"

    async def call(self, arguments: str, ctx: RunContext | None = None) -> ToolResult:
        """Call the tool on the server with the JSON `arguments`; failures become error results."""
        parsed = json_object(self.name, arguments)
        if isinstance(parsed, str):
            return ToolResult(parsed, is_error=True)
        return await self._call_remote(parsed)

    async def _call_remote(self, arguments: dict[str, Any]) -> ToolResult:
        result: CallToolResult | None = None
        try:
            with anyio.move_on_after(self._timeout):
                result = await self._client.call_tool(self._remote_name, arguments)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            log_tool_failure(self.name, exc)
            return ToolResult(
                f"tool {self.name!r} of MCP server {self._server!r} failed: "
                f"{_describe(exc)}; the server may have stopped, so try another way",
                is_error=True,
            )
        if result is None:
            return ToolResult(
                f"tool {self.name!r} of MCP server {self._server!r} gave no answer within "
                f"{self._timeout:g} s; try again with a smaller request, or another way",
                is_error=True,
            )
        return ToolResult(truncate(_result_text(result), self.max_output_chars), result.is_error)


class McpTools:
    """The session with one MCP server: `async with` it for the server's tools as `Tool`s.

    Made by `mcp_tools`; see there.
    """

    def __init__(
        self,
        server: MCPServer | StdioServerParameters | Sequence[str] | str | Any,
        *,
        prefix: str = "",
        timeout: float = DEFAULT_CALL_TIMEOUT,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"mcp_tools: timeout must be positive, not {timeout}")
        if prefix and _NOT_A_NAME.search(prefix):
            raise ValueError(
                f"mcp_tools: prefix {prefix!r} may hold only letters, digits, '_' and '-'"
            )
        self._server = server
        self._prefix = prefix
        self._timeout = timeout
        self._max_output_chars = max_output_chars
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> list[Tool]:
        try:
            from mcp import Client
        except ImportError as error:
            raise ImportError("MCP tools need the mcp package: pip install 'raf[mcp]'") from error
        if self._stack is not None:
            raise RuntimeError("this mcp_tools session is already open; make another one")
        label = _label(self._server)
        target = _target(self._server)
        with single_exceptions():  # a failed connect raises one error, not a group
            async with AsyncExitStack() as stack:
                group = await stack.enter_async_context(anyio.create_task_group())
                stop = anyio.Event()
                stack.callback(stop.set)  # leaving ends the session task, then the group joins it
                try:
                    with single_exceptions(), anyio.fail_after(self._timeout):
                        tools = await group.start(self._session, Client, target, label, stop)
                except TimeoutError:
                    raise ToolError(
                        f"MCP server {label!r} did not connect and list its tools within "
                        f"{self._timeout:g} s; check that it runs and speaks MCP, or give a larger "
                        "timeout"
                    ) from None
                except (ValueError, ToolError, anyio.get_cancelled_exc_class()):
                    raise
                except Exception as exc:
                    raise ToolError(
                        f"cannot connect to MCP server {label!r}: {_describe(exc)}; check the "
                        "command or URL, and that the server starts"
                    ) from exc
                self._stack = stack.pop_all()
        return tools

    async def _session(
        self,
        client_type: type[Client],
        target: Any,
        label: str,
        stop: anyio.Event,
        *,
        task_status: anyio.abc.TaskStatus[list[Tool]] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Connect, list, hand the tools over, and keep the session until `stop`."""
        started = False
        try:
            async with client_type(target) as client:
                tools = self._tools(client, await _listing(client), label)
                task_status.started(tools)
                started = True
                await stop.wait()
        except Exception as exc:
            if not started:
                raise
            # The session died (a server gone, a broken connection): its calls become error
            # results, and the run goes on.
            _logger.warning("MCP server %r: the session ended with %s", label, _describe(exc))

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        if stack is None:
            return
        # The client's task group wraps what the block raised: let it out as itself.
        with single_exceptions():
            await stack.__aexit__(exc_type, exc, traceback)

    def _tools(self, client: Client, infos: list[McpToolInfo], label: str) -> list[Tool]:
        tools: list[Tool] = []
        seen: dict[str, str] = {}
        for info in infos:
            name = (self._prefix + _NOT_A_NAME.sub("_", info.name))[:64]
            if name in seen:
                raise ValueError(
                    f"MCP server {label!r} has tools {seen[name]!r} and {info.name!r}, which "
                    f"both become {name!r}; raf tool names hold only letters, digits, '_' and '-'"
                )
            seen[name] = info.name
            tools.append(
                McpTool(
                    client,
                    info,
                    server=label,
                    name=name,
                    timeout=self._timeout,
                    max_output_chars=self._max_output_chars,
                )
            )
        return tools

    def __repr__(self) -> str:
        return f"mcp_tools({_label(self._server)!r})"


def mcp_tools(
    server: MCPServer | StdioServerParameters | Sequence[str] | str | Any,
    *,
    prefix: str = "",
    timeout: float = DEFAULT_CALL_TIMEOUT,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
) -> McpTools:
    """The tools of an MCP server, for the lifetime of an `async with` block.

    Args:
        server: a command to start over stdio (`["mcp-server-time"]`, or
            `mcp.client.stdio.StdioServerParameters`), an in-process
            `mcp.server.mcpserver.MCPServer`, a Streamable HTTP URL, or an `mcp` transport.
        prefix: put before every tool name (say `"time_"`), to keep servers apart.
        timeout: seconds for connecting and listing, and for each call.
        max_output_chars: results longer than this are truncated with a note.

    Raises:
        ImportError: when `mcp` is not installed (`pip install 'raf[mcp]'`).
        ValueError: on a bad prefix or timeout, or two tools whose names become the same.

    Example:
        >>> async def main(agent_factory):
        ...     async with mcp_tools(["mcp-server-time"], prefix="time_") as tools:
        ...         return await agent_factory(tools).run("What time is it in Oslo?").collect()
    """
    return McpTools(server, prefix=prefix, timeout=timeout, max_output_chars=max_output_chars)


async def _listing(client: Client) -> list[McpToolInfo]:
    infos: list[McpToolInfo] = []
    cursor: str | None = None
    for _ in range(_MAX_LISTING_PAGES):
        page = await client.list_tools(cursor=cursor)
        infos.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return infos


def _target(server: Any) -> Any:
    """What `mcp.Client` takes: an argv list becomes stdio server parameters."""
    if isinstance(server, list | tuple):
        from mcp.client.stdio import StdioServerParameters

        argv = [str(part) for part in cast(Sequence[object], server)]
        if not argv:
            raise ValueError("mcp_tools: the server command is empty; give a program to start")
        return StdioServerParameters(command=argv[0], args=argv[1:])
    return server


def _label(server: Any) -> str:
    """A short name of the server for messages."""
    if isinstance(server, str):
        return server
    if isinstance(server, list | tuple):
        return " ".join(str(part) for part in cast(Sequence[object], server))
    command = getattr(server, "command", None)
    if isinstance(command, str):
        args: list[str] = getattr(server, "args", [])
        return " ".join([command, *args])
    name = getattr(server, "name", None)
    return name if isinstance(name, str) else type(server).__name__


def _result_text(result: CallToolResult) -> str:
    parts = [_content_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, default=str))
    return "\n".join(parts)


def _content_text(block: ContentBlock) -> str:
    kind = block.type
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        mime = getattr(block, "mime_type", "?")
        return f"[{kind} content of type {mime}, not shown]"
    if kind == "resource_link":
        return f"[resource {getattr(block, 'uri', '?')}]"
    resource = getattr(block, "resource", None)
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return text
    return f"[resource {getattr(resource, 'uri', '?')}, binary, not shown]"


def _describe(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"
