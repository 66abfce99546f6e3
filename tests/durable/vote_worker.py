"""A durable-run worker for the vote recovery test: two voters asked at once in one node step.

    python -m tests.durable.vote_worker DB_URL BASE_URL RUN_ID MODE [--die-in VOTER]
        [--effects FILE]

The graph is a vote (`panel`) of the ReAct voters `ann` and `bob`, each calling the tool
`think` once and then answering its ballot, so each voter makes two model calls and a tool
call in the vote's node step. `think` writes `think:{voter}` to the effects file; with
`--die-in VOTER` (MODE `start`) the worker SIGKILLs itself inside that voter's call, after
the effect. MODE `start` starts run RUN_ID; `restart` only launches (DBOS recovers the run
of this executor). Both print the run's result as `{"result": ...}` when it ends.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from dbos import DBOS

from raf import ReactAgent, Session
from raf.builders.vote import VoteBuilder, unanimous
from raf.durable import DurableAgent
from raf.providers.openai import OpenAIProvider, create_client
from raf.tools import tool
from tests.durable.process import configure_dbos, effect, print_result

VOTERS = ("ann", "bob")


def prompt(voter: str) -> str:
    return f"You are {voter}: think once, then vote."


def build(base_url: str, effects: Path, die_in: str) -> tuple[DurableAgent, object]:
    client = create_client(base_url, "test-key")
    provider = OpenAIProvider(client, "scripted")

    @tool(idempotent=True)
    def think(voter: str) -> str:
        """Think it over."""
        effect(effects, f"think:{voter}", die=voter == die_in)
        return "tea is best"

    panel = VoteBuilder(id="panel").with_policy(unanimous())
    for voter in VOTERS:
        panel.add_agent(ReactAgent(voter, provider, prompt(voter), tools=[think]))
    return DurableAgent(panel.build().as_agent()), client


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("base_url")
    parser.add_argument("run_id")
    parser.add_argument("mode", choices=["start", "restart"])
    parser.add_argument("--die-in", default="")
    parser.add_argument("--effects", default="effects.txt")
    args = parser.parse_args()
    configure_dbos("raf-vote-recovery", args.db, "voting")
    durable, _client = build(args.base_url, Path(args.effects), args.die_in)
    DBOS.launch()
    if args.mode == "start":
        await durable.run("Tea or coffee?", Session(id="vote")).collect()
    await print_result(args.run_id)


if __name__ == "__main__":
    asyncio.run(main())
