from __future__ import annotations

import json
import math

import anyio
import pydantic_core
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from raf.errors import MaxRoundsExceeded
from raf.messages import ChatMessage
from raf.react import RESOLVE_DESCRIPTION, ReactAgent
from raf.react.resolve import CORRECTION_TEXT
from raf.testing.script import resolve, text, tool_calls
from raf.testing.scripted_provider import ScriptedProvider
from raf.tools import tool
from raf.updates import MessageCompleted, ToolCalled

pytestmark = pytest.mark.anyio


class Forecast(BaseModel):
    city: str
    degrees: float = Field(description="Temperature in Celsius.")


@tool
def lookup(city: str) -> str:
    """Look up the weather."""
    return f"{city}: 21 degrees"


def tool_results(messages: list[ChatMessage]) -> list[tuple[str, bool]]:
    return [(c.result, c.is_error) for m in messages for c in m.contents if c.type == "tool_result"]


async def test_valid_resolve_gives_the_value_and_a_json_message() -> None:
    provider = ScriptedProvider(
        [tool_calls(("lookup", {"city": "Oslo"})), resolve({"city": "Oslo", "degrees": 21})]
    )
    agent = ReactAgent("weather", provider, "Forecast.", tools=[lookup], output_schema=Forecast)
    run = agent.run("Oslo?")
    async with run as updates:
        items = [u async for u in updates]
    response = run.response
    assert response is not None
    assert response.value == Forecast(city="Oslo", degrees=21)
    assert [m.role for m in response.messages] == [
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert response.messages[2].tool_calls[0].name == "resolve"
    assert tool_results(response.messages[3:4]) == [("Output accepted.", False)]
    final = response.messages[-1]
    assert final.author == "weather"
    assert Forecast.model_validate_json(final.text) == response.value
    completed = [u.message for u in items if isinstance(u, MessageCompleted)]
    assert completed[-1] == final
    resolve_tool = provider.requests[0].tools[-1]
    assert resolve_tool.name == "resolve"
    assert resolve_tool.description == RESOLVE_DESCRIPTION
    assert resolve_tool.parameters == Forecast.model_json_schema()
    assert agent.metadata.output_schema == Forecast.model_json_schema()
    assert agent.schema is Forecast


async def test_invalid_resolve_arguments_go_back_as_an_error_and_the_loop_continues() -> None:
    provider = ScriptedProvider(
        [
            resolve({"city": "Oslo", "degrees": "warm"}),
            resolve("{broken"),
            resolve({"city": "Oslo", "degrees": 21.5}),
        ]
    )
    agent = ReactAgent("weather", provider, "Forecast.", output_schema=Forecast)
    run = agent.run("Oslo?")
    async with run as updates:
        called = [u async for u in updates if isinstance(u, ToolCalled)]
    assert [c.is_error for c in called] == [True, True, False]
    assert "degrees: Input should be a valid number" in called[0].result
    assert "call resolve again" in called[0].result
    assert "Invalid JSON" in called[1].result
    assert run.response is not None and run.response.value == Forecast(city="Oslo", degrees=21.5)


async def test_plain_text_gets_a_correction_that_stays_out_of_the_response() -> None:
    provider = ScriptedProvider(
        [text("It is warm in Oslo."), resolve({"city": "Oslo", "degrees": 25})]
    )
    agent = ReactAgent("weather", provider, "Forecast.", output_schema=Forecast)
    response = await agent.run("Oslo?").collect()
    assert provider.requests[1].messages[-1] == ChatMessage.user(CORRECTION_TEXT)
    assert "resolve" in CORRECTION_TEXT
    assert ChatMessage.user(CORRECTION_TEXT) not in response.messages
    assert response.messages[0].text == "It is warm in Oslo."
    assert response.value == Forecast(city="Oslo", degrees=25)


async def test_resolve_next_to_another_tool_runs_both() -> None:
    provider = ScriptedProvider(
        [tool_calls(("lookup", {"city": "Rome"}), ("resolve", {"city": "Rome", "degrees": 30}))]
    )
    agent = ReactAgent("weather", provider, "Forecast.", tools=[lookup], output_schema=Forecast)
    response = await agent.run("Rome?").collect()
    assert response.value == Forecast(city="Rome", degrees=30)
    assert tool_results(response.messages) == [
        ("Rome: 21 degrees", False),
        ("Output accepted.", False),
    ]
    assert provider.calls == 1


async def test_only_the_first_valid_resolve_of_a_turn_counts() -> None:
    provider = ScriptedProvider(
        [
            tool_calls(
                ("resolve", {"city": 1}),
                ("resolve", {"city": "Rome", "degrees": 30}),
                ("resolve", {"city": "Paris", "degrees": 10}),
            )
        ]
    )
    agent = ReactAgent("weather", provider, "Forecast.", output_schema=Forecast)
    response = await agent.run("?").collect()
    assert response.value == Forecast(city="Rome", degrees=30)
    assert [e for _, e in tool_results(response.messages)] == [True, False, True]


async def test_never_resolving_raises_max_rounds() -> None:
    provider = ScriptedProvider(lambda messages: text("I refuse."))
    agent = ReactAgent("weather", provider, "Forecast.", output_schema=Forecast, max_rounds=3)
    with pytest.raises(MaxRoundsExceeded, match="resolve") as info:
        await agent.run("?").collect()
    assert info.value.path == ("weather",)
    assert provider.calls == 3


def test_a_tool_named_resolve_conflicts_with_an_output_schema() -> None:
    @tool
    def resolve(x: int) -> int:
        return x

    ReactAgent("ok", ScriptedProvider([]), "No schema.", tools=[resolve])
    with pytest.raises(ValueError, match="reserved"):
        ReactAgent("bad", ScriptedProvider([]), "Schema.", tools=[resolve], output_schema=Forecast)


_values = st.one_of(
    st.text(max_size=20),
    st.fixed_dictionaries(
        {
            "city": st.text(max_size=5) | st.integers(),
            "degrees": st.floats(allow_nan=False) | st.text(max_size=3),
        }
    ).map(json.dumps),
)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attempts=st.lists(_values, max_size=4))
async def test_random_resolve_arguments_end_in_a_value_or_max_rounds(attempts: list[str]) -> None:
    arguments = [*attempts, json.dumps({"city": "X", "degrees": 1})]
    agent = ReactAgent(
        "fuzz",
        ScriptedProvider([resolve(a) for a in arguments]),
        "Cope.",
        output_schema=Forecast,
        max_rounds=3,
    )
    first_valid = next(i for i, a in enumerate(arguments) if _valid(a))
    with anyio.fail_after(10):
        try:
            response = await agent.run("go").collect()
        except MaxRoundsExceeded as exc:
            assert first_valid >= 3 and exc.path == ("fuzz",)
            return
    assert first_valid < 3
    assert response.value == Forecast.model_validate_json(arguments[first_valid])
    assert Forecast.model_validate_json(response.messages[-1].text) == response.value


def _valid(arguments: str) -> bool:
    """Valid JSON of the schema whose value also survives a JSON round trip."""
    try:
        pydantic_core.from_json(arguments, allow_inf_nan=False)
        value = Forecast.model_validate_json(arguments)
    except ValueError:
        return False
    return math.isfinite(value.degrees)


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", '"inf"', '"NaN"'])
async def test_non_finite_numbers_are_refused_because_json_cannot_carry_them(number: str) -> None:
    provider = ScriptedProvider(
        [
            resolve(f'{{"city": "Oslo", "degrees": {number}}}'),
            resolve({"city": "Oslo", "degrees": 1}),
        ]
    )
    agent = ReactAgent("weather", provider, "Forecast.", output_schema=Forecast)
    run = agent.run("?")
    async with run as updates:
        called = [u async for u in updates if isinstance(u, ToolCalled)]
    assert called[0].is_error and "Infinity and NaN are not JSON numbers" in called[0].result
    assert run.response is not None and run.response.value == Forecast(city="Oslo", degrees=1)
