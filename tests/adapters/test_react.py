from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from raf.adapters import Step, ThreadContext, create_react_adapter
from raf.errors import MaxRoundsExceeded
from raf.messages import ChatMessage
from raf.react import RESOLVE_DESCRIPTION
from raf.testing.script import resolve, text, tool_calls
from raf.testing.scripted_provider import ScriptedProvider
from raf.tools import ToolDefinition

pytestmark = pytest.mark.anyio

SEARCH = ToolDefinition(
    name="search",
    description="Search the notes.",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}},
)


class Summary(BaseModel):
    points: list[str]


def thread() -> ThreadContext:
    return ThreadContext(
        thread_id="t1",
        start=[ChatMessage.user("Summarize the notes.")],
        steps=[Step(role="reader", value={"read": True})],
    )


async def test_react_adapter_runs_tools_and_returns_the_resolved_value() -> None:
    handled: list[tuple[str, str]] = []

    async def handler(name: str, arguments: str) -> str:
        handled.append((name, arguments))
        return "note: tides follow the moon"

    provider = ScriptedProvider(
        [
            tool_calls(("search", {"query": "tides"})),
            resolve({"points": ["tides follow the moon"]}),
        ]
    )
    adapter = create_react_adapter(provider, [SEARCH], handler, max_rounds=5)
    role = adapter("You summarize.", Summary)
    value = await role(thread())
    assert value == Summary(points=["tides follow the moon"])
    assert handled == [("search", '{"query": "tides"}')]
    assert provider.calls == 2
    first = provider.requests[0]
    assert first.messages[0] == ChatMessage.system("You summarize.")
    assert first.messages[1] == ChatMessage.user("Summarize the notes.")
    assert "[reader]" in first.messages[2].text
    assert [t.name for t in first.tools] == ["search", "resolve"]
    assert first.tools[1].description == RESOLVE_DESCRIPTION
    assert first.tools[1].parameters == Summary.model_json_schema()
    assert first.response_format is None


async def test_handler_failures_and_bad_calls_become_error_results() -> None:
    handled: list[str] = []

    async def handler(name: str, arguments: str) -> str:
        handled.append(arguments)
        raise RuntimeError("index offline")

    provider = ScriptedProvider(
        [
            tool_calls(
                ("search", {"query": "x"}), ("search", "{oops"), ("search", "[1]"), ("browse", {})
            ),
            text("I could not search."),
            resolve({"points": []}),
        ]
    )
    role = create_react_adapter(provider, [SEARCH], handler, max_rounds=5)("Summarize.", Summary)
    assert await role(thread()) == Summary(points=[])
    assert handled == ['{"query": "x"}']
    results = [
        c.result
        for m in provider.requests[1].messages
        for c in m.contents
        if c.type == "tool_result"
    ]
    assert results[0] == "tool 'search' raised RuntimeError: index offline"
    assert "not valid JSON" in results[1]
    assert "expected a JSON object" in results[2]
    assert "unknown tool 'browse'" in results[3] and "resolve, search" in results[3]


async def test_long_handler_output_is_truncated() -> None:
    async def handler(name: str, arguments: str) -> str:
        return "y" * 30_000

    provider = ScriptedProvider([tool_calls(("search", {})), resolve({"points": ["ok"]})])
    role = create_react_adapter(provider, [SEARCH], handler)("Summarize.", Summary)
    await role(thread())
    [result] = [
        c.result for c in provider.requests[1].messages[-1].contents if c.type == "tool_result"
    ]
    assert len(result) < 20_100 and "output truncated" in result


async def test_react_adapter_raises_max_rounds() -> None:
    async def handler(name: str, arguments: str) -> str:
        return "again"

    provider = ScriptedProvider(lambda messages: tool_calls(("search", {})))
    role = create_react_adapter(provider, [SEARCH], handler, max_rounds=2)("Summarize.", Summary)
    with pytest.raises(MaxRoundsExceeded, match="Summary role made 2 model calls"):
        await role(thread())


async def test_one_adapter_serves_roles_with_different_schemas() -> None:
    class Verdict(BaseModel):
        ok: bool

    async def handler(name: str, arguments: str) -> str:
        return ""

    provider = ScriptedProvider([resolve({"points": ["a"]}), resolve({"ok": True})])
    adapter = create_react_adapter(provider, [], handler)
    assert await adapter("Summarize.", Summary)(thread()) == Summary(points=["a"])
    assert await adapter("Judge.", Verdict)(thread()) == Verdict(ok=True)
    assert json.dumps(provider.requests[1].tools[0].parameters) == json.dumps(
        Verdict.model_json_schema()
    )


def test_bad_tool_sets_are_refused() -> None:
    async def handler(name: str, arguments: str) -> str:
        return ""

    provider = ScriptedProvider([])
    with pytest.raises(ValueError, match="reserved"):
        create_react_adapter(provider, [SEARCH.model_copy(update={"name": "resolve"})], handler)
    with pytest.raises(ValueError, match="unique"):
        create_react_adapter(provider, [SEARCH, SEARCH], handler)
    with pytest.raises(ValueError, match="max_rounds"):
        create_react_adapter(provider, [SEARCH], handler, max_rounds=0)
