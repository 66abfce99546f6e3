"""Scenarios J (Magentic-One) and K (vote): what these two patterns' orchestration costs.

Each framework's workloads live in `bench/suites/<framework>_teams.py`, built on that suite's
fake model; a framework without such a module is reported as unavailable. No peer has a vote
builder: Microsoft Agent Framework's closest is a concurrent workflow with a custom
aggregator that tallies the answers, which is what K runs for it. A run is checked before it is
timed: every participant's token reached the consumer, and the run answered with one message.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

from bench.patterns import PatternRun
from bench.suites.base import Suite, Unavailable

MAGENTIC_ROUNDS = 10
"""Participant turns of scenario J before the manager finds the request satisfied."""
MAGENTIC_MEMBERS = 2
"""Participants of scenario J (the manager alternates between them)."""
VOTERS = 20
"""Voters of scenario K (all agree, so the vote needs every ballot)."""

MODULES = {
    "raf": "bench.suites.raf_teams",
    "floor": "bench.suites.floor_teams",
    "maf": "bench.suites.maf_teams",
}
"""Framework -> module with `magentic(suite, members, rounds)` and `vote(suite, voters)`."""


def _module(suite: Suite) -> Any:
    name = MODULES.get(suite.name)
    if name is None:
        raise Unavailable(
            f"{suite.name}: no Magentic or vote workload (LangGraph ships neither pattern itself)"
        )
    return importlib.import_module(name)


async def magentic(suite: Suite) -> PatternRun:
    """Scenario J's workload for `suite`'s framework."""
    build: Callable[[Suite, int, int], Awaitable[PatternRun]] = _module(suite).magentic
    return await build(suite, MAGENTIC_MEMBERS, MAGENTIC_ROUNDS)


async def vote(suite: Suite) -> PatternRun:
    """Scenario K's workload for `suite`'s framework."""
    build: Callable[[Suite, int], Awaitable[PatternRun]] = _module(suite).vote
    return await build(suite, VOTERS)
