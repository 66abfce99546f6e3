"""Scenarios H (handoff) and I (group chat): what each pattern's orchestration costs.

Each framework's workloads live in `bench/suites/<framework>_patterns.py`, built on that
suite's fake model; a framework without such a module (or without the pattern) is reported as
unavailable. A run is checked before it is timed: every model call's token reached the
consumer, every participant replied, and the last one was handed the conversation so far.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bench.suites.base import Outcome, Run, Suite, Unavailable

HANDOFF_CHAIN = 10
"""Agents of scenario H: each hands off to the next, the last one answers."""
CHAT_MEMBERS = 4
"""Participants of scenario I."""
CHAT_ROUNDS = 20
"""Rounds of scenario I: round robin, the chat ends after this many speakers."""

MODULES = {
    "raf": "bench.suites.raf_patterns",
    "floor": "bench.suites.floor_patterns",
    "maf": "bench.suites.maf_patterns",
}
"""Framework -> module with `handoff(suite, agents)` and `group_chat(suite, members, rounds)`."""


@dataclass(frozen=True, slots=True)
class PatternRun:
    """A built pattern workload (scenarios H to K): the run, and the largest input its fake
    models were handed."""

    run: Run
    largest_input: Callable[[], int]


def _module(suite: Suite) -> Any:
    name = MODULES.get(suite.name)
    if name is None:
        raise Unavailable(
            f"{suite.name}: no handoff or group-chat workload (LangGraph ships neither pattern "
            "itself; langgraph-swarm and langgraph-supervisor are separate packages)"
        )
    return importlib.import_module(name)


async def handoff(suite: Suite) -> PatternRun:
    """Scenario H's workload for `suite`'s framework."""
    build: Callable[[Suite, int], Awaitable[PatternRun]] = _module(suite).handoff
    return await build(suite, HANDOFF_CHAIN)


async def group_chat(suite: Suite) -> PatternRun:
    """Scenario I's workload for `suite`'s framework."""
    build: Callable[[Suite, int, int], Awaitable[PatternRun]] = _module(suite).group_chat
    return await build(suite, CHAT_MEMBERS, CHAT_ROUNDS)


def wrong_work(
    outcome: Outcome, *, tokens: int, replies: int, largest: int, least_input: int
) -> str | None:
    """What is wrong with a run that should stream `tokens` tokens and give `replies` replies,
    its participants' largest model input at least `least_input` messages; None when nothing
    is."""
    if outcome.tokens != tokens or outcome.replies != replies or largest < least_input:
        return (
            f"expected {tokens} tokens streamed, {replies} replies and a largest model input of "
            f"at least {least_input} messages; got {outcome.tokens}, {outcome.replies} and "
            f"{largest}"
        )
    return None
