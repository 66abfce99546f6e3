"""MCP tools: the tools of a Model Context Protocol server as raf `Tool`s (`raf[mcp]`).

`mcp_tools(server)` is an async context manager: entering it connects to the server (a
command started over stdio, an in-process `MCPServer`, or a URL), lists its tools, and gives
them as `Tool`s that `ReactAgent` and `create_react_adapter` use like any other; leaving it
ends the session (and stops a stdio server). A call the server fails, a server that dies, a
call that outlives its timeout: each comes back as an error result for the model, never a
crash of the run or a hang. `resources=True` and `prompts=True` add tools that list and read
the server's resources and get its prompts; when the server says its tools changed
(`notifications/tools/list_changed`), the list is refreshed in place.

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

import logging
import re
from collections.abc import Sequence
from contextlib import AsyncExitStack, suppress
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream

from raf._streaming import single_exceptions
from raf.errors import ToolError
from raf.tools._mcp_context import (
    MAX_LISTING_PAGES,
    ServerCall,
    describe,
    prompt_tools,
    resource_tools,
    result_text,
)
from raf.tools.arguments import json_object
from raf.tools.definition import ToolDefinition
from raf.tools.tool import DEFAULT_MAX_OUTPUT_CHARS, Tool, ToolResult, log_tool_failure, truncate

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.session import IncomingMessage
    from mcp.client.stdio import StdioServerParameters
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult
    from mcp_types import Tool as McpToolInfo

    from raf.run import RunContext

__all__ = ["DEFAULT_CALL_TIMEOUT", "McpTool", "McpTools", "mcp_tools"]

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds an MCP tool call may take before it becomes an error result."""

_logger = logging.getLogger("raf")
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]")


