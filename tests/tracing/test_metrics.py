"""`gen_ai.client.token.usage` and `gen_ai.client.operation.duration` of traced model calls."""

from __future__ import annotations

import pytest

from raf import ReactAgent
from raf.errors import ProviderError
from raf.testing import ScriptedProvider, error, text, tool_calls
from raf.tools import tool
from tests.tracing.support import recording

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_each_model_call_records_its_tokens_and_its_duration() -> None:
    script = [tool_calls(("add", {"a": 1, "b": 2}), usage=(10, 4)), text("3", usage=(20, 1))]
    agent = ReactAgent("calc", ScriptedProvider(script), "Add.", tools=[add])
    with recording() as recorded:
        await agent.run("1 + 2?")
        tokens = recorded.points("gen_ai.client.token.usage")
        durations = recorded.points("gen_ai.client.operation.duration")
    by_type = {p.attributes["gen_ai.token.type"]: p for p in tokens}
    assert (by_type["input"].sum, by_type["input"].count) == (30, 2)
    assert (by_type["output"].sum, by_type["output"].count) == (5, 2)
    assert by_type["input"].attributes["gen_ai.operation.name"] == "chat"
    assert by_type["input"].attributes["gen_ai.request.model"] == "scripted"
    assert "raf.agent.path" not in by_type["input"].attributes  # metrics stay low-cardinality
    # The conventions' advised buckets.
    assert tuple(by_type["input"].explicit_bounds)[:3] == (1, 4, 16)
    (duration,) = durations
    assert duration.count == 2 and duration.sum > 0
    assert "error.type" not in duration.attributes


async def test_a_failed_model_call_records_its_duration_with_the_error_type() -> None:
    agent = ReactAgent("broken", ScriptedProvider([error(status=400)]), "Fail.")
    with recording() as recorded:
        with pytest.raises(ProviderError):
            await agent.run("hi")
        durations = recorded.points("gen_ai.client.operation.duration")
        tokens = recorded.points("gen_ai.client.token.usage")
    (duration,) = durations
    assert duration.attributes["error.type"] == "ProviderError"
    assert tokens == []
