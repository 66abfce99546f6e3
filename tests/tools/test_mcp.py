from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import anyio
import pytest
from pydantic import BaseModel

from raf.adapters import ThreadContext, create_react_adapter
from raf.errors import ToolError
from raf.messages import ChatMessage
from raf.providers.openai import OpenAIProvider, create_client
from raf.react import ReactAgent
from raf.testing import ScriptedOpenAIServer, resolve, text, tool_calls
from raf.tools import ToolResult, tool_handler
from raf.tools.mcp import McpTool, mcp_tools

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer


def build() -> MCPServer:
    """The test MCP server (`tests/tools/mcp_server.py`), imported on first use: the MCP SDK's
    server costs every worker ~1.3 s to import at collection, where most never run these tests."""
    from tests.tools.mcp_server import build as server

    return server()


pytestmark = pytest.mark.anyio


async def test_an_in_process_server_s_tools_are_raf_tools() -> None:
    async with mcp_tools(build()) as tools:
        assert [t.name for t in tools] == ["add", "fail", "die_now", "grow"]
        add = tools[0]
        assert isinstance(add, McpTool)
        assert add.definition.description == "Add two numbers."
        assert add.definition.parameters["required"] == ["a", "b"]
        assert await add.call('{"a": 2, "b": 40}') == ToolResult("42")
        failed = await tools[1].call('{"reason": "disk full"}')
        assert failed == ToolResult("Error executing tool fail: disk full", is_error=True)
        bad = await add.call("[1, 2]")
        assert bad.is_error and "expected a JSON object, got list" in bad.text
        invalid = await add.call('{"a": "many"}')
        assert invalid.is_error


async def test_prefixes_keep_servers_apart() -> None:
    async with mcp_tools(build(), prefix="calc_") as tools:
        assert [t.name for t in tools] == ["calc_add", "calc_fail", "calc_die_now", "calc_grow"]
        assert (await tools[0].call('{"a": 1, "b": 1}')).text == "2"
    with pytest.raises(ValueError, match="prefix"):
        mcp_tools(build(), prefix="a.b")


async def test_a_react_agent_uses_mcp_tools_through_the_openai_client() -> None:
    script = [tool_calls(("add", {"a": 20, "b": 22}), ("fail", {"reason": "nope"})), text("42")]
    async with (
        mcp_tools(build()) as tools,
        ScriptedOpenAIServer(script) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        agent = ReactAgent("calc", OpenAIProvider(client, "scripted"), "Add.", tools=tools)
        response = await agent.run("20 + 22?").collect()
    assert response.text == "42"
    first, second = server.requests
    assert [t["function"]["name"] for t in first.body["tools"]] == [
        "add",
        "fail",
        "die_now",
        "grow",
    ]
    assert first.body["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    results = [m for m in second.body["messages"] if m["role"] == "tool"]
    assert [r["content"] for r in results] == ["42", "Error executing tool fail: nope"]


class Sum(BaseModel):
    total: int


async def test_the_react_adapter_uses_mcp_tools() -> None:
    script = [tool_calls(("add", {"a": 1, "b": 2})), resolve({"total": 3})]
    async with (
        mcp_tools(build()) as tools,
        ScriptedOpenAIServer(script) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        definitions = [t.definition for t in tools]
        adapter = create_react_adapter(
            OpenAIProvider(client, "scripted"), definitions, tool_handler(tools)
        )
        role = adapter("Add them.", Sum)
        value = await role(ThreadContext(thread_id="t", start=[ChatMessage.user("1 + 2")]))
    assert value == Sum(total=3)
    tool_message = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_message[0]["content"] == "3"


async def test_a_stdio_server_round_trips_and_its_death_is_an_error_result(
    mcp_server: list[str],
) -> None:
    with anyio.fail_after(30):
        async with mcp_tools(mcp_server) as tools:
            by_name = {t.name: t for t in tools}
            assert await by_name["add"].call('{"a": 1, "b": 2}') == ToolResult("3")
            died = await by_name["die_now"].call("{}")
            assert died.is_error and "failed" in died.text and "Connection closed" in died.text
            after = await by_name["add"].call('{"a": 1, "b": 2}')
            assert after.is_error


async def test_an_error_in_the_block_comes_out_as_itself() -> None:
    with pytest.raises(KeyError, match="mine"):
        async with mcp_tools(build()):
            raise KeyError("mine")


async def test_a_call_that_outlives_its_timeout_is_an_error_result() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("slow")

    @server.tool()
    async def wait() -> str:
        """Never answer."""
        await anyio.sleep_forever()
        return ""

    async with mcp_tools(server, timeout=0.2) as tools:
        result = await tools[0].call("{}")
    assert result.is_error and "gave no answer within 0.2 s" in result.text


async def test_a_server_that_never_answers_initialize_times_out_at_connect() -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(60)"]
    with anyio.fail_after(30), pytest.raises(ToolError, match="did not connect") as caught:
        async with mcp_tools(silent, timeout=1):
            pass
    assert "within 1 s" in str(caught.value)


async def test_a_server_exiting_at_start_is_a_plain_error_naming_it() -> None:
    broken = [sys.executable, "-c", "raise SystemExit(3)"]
    with anyio.fail_after(30), pytest.raises(ToolError, match="cannot connect to MCP server"):
        async with mcp_tools(broken, timeout=10):
            pass


async def test_a_tool_name_collision_is_a_plain_value_error() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("clash")

    @server.tool(name="a.b")
    def first() -> str:
        """One."""
        return "1"

    @server.tool(name="a_b")
    def second() -> str:
        """Two."""
        return "2"

    with pytest.raises(ValueError, match="both become 'a_b'"):
        async with mcp_tools(server):
            pass