class McpTool(Tool):
    """One tool of a connected MCP server; its schema is the server's, calls go to the server.

    Made by `mcp_tools`; valid while its `async with` block is open.
    """

    __slots__ = ("_client", "_offered", "_remote_name", "_server", "_timeout")

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
        self._offered = True
        self.fn = self._call_remote
        self.max_output_chars = max_output_chars
        # A server's idempotentHint is its own claim: a call in doubt still goes to a human.
        self.idempotent = False
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
        if not self._offered:
            return ToolResult(
                f"MCP server {self._server!r} no longer offers the tool {self._remote_name!r}; "
                "use another tool",
                is_error=True,
            )
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
                f"{describe(exc)}; the server may have stopped, so try another way",
                is_error=True,
            )
        if result is None:
            return ToolResult(
                f"tool {self.name!r} of MCP server {self._server!r} gave no answer within "
                f"{self._timeout:g} s; try again with a smaller request, or another way",
                is_error=True,
            )
        return ToolResult(truncate(result_text(result), self.max_output_chars), result.is_error)


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
        resources: bool = False,
        prompts: bool = False,
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
        self._resources = resources
        self._prompts = prompts
        self._stack: AsyncExitStack | None = None
        self._tools: list[Tool] = []
        self._changed = anyio.Event()

    @property
    def tools(self) -> list[Tool]:
        """The tools of the open session, kept current as the server's tool list changes."""
        return self._tools

    async def tools_changed(self) -> None:
        """Wait until the server's tool list has changed and `tools` has been refreshed."""
        await self._changed.wait()

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
                        await group.start(self._session, Client, target, label, stop)
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
                        f"cannot connect to MCP server {label!r}: {describe(exc)}; check the "
                        "command or URL, and that the server starts"
                    ) from exc
                self._stack = stack.pop_all()
        return self._tools

    async def _session(
        self,
        client_type: type[Client],
        target: Any,
        label: str,
        stop: anyio.Event,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Connect, list, hand the tools over, and keep the session (and the tool list
        current) until `stop`."""
        from mcp_types import ToolListChangedNotification

        # The server says its tools changed; the refresher relists (not here: this runs on
        # the session's receive loop, which must stay free to deliver the listing).
        changes, changed = anyio.create_memory_object_stream[None](1)

        async def on_message(message: IncomingMessage) -> None:
            if isinstance(message, ToolListChangedNotification):
                with suppress(anyio.WouldBlock):
                    changes.send_nowait(None)
            await anyio.lowlevel.checkpoint()

        started = False
        try:
            async with (
                changes,
                changed,
                client_type(target, message_handler=on_message) as client,
                anyio.create_task_group() as group,
            ):
                call = ServerCall(
                    client, label, timeout=self._timeout, max_output_chars=self._max_output_chars
                )
                self._tools[:] = self._build(client, await _listing(client), label, [])
                self._tools.extend(self._context_tools(client, call))
                task_status.started()
                started = True
                if _lists_changes(client):
                    group.start_soon(_listen, client, changes.clone(), label)
                group.start_soon(self._refresher, client, changed, label)
                await stop.wait()
                group.cancel_scope.cancel()
        except Exception as exc:
            if not started:
                raise
            # The session died (a server gone, a broken connection): its calls become error
            # results, and the run goes on.
            _logger.warning("MCP server %r: the session ended with %s", label, describe(exc))

    async def _refresher(
        self, client: Client, changed: anyio.abc.ObjectReceiveStream[None], label: str
    ) -> None:
        async for _ in changed:
            try:
                with anyio.fail_after(self._timeout):
                    infos = await _listing(client, refresh=True)
                remote = [t for t in self._tools if isinstance(t, McpTool)]
                tools = self._build(client, infos, label, remote)
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:
                _logger.warning(
                    "MCP server %r: its tool list changed, but relisting failed with %s; the "
                    "tools stay as they were",
                    label,
                    describe(exc),
                )
                continue
            kept = {id(t) for t in tools}
            for old in remote:
                if id(old) not in kept:
                    old._offered = False  # pyright: ignore[reportPrivateUsage]
            extras = [t for t in self._tools if not isinstance(t, McpTool)]
            self._tools[:] = [*tools, *extras]
            self._changed.set()
            self._changed = anyio.Event()

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

    def _build(
        self, client: Client, infos: list[McpToolInfo], label: str, current: list[McpTool]
    ) -> list[Tool]:
        """The tools for `infos`, keeping (with fresh definitions) those already `current`."""
        by_remote = {t._remote_name: t for t in current}  # pyright: ignore[reportPrivateUsage]
        tools: list[Tool] = []
        seen: dict[str, str] = {}
        for name in self._extra_names():
            seen[name] = name
        for info in infos:
            name = (self._prefix + _NOT_A_NAME.sub("_", info.name))[:64]
            if name in seen:
                raise ValueError(
                    f"MCP server {label!r} has tools {seen[name]!r} and {info.name!r}, which "
                    f"both become {name!r}; raf tool names hold only letters, digits, '_' and '-'"
                )
            seen[name] = info.name
            fresh = McpTool(
                client,
                info,
                server=label,
                name=name,
                timeout=self._timeout,
                max_output_chars=self._max_output_chars,
            )
            old = by_remote.get(info.name)
            if old is not None and old.name == name:
                old.definition = fresh.definition
                fresh = old
            tools.append(fresh)
        return tools

    def _extra_names(self) -> list[str]:
        names: list[str] = []
        if self._resources:
            names += ["list_resources", "read_resource"]
        if self._prompts:
            names += ["list_prompts", "get_prompt"]
        return [(self._prefix + name)[:64] for name in names]

    def _context_tools(self, client: Client, call: ServerCall) -> list[Tool]:
        capabilities = client.server_capabilities
        tools: list[Tool] = []
        if self._resources and capabilities.resources is not None:
            tools += resource_tools(call, self._prefix)
        if self._prompts and capabilities.prompts is not None:
            tools += prompt_tools(call, self._prefix)
        return tools

    def __repr__(self) -> str:
        return f"mcp_tools({_label(self._server)!r})"


def mcp_tools(
    server: MCPServer | StdioServerParameters | Sequence[str] | str | Any,
    *,
    prefix: str = "",
    timeout: float = DEFAULT_CALL_TIMEOUT,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    resources: bool = False,
    prompts: bool = False,
) -> McpTools:
    """The tools of an MCP server, for the lifetime of an `async with` block.

    The list the block gets is kept current: when the server sends
    `notifications/tools/list_changed`, it is relisted and the list updated in place (a tool
    the server dropped answers with an error result). An agent built earlier keeps the tools
    it was given; `await session.tools_changed()` waits for a change.

    Args:
        server: a command to start over stdio (`["mcp-server-time"]`, or
            `mcp.client.stdio.StdioServerParameters`), an in-process
            `mcp.server.mcpserver.MCPServer`, a Streamable HTTP URL, or an `mcp` transport.
        prefix: put before every tool name (say `"time_"`), to keep servers apart.
        timeout: seconds for connecting and listing, and for each call.
        max_output_chars: results (and resources read) longer than this are truncated with a
            note.
        resources: add `list_resources` and `read_resource` tools, when the server has
            resources.
        prompts: add `list_prompts` and `get_prompt` tools, when the server has prompts.

    Raises:
        ImportError: when `mcp` is not installed (`pip install 'raf[mcp]'`).
        ValueError: on a bad prefix or timeout, or two tools whose names become the same.
        ToolError: on entering, naming the server, when it cannot be started or reached, or
            does not connect and list its tools within `timeout`.

    Example:
        >>> async def main(agent_factory):
        ...     async with mcp_tools(["mcp-server-time"], prefix="time_") as tools:
        ...         return await agent_factory(tools).run("What time is it in Oslo?").collect()
    """
    return McpTools(
        server,
        prefix=prefix,
        timeout=timeout,
        max_output_chars=max_output_chars,
        resources=resources,
        prompts=prompts,
    )


async def _listing(client: Client, *, refresh: bool = False) -> list[McpToolInfo]:
    infos: list[McpToolInfo] = []
    cursor: str | None = None
    for _ in range(MAX_LISTING_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh" if refresh else "use")
        infos.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return infos


def _lists_changes(client: Client) -> bool:
    """Whether the server's tool-list changes come through `subscriptions/listen` (from the
    2026-07-28 protocol on; before, they come as notifications on the session)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    tools = client.server_capabilities.tools
    return (
        tools is not None
        and bool(tools.list_changed)
        and client.protocol_version in MODERN_PROTOCOL_VERSIONS
    )


async def _listen(client: Client, changes: MemoryObjectSendStream[None], label: str) -> None:
    async with changes:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _ in subscription:
                    with suppress(anyio.WouldBlock):
                        changes.send_nowait(None)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            _logger.warning(
                "MCP server %r: listening for tool-list changes ended with %s", label, describe(exc)
            )


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
