"""Run one scenario's workload a fixed number of times, for instruction counters.

`valgrind --tool=callgrind python -m bench.count A 50` minus the same with `0` gives the
instructions of 50 runs of scenario A (20 agent nodes each): a count that does not depend on
what else the machine is doing, unlike the times of `python -m bench`. H (10 agents a run), I
(20 rounds a run) and K (20 voters a run) count the same way, and so does L, A's chain at 100
agents: its count per node beside A's shows whether a node's cost grows with the conversation.
"""

from __future__ import annotations

import argparse

import anyio

from bench import patterns, teams
from bench.suites import SUITES, load
from bench.suites.base import (
    CHAIN_LENGTH,
    FAN_OUT,
    LONG_CHAIN,
    SESSION_CHAIN,
    SESSIONS,
    PreparedRun,
    Run,
)


async def _repeat(framework: str, scenario: str, runs: int) -> None:
    suite = load(framework)
    run: Run
    if scenario == "H":
        run = (await patterns.handoff(suite)).run
    elif scenario == "I":
        run = (await patterns.group_chat(suite)).run
    elif scenario == "K":
        run = (await teams.vote(suite)).run
    elif scenario == "A":
        run = await suite.chain(CHAIN_LENGTH)
    elif scenario == "L":
        run = await suite.chain(LONG_CHAIN)
    elif scenario == "B":
        run = await suite.fan_out(FAN_OUT)
    else:
        run = await suite.sessions(SESSIONS, SESSION_CHAIN)
    for _ in range(2 + runs):  # two warm-up runs, counted in the baseline of 0 as well
        if isinstance(run, PreparedRun):
            await run.prepare()
        await run()


def main() -> None:
    """Parse `SCENARIO RUNS [--framework F]` and run the workload."""
    parser = argparse.ArgumentParser(prog="python -m bench.count")
    parser.add_argument("scenario", choices=["A", "B", "C", "H", "I", "K", "L"])
    parser.add_argument("runs", type=int)
    parser.add_argument("--framework", choices=list(SUITES), default="raf")
    args = parser.parse_args()
    anyio.run(_repeat, args.framework, args.scenario, args.runs)


if __name__ == "__main__":
    main()
