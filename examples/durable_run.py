"""A durable run: the agent runs as a DBOS workflow on a SQLite file, each model call and tool
call a recorded step, so a worker that dies mid-run is recovered without repeating a call.

Run: python examples/durable_run.py (or, from the repository root, python -m examples.durable_run)
Needs the dbos extra: pip install 'raf[dbos]'
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
from dbos import DBOS

from raf import ReactAgent, Session
from raf.durable import DurableAgent
from raf.testing import text, tool_calls
from raf.tools import tool

if __package__:  # python -m examples.durable_run
    from examples._models import provider_for
else:  # python examples/durable_run.py
    from _models import provider_for


@tool(idempotent=True)
def forecast(city: str) -> str:
    """The weather tomorrow in a city (safe to ask twice)."""
    return f"{city}: sunny, 24 C"


@tool
def book_table(place: str, people: int) -> str:
    """Book a table (an effect: after a crash mid-call, a human decides whether to redo it)."""
    return f"booked {place} for {people}"


def script(messages):  # the scripted model's answers, by round
    rounds = sum(1 for m in messages if m.role == "assistant")
    return [
        tool_calls(("forecast", {"city": "Lisbon"})),
        tool_calls(("book_table", {"place": "a terrace", "people": 2})),
        text("Sunny tomorrow: I booked a terrace table for two."),
    ][min(rounds, 2)]


async def main(folder: Path) -> None:
    url = f"sqlite:///{folder / 'runs.sqlite'}"
    DBOS(config={"name": "raf-example", "system_database_url": url, "log_level": "WARNING"})
    async with provider_for(script) as model:
        agent = ReactAgent("planner", model, "Plan the evening.", tools=[forecast, book_table])
        durable = DurableAgent(agent)  # before DBOS.launch(), the same in every worker
        DBOS.launch()  # inside the event loop: recovered runs run on it
        try:
            session = Session(id="evening")
            async with durable.run("Dinner outside tomorrow in Lisbon?", session) as stream:
                async for update in stream:
                    if update.type == "text_delta":
                        print(update.text, end="", flush=True)
            print()
            steps = await DBOS.list_workflow_steps_async("planner:evening:0")
            names = [s["function_name"] for s in steps if s["function_name"].startswith("raf.")]
            print("recorded steps:", ", ".join(names))
        finally:
            DBOS.destroy()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(main, Path(tmp))  # on asyncio, as DBOS needs
