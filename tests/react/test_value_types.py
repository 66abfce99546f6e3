"""The value of a `ReactAgent`'s response is an instance of its output schema at run time, as
its type says (tests/typecheck/value_types.py checks the types), through the real `openai`
client over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import assert_type

import pytest
from pydantic import BaseModel

from raf import AgentResponse, SequentialBuilder
from raf.providers.openai import OpenAIProvider, create_client
from raf.providers.retry import RetryPolicy
from raf.react import ReactAgent
from raf.testing import ScriptedOpenAIServer, Turn, resolve, text

pytestmark = pytest.mark.anyio


class Plan(BaseModel):
    steps: list[str]


@asynccontextmanager
async def _provider(script: list[Turn]) -> AsyncIterator[OpenAIProvider]:
    async with (
        ScriptedOpenAIServer(script) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        yield OpenAIProvider(client, "gpt-test", retry=RetryPolicy(max_attempts=1))


async def test_collect_gives_an_instance_of_the_schema() -> None:
    async with _provider([resolve({"steps": ["pack", "go"]})]) as provider:
        planner = ReactAgent("planner", provider, "Plan the trip.", output_schema=Plan)
        response = await planner.run("Oslo").collect()
    value = assert_type(response.value, Plan)
    assert type(value) is Plan
    assert value.steps == ["pack", "go"]
    # raf builds the one unparametrised class, whatever the agent's schema.
    assert type(response) is AgentResponse


async def test_a_streamed_run_keeps_the_instance_as_its_response() -> None:
    async with _provider([resolve({"steps": ["rest"]})]) as provider:
        planner = ReactAgent("planner", provider, "Plan the trip.", output_schema=Plan)
        run = planner.run("Oslo")
        async with run as stream:
            kinds = [u.type async for u in stream]
    assert "tool_call_start" in kinds
    response = run.response
    assert response is not None
    assert response.value == Plan(steps=["rest"])
    assert type(response.value) is Plan


async def test_native_mode_gives_an_instance_of_the_schema() -> None:
    async with _provider([text('{"steps": ["walk"]}')]) as provider:
        planner = ReactAgent("p", provider, "Plan.", output_schema=Plan, output_mode="native")
        value = (await planner.run("Oslo").collect()).value
    assert type(value) is Plan
    assert value == Plan(steps=["walk"])


async def test_without_a_schema_the_value_is_none() -> None:
    async with _provider([text("Hello")]) as provider:
        chat = ReactAgent("chat", provider, "Greet.")
        response = await chat.run("hi").collect()
    assert response.text == "Hello"
    assert response.value is None


async def test_a_workflow_of_typed_agents_passes_the_instance_on() -> None:
    async with _provider([resolve({"steps": ["pack"]})]) as provider:
        planner = ReactAgent("planner", provider, "Plan.", output_schema=Plan)
        team = SequentialBuilder("team").add_agent(planner).build().as_agent()
        response = await team.run("Oslo").collect()
    assert type(response.value) is Plan
    assert response.value == Plan(steps=["pack"])
