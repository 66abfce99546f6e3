"""`raf demo` on a real OpenAI-compatible endpoint (here: the scripted server over HTTP)."""

from __future__ import annotations

import socket

import pytest
from rich.console import Console

from raf.cli.demo import run_demo
from raf.messages import ChatMessage
from raf.providers.openai import LOCAL_API_KEY
from raf.testing import Quirks, ScriptedOpenAIServer, Turn, error, text, tool_calls
from tests.cli.support import RafCommand
from tests.helpers import endpoint_in_thread

TOOLS = {  # how each tool-using agent's instructions begin, and its tool
    "Find the sights": "find_sights",
    "Estimate the cost": "estimate_cost",
    "Get the weekend forecast": "forecast",
}
ARGS = {
    "find_sights": {"city": "Porto"},
    "estimate_cost": {"days": 3},
    "forecast": {"city": "Porto"},
}


def endpoint(messages: list[ChatMessage]) -> Turn:
    """Answers like a model would: call the agent's tool once, then sum it up."""
    instructions = messages[0].text
    tool = next((t for start, t in TOOLS.items() if instructions.startswith(start)), None)
    if tool is not None and messages[-1].role != "tool":
        return tool_calls((tool, ARGS[tool]))
    return text(f"done: {messages[-1].text or 'tool used'}"[:60])


@pytest.mark.anyio
async def test_demo_uses_the_configured_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    console = Console(record=True, width=120, color_system=None)
    async with ScriptedOpenAIServer(endpoint) as server:
        base_url = server.base_url
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("RAF_MODEL", "demo-model")
        assert await run_demo(console, "A weekend in Porto.") == 0
    out = console.export_text()
    assert "find_sights ✓" in out and "estimate_cost ✓" in out and "forecast ✓" in out
    assert {r.body["model"] for r in server.requests} == {"demo-model"}
    assert f"model: demo-model at {base_url}" in out
    assert len(server.requests) == 7  # three agents with a tool round, and the packer


@pytest.mark.anyio
async def test_demo_agents_call_their_tools_on_a_local_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A small local model behind llama.cpp: tool calls come as text, trailing assistant
    # messages are continued.
    console = Console(record=True, width=120, color_system=None)
    quirks = Quirks(tool_calls_as_text="tags", prefill=True)
    async with ScriptedOpenAIServer(endpoint, quirks=quirks) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        assert await run_demo(console, "A weekend in Porto.") == 0
    out = console.export_text()
    assert "find_sights ✓" in out and "estimate_cost ✓" in out and "forecast ✓" in out
    assert all(r.body["messages"][-1]["role"] != "assistant" for r in server.requests)


def test_raf_demo_runs_on_a_local_server_with_a_base_url_alone(raf: RafCommand) -> None:
    # `OPENAI_BASE_URL=... raf demo`, as docs/local-models.md says: no key set at all.
    with endpoint_in_thread(endpoint) as server:
        base_url = server.base_url
        env = {"OPENAI_BASE_URL": base_url, "RAF_MODEL": "local-model"}
        done = raf("demo", "A weekend in Porto.", env=env)
    assert done.status == 0, done.err
    assert "find_sights ✓" in done.out and "forecast ✓" in done.out
    assert f"model: local-model at {base_url}" in done.out
    assert "Traceback" not in done.err
    assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {LOCAL_API_KEY}"}
    assert {r.body["model"] for r in server.requests} == {"local-model"}


def test_raf_demo_on_a_dead_endpoint_says_so_in_one_line_and_exits_2(raf: RafCommand) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = raf("demo", env={"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"})
    assert done.status == 2
    errors = [line for line in done.err.splitlines() if not line.startswith("model '")]
    assert len(errors) == 1 and errors[0].startswith("ProviderError:"), done.err
    assert "could not reach" in errors[0]
    assert "Traceback" not in done.out + done.err


def test_raf_demo_with_a_refused_key_exits_2_in_one_line(raf: RafCommand) -> None:
    with endpoint_in_thread(lambda m: error(status=401)) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "wrong"}
        done = raf("demo", env=env)
    assert done.status == 2
    errors = [line for line in done.err.splitlines() if not line.startswith("model '")]
    assert len(errors) == 1 and "HTTP 401" in errors[0], done.err
    assert "Traceback" not in done.out + done.err
