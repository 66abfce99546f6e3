"""The scenarios: what each measures, in which unit, and raf's target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bench.patterns import CHAT_MEMBERS, CHAT_ROUNDS, HANDOFF_CHAIN
from bench.suites.base import (
    CHAIN_LENGTH,
    CHECKPOINT_CHAIN,
    DEPTH,
    FAN_OUT,
    SESSION_CHAIN,
    SESSIONS,
)
from bench.teams import MAGENTIC_MEMBERS, MAGENTIC_ROUNDS, VOTERS


@dataclass(frozen=True, slots=True)
class Scenario:
    """One row of the results table."""

    id: str
    title: str
    unit: str
    better: Literal["lower", "higher"]
    target: float
    """raf's target, in `unit` (a ceiling when lower is better, a floor otherwise)."""
    iterations: int
    """Timed runs per process in a full benchmark."""
    quick_iterations: int
    """Timed runs per process with `--quick`."""
    warmup: int = 2
    """Untimed runs per process before timing (one with `--quick`)."""
    seconds: float = 4.0
    """Time budget per process: timing stops early once it is spent (after 5 runs at least)."""
    method: str = ""
    """How the number is obtained, for the report."""

    def met(self, value: float) -> bool:
        """Whether `value` meets the target."""
        return value <= self.target if self.better == "lower" else value >= self.target

    @property
    def target_text(self) -> str:
        """The target as the table shows it."""
        sign = "<=" if self.better == "lower" else ">="
        return f"{sign} {self.target:g}"


SCENARIOS: dict[str, Scenario] = {
    s.id: s
    for s in (
        Scenario(
            "A",
            f"sequential chain of {CHAIN_LENGTH} agents, streamed",
            "ms/node",
            "lower",
            0.06,
            iterations=300,
            quick_iterations=3,
            method=(
                f"one built workflow of {CHAIN_LENGTH} agents, each handed the whole conversation; "
                "a run is consumed through the agent stream; median run time / agents"
            ),
        ),
        Scenario(
            "B",
            f"concurrent fan-out of {FAN_OUT} agents plus aggregation",
            "ms",
            "lower",
            2.0,
            iterations=300,
            quick_iterations=3,
            method="one built workflow; median time of a whole run (fan-out, join, stream)",
        ),
        Scenario(
            "C",
            f"{SESSIONS} concurrent sessions of a {SESSION_CHAIN}-agent chain",
            "sessions/s",
            "higher",
            3000.0,
            iterations=30,
            quick_iterations=1,
            warmup=1,
            seconds=6.0,
            method=(
                f"{SESSIONS} runs at once in one event loop, each with its own session and "
                f"stream; {SESSIONS} / median batch time"
            ),
        ),
        Scenario(
            "D",
            "peak memory of C above interpreter start",
            "MiB",
            "lower",
            15.0,
            iterations=3,
            quick_iterations=1,
            warmup=0,
            method=(
                "VmHWM (peak RSS) after importing the framework and running C's batch, minus VmRSS "
                "read first thing in the fresh worker process (/proc/self/status)"
            ),
        ),
        Scenario(
            "E",
            f"added latency per nesting level (depth {DEPTH})",
            "us/level",
            "lower",
            20.0,
            iterations=400,
            quick_iterations=5,
            method=(
                "the fake model stamps perf_counter() as it hands out its token; the consumer "
                f"takes the difference on receipt; (median at depth {DEPTH} - median at depth 1) "
                f"/ {DEPTH - 1}, depths 0, 1 and {DEPTH} interleaved (a leaf run alone, depth 0, "
                "streams the token as the first item of a fresh stream, which also waits for the "
                "consumer to start, so it is shown but not used)"
            ),
        ),
        Scenario(
            "F",
            "SQLite checkpoint per superstep",
            "ms",
            "lower",
            1.0,
            iterations=60,
            quick_iterations=2,
            method=(
                f"a {CHECKPOINT_CHAIN}-agent chain with and without a SQLite store, interleaved; "
                "(median with - median without) / checkpoints written per run"
            ),
        ),
        Scenario(
            "G",
            "import time",
            "ms",
            "lower",
            150.0,
            iterations=9,
            quick_iterations=1,
            warmup=1,
            method="perf_counter() around the imports inside a fresh interpreter; median of spawns",
        ),
        Scenario(
            "H",
            f"handoff through {HANDOFF_CHAIN} agents in one turn",
            "ms/agent",
            "lower",
            0.15,
            iterations=200,
            quick_iterations=3,
            method=(
                f"{HANDOFF_CHAIN} agents, each streaming its token and calling the handoff tool "
                "of the next (the last answers); a turn consumed through the agent stream; median "
                "turn time / agents"
            ),
        ),
        Scenario(
            "I",
            f"group chat of {CHAT_MEMBERS} agents, {CHAT_ROUNDS} rounds",
            "ms/round",
            "lower",
            0.15,
            iterations=200,
            quick_iterations=3,
            method=(
                f"round-robin speaker selection among {CHAT_MEMBERS} agents, ended by the round "
                "bound; a run consumed through the agent stream; median run time / rounds"
            ),
        ),
        Scenario(
            "J",
            f"Magentic-One: {MAGENTIC_ROUNDS} rounds among {MAGENTIC_MEMBERS} agents",
            "ms/round",
            "lower",
            0.5,
            iterations=200,
            quick_iterations=3,
            method=(
                "a zero-latency manager (task ledger, one progress ledger per round, the final "
                f"answer) alternating between {MAGENTIC_MEMBERS} agents for {MAGENTIC_ROUNDS} "
                "rounds; a run consumed through the agent stream; median run time / rounds"
            ),
        ),
        Scenario(
            "K",
            f"vote of {VOTERS} agents (MAF: concurrent + tallying aggregator)",
            "ms",
            "lower",
            3.0,
            iterations=300,
            quick_iterations=3,
            method=(
                f"{VOTERS} voters asked at once, every ballot needed (all agree, unanimity), "
                "tallied into one answer; median time of a whole run. No peer has a vote: MAF "
                "runs its closest, a concurrent workflow whose aggregator tallies"
            ),
        ),
    )
}
"""Every scenario by id, in table order."""

TARGET_PEER_FACTOR = 10.0
"""Scenario A must also be this many times faster than the fastest peer."""
