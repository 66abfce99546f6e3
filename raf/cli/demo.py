"""`raf demo`: a concurrent workflow of two sequential workflows of ReAct agents with tools.

It runs on the built-in scripted model, or on a real OpenAI-compatible endpoint when
`OPENAI_BASE_URL` or `OPENAI_API_KEY` is set (`RAF_MODEL` picks the model, default
`gpt-4o-mini`; a local server at `OPENAI_BASE_URL` needs no key). A real model answers the
prompt; the scripted one plays the same tree for the city the prompt names ("... in Porto",
"... to Porto"), Lisbon when it names none.

    trip (concurrent)
    ├── itinerary (sequential): researcher [find_sights] → planner [estimate_cost]
    └── logistics (sequential): forecaster [forecast] → packer
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import cast

from rich.console import Console

from raf.agent import IAgent
from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.cli.live_tree import stream_live
from raf.cli.run import print_answer, report_failure
from raf.errors import AgentError
from raf.messages import ChatMessage
from raf.providers.base import LlmProvider
from raf.react import ReactAgent
from raf.testing.script import Turn, text, tool_calls
from raf.testing.scripted_provider import ScriptedProvider
from raf.tools import tool


@tool
def find_sights(city: str) -> list[str]:
    """Find the sights most worth a visit in a city.

    Args:
        city: the city to look up.
    """
    sights = {
        "lisbon": ["Alfama", "Belém Tower", "LX Factory", "Miradouro da Senhora do Monte"],
    }
    return sights.get(city.lower(), [f"the old town of {city}", f"the museums of {city}"])


@tool
def estimate_cost(days: int, per_day: float = 120.0) -> str:
    """Estimate the cost of a stay.

    Args:
        days: number of days.
        per_day: spending per day in euros.
    """
    return f"about {days * per_day:.0f} EUR for {days} days"


@tool
def forecast(city: str) -> dict[str, str | int]:
    """The weekend weather forecast for a city.

    Args:
        city: the city.
    """
    return {"city": city, "saturday": "sunny, 24°C", "sunday": "light rain, 19°C", "wind_kmh": 15}


def _scripted(first: Callable[[list[ChatMessage]], Turn]) -> ScriptedProvider:
    """A scripted model: `first` answers the request; after a tool result it summarizes it."""

    def answer(messages: list[ChatMessage]) -> Turn:
        last = messages[-1]
        if last.role == "tool":
            results = [c.result for c in last.contents if c.type == "tool_result"]
            return text(_summary(results), reasoning="The tool answered; summarize it briefly.")
        return first(messages)

    return ScriptedProvider(answer)


def _summary(results: list[str]) -> str:
    parts: list[str] = []
    for raw in results:
        try:
            value: object = json.loads(raw)
        except ValueError:
            value = raw
        if isinstance(value, list):
            items = cast(list[object], value)
            parts.append("Worth seeing: " + ", ".join(map(str, items)) + ".")
        elif isinstance(value, dict):
            fields = cast(dict[str, object], value)
            parts.append("Forecast: " + "; ".join(f"{k} {v}" for k, v in fields.items()) + ".")
        else:
            parts.append(f"The estimate is {value}.")
    return " ".join(parts)


DEFAULT_CITY = "Lisbon"
"""The city the scripted model plans for when the prompt names none."""

_CITY = re.compile(r"\b(?:in|to|of|for|at|visit|visiting)\s+((?:[A-Z][\w'-]*\s?)+)")


def city_in(prompt: str) -> str:
    """The city a prompt names, the way the scripted model reads it ("A weekend in Porto").

    Example:
        >>> city_in("A weekend in Porto"), city_in("Plan a trip to New York."), city_in("hi")
        ('Porto', 'New York', 'Lisbon')
    """
    found = _CITY.search(prompt)
    return found.group(1).strip() if found else DEFAULT_CITY


def _scripted_providers(prompt: str) -> dict[str, LlmProvider]:
    city = city_in(prompt)
    return {
        "researcher": _scripted(lambda m: tool_calls(("find_sights", {"city": city}))),
        "planner": _scripted(lambda m: tool_calls(("estimate_cost", {"days": 2}))),
        "forecaster": _scripted(lambda m: tool_calls(("forecast", {"city": city}))),
        "packer": _scripted(
            lambda m: text(
                "Pack light layers, comfortable shoes for the hills, sunglasses and a rain jacket.",
                reasoning="Sunny Saturday, rainy Sunday: layers and a jacket.",
            )
        ),
    }


def build_demo(providers: dict[str, LlmProvider]) -> IAgent:
    """The demo tree, with one provider per leaf agent (keys: the leaf ids)."""
    researcher = ReactAgent(
        "researcher",
        providers["researcher"],
        "Find the sights worth visiting with find_sights, then list them in one sentence.",
        tools=[find_sights],
        text_tool_calls=True,
        description="Finds what to see.",
    )
    planner = ReactAgent(
        "planner",
        providers["planner"],
        "Estimate the cost of the trip with estimate_cost, then state it in one sentence.",
        tools=[estimate_cost],
        text_tool_calls=True,
        description="Plans the days and the budget.",
    )
    forecaster = ReactAgent(
        "forecaster",
        providers["forecaster"],
        "Get the weekend forecast with the forecast tool, then summarize it in one sentence.",
        tools=[forecast],
        text_tool_calls=True,
        description="Checks the weather.",
    )
    packer = ReactAgent(
        "packer",
        providers["packer"],
        "Say in one sentence what to pack, given the forecast in the conversation.",
        description="Writes the packing list.",
    )
    itinerary = SequentialBuilder(id="itinerary").add_agent(researcher).add_agent(planner).build()
    logistics = SequentialBuilder(id="logistics").add_agent(forecaster).add_agent(packer).build()
    return (
        ConcurrentBuilder(id="trip")
        .add_agent(itinerary.as_agent(description="Sights and budget."))
        .add_agent(logistics.as_agent(description="Weather and packing."))
        .build()
        .as_agent(description="Plans a weekend trip.")
    )


@asynccontextmanager
async def demo_providers(prompt: str) -> AsyncGenerator[dict[str, LlmProvider]]:
    """Scripted providers playing `prompt`'s city, or OpenAI providers when an endpoint is
    configured."""
    if not (os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_KEY")):
        yield _scripted_providers(prompt)
        return
    from raf.providers.openai import OpenAIProvider, create_client

    model = os.environ.get("RAF_MODEL", "gpt-4o-mini")
    async with create_client() as client:
        provider = OpenAIProvider(client, model)
        yield dict.fromkeys(("researcher", "planner", "forecaster", "packer"), provider)


async def run_demo(console: Console, prompt: str) -> int:
    """Run the demo on `prompt`, drawing the live tree; return an exit code."""
    try:
        async with demo_providers(prompt) as providers:
            agent = build_demo(providers)
            console.print(f"[dim]model: {_model_note(providers)}[/]")
            response = await stream_live(agent, prompt, console)
    except AgentError as exc:  # one line, as `raf run` says it (exit 2: the endpoint)
        console.print()
        return report_failure(exc)
    console.print()
    print_answer(agent, response, console)
    console.print(f"[dim]{response.usage.total_tokens} tokens in the whole tree[/]")
    return 0


def _model_note(providers: dict[str, LlmProvider]) -> str:
    """Which model answers, and how to switch: the demo may call a paid endpoint."""
    model = next(iter(providers.values())).model
    if model == "scripted":
        return "scripted, offline (set OPENAI_BASE_URL and/or OPENAI_API_KEY to use an endpoint)"
    endpoint = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    return f"{model} at {endpoint} (unset OPENAI_BASE_URL and OPENAI_API_KEY to run offline)"
