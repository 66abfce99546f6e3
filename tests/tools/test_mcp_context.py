"""Resources, prompts and tool-list changes of real MCP servers, over stdio and Streamable HTTP:
the test server, `mcp-server-time`, and the reference `everything` server (npm)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anyio
import pytest

from raf.errors import ToolError
from raf.tools import Tool
from raf.tools.mcp import mcp_tools
from tests.tools.mcp_served import serving_over_http, stopped

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
EVERYTHING = HERE / "js" / "node_modules" / ".bin" / "mcp-server-everything"
needs_everything = pytest.mark.skipif(
    not EVERYTHING.exists(), reason="npm ci --prefix tests/tools/js installs the everything server"
)


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Per module, not per test (tests/conftest.py): the shared sessions below are made once
    per backend."""
    return request.param


@pytest.fixture(scope="module")
async def time_tools(anyio_backend: str) -> AsyncIterator[list[Tool]]:
    """One `mcp-server-time` session per backend (a start costs ~2 CPU-s) for the tests that
    only call its tools: prefixed, with its (empty) resources and prompts."""
    async with mcp_tools(TIME_SERVER, prefix="time_", resources=True, prompts=True) as tools:
        yield tools


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@asynccontextmanager
async def _serving(
    argv: Sequence[str], ready: bytes, env: dict[str, str] | None = None
) -> AsyncIterator[anyio.abc.Process]:
    """A real server process, yielded once its log says it listens; killed on leaving."""
    process = await anyio.open_process(
        list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    try:
        assert process.stderr is not None
        seen = b""
        with anyio.fail_after(20):
            async for chunk in process.stderr:
                seen += chunk
                if ready in seen:
                    break
        assert ready in seen, seen.decode(errors="replace")
        yield process
    finally:
        with suppress(ProcessLookupError):  # a test may have killed it already
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.wait()


def _by_name(tools: Sequence[Tool]) -> dict[str, Tool]:
    return {t.name: t for t in tools}


async def _check_test_server(target: object) -> None:
    session = mcp_tools(target, resources=True, prompts=True, max_output_chars=1_000)
    with anyio.fail_after(30):
        async with session as tools:
            by_name = _by_name(tools)
            assert {"list_resources", "read_resource", "list_prompts", "get_prompt"} <= set(by_name)
            listing = await by_name["list_resources"].call("{}")
            assert listing.text.startswith("note://big (big, text/plain)")
            big = await by_name["read_resource"].call('{"uri": "note://big"}')
            assert not big.is_error and len(big.text) < 1_200 and big.text.startswith("xxx")
            missing = await by_name["read_resource"].call('{"uri": "note://none"}')
            assert missing.is_error and "MCP server" in missing.text
            long_uri = await by_name["read_resource"].call(json.dumps({"uri": "a" * 5000}))
            assert long_uri.is_error and "at most 2,000 characters" in long_uri.text
            prompts = await by_name["list_prompts"].call("{}")
            assert prompts.text == "greet(name): Greet someone by name."
            greeting = await by_name["get_prompt"].call(
                '{"name": "greet", "arguments": {"name": "Ada"}}'
            )
            assert greeting.text == "[Greet someone by name.]\nuser: Say hello to Ada."
            assert "double" not in by_name
            assert (await by_name["grow"].call("{}")).text == "grown"
            while "double" not in _by_name(session.tools):
                await session.tools_changed()
            assert tools is session.tools
            double = _by_name(tools)["double"]
            assert (await double.call('{"x": 21}')).text == "42"


async def test_resources_prompts_and_tool_changes_of_the_test_server_over_stdio(
    mcp_server: list[str],
) -> None:
    await _check_test_server(mcp_server)


async def test_resources_prompts_and_tool_changes_of_the_test_server_over_http(
    mcp_server: list[str],
) -> None:
    async with serving_over_http(mcp_server) as (url, _):
        await _check_test_server(url)


async def test_the_mcp_server_time_package_over_stdio(time_tools: list[Tool]) -> None:
    names = [t.name for t in time_tools]
    assert {"time_get_current_time", "time_convert_time"} <= set(names)
    get_time = time_tools[names.index("time_get_current_time")]
    with anyio.fail_after(30):
        result = await get_time.call(json.dumps({"timezone": "Europe/Oslo"}))
        bad = await get_time.call(json.dumps({"timezone": "Mars/Olympus"}))
    assert not result.is_error
    assert json.loads(result.text)["timezone"] == "Europe/Oslo"
    assert bad.is_error


async def test_mcp_server_time_has_neither_resources_nor_prompts(time_tools: list[Tool]) -> None:
    by_name = _by_name(time_tools)
    assert {"time_get_current_time", "time_convert_time"} <= set(by_name)
    with anyio.fail_after(30):
        assert (await by_name["time_list_resources"].call("{}")).text == "(no resources)"
        assert (await by_name["time_list_prompts"].call("{}")).text == "(no prompts)"
        missing = await by_name["time_get_prompt"].call('{"name": "time"}')
    assert missing.is_error and "could not give the prompt 'time'" in missing.text


async def test_a_server_tool_clashing_with_the_resource_tools_is_a_value_error() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("clash")

    @server.tool()
    def read_resource() -> str:
        """Shadow the resource tool."""
        return ""

    with pytest.raises(ValueError, match="both become 'read_resource'"):
        async with mcp_tools(server, resources=True):
            pass


async def _check_everything(target: object) -> None:
    session = mcp_tools(target, resources=True, prompts=True, timeout=20)
    with anyio.fail_after(30):
        async with session as tools:
            by_name = _by_name(tools)
            assert (await by_name["echo"].call('{"message": "hi"}')).text == "Echo: hi"
            listing = (await by_name["list_resources"].call("{}")).text
            assert "demo://resource/static/document/features.md" in listing
            assert "demo://resource/dynamic/text/{resourceId} (template, " in listing
            doc = await by_name["read_resource"].call(
                '{"uri": "demo://resource/static/document/features.md"}'
            )
            assert "# Everything Server - Features" in doc.text
            blob = await by_name["read_resource"].call('{"uri": "demo://resource/dynamic/blob/1"}')
            assert "binary" in blob.text and "not shown" in blob.text
            prompts = (await by_name["list_prompts"].call("{}")).text
            assert "args-prompt(city, state?)" in prompts
            asked = await by_name["get_prompt"].call(
                '{"name": "args-prompt", "arguments": {"city": "Oslo"}}'
            )
            assert asked.text.startswith("user: ") and "Oslo" in asked.text
            bad = await by_name["get_prompt"].call('{"name": "no-such-prompt"}')
            assert bad.is_error and "mcp-servers/everything" not in bad.text
            # The server registers more tools once initialized and says so.
            while "simulate-research-query" not in _by_name(session.tools):
                await session.tools_changed()


@needs_everything
async def test_the_everything_server_over_stdio() -> None:
    await _check_everything([str(EVERYTHING), "stdio"])


@needs_everything
# On trio, mcp's Streamable HTTP client leaves httpx2's SSE async generators to the garbage
# collector when the server's standalone stream is open (the everything server opens one).
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_the_everything_server_over_http() -> None:
    port = _free_port()
    env = {**os.environ, "PORT": str(port)}
    argv = [str(EVERYTHING), "streamableHttp"]
    async with _serving(argv, b"listening on port", env):
        await _check_everything(f"http://127.0.0.1:{port}/mcp")


async def test_a_streamable_http_server_that_dies_gives_error_results(
    mcp_server: list[str],
) -> None:
    async with serving_over_http(mcp_server) as (url, server):
        with anyio.fail_after(30):
            async with mcp_tools(url, timeout=10) as tools:
                by_name = _by_name(tools)
                assert (await by_name["add"].call('{"a": 1, "b": 2}')).text == "3"
                await stopped(server)
                after = await by_name["add"].call('{"a": 1, "b": 2}')
                assert after.is_error and "of MCP server" in after.text
                again = await by_name["add"].call('{"a": 1, "b": 2}')
                assert again.is_error


async def test_a_streamable_http_server_dying_mid_call_gives_an_error_result(
    mcp_server: list[str],
) -> None:
    async with serving_over_http(mcp_server) as (url, _):
        with anyio.fail_after(30):
            async with mcp_tools(url, timeout=10) as tools:
                died = await _by_name(tools)["die_now"].call("{}")
    assert died.is_error and "of MCP server" in died.text


async def test_an_unreachable_streamable_http_server_is_a_tool_error_naming_it() -> None:
    url = f"http://127.0.0.1:{_free_port()}/mcp"
    with anyio.fail_after(30), pytest.raises(ToolError) as caught:
        async with mcp_tools(url, timeout=10):
            pass
    assert f"cannot connect to MCP server {url!r}" in str(caught.value)
