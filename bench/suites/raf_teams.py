"""raf's Magentic and vote workloads (scenarios J and K), on zero-latency fake models.

Magentic: `ReactAgent` participants on the suite's `ZeroLatencyProvider`; the manager is a
`ZeroLatencyProvider` that answers each call at once: a task ledger, then progress ledgers that
alternate between the participants until they have answered `rounds` times, then the final
answer (`TOKEN`). Vote: `ReactAgent` voters on the suite's provider, `unanimous()` (they all
answer `TOKEN`, so every ballot is needed). Both are consumed through
`async with agent.run(prompt, Session()) as stream`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from bench.patterns import PatternRun
from bench.suites.base import INSTRUCTIONS, PROMPT, TOKEN, Outcome
from bench.suites.raf_suite import RafSuite, ZeroLatencyProvider
from raf import MagenticBuilder, ReactAgent, Session, VoteBuilder, unanimous
from raf.agent import IAgent
from raf.builders.magentic.manager import FINAL_ANSWER, PROGRESS_LEDGER
from raf.messages import ChatMessage


def _entry(answer: object) -> dict[str, object]:
    return {"reason": "-", "answer": answer}


class ManagerModel(ZeroLatencyProvider):
    """A zero-latency manager: ledgers prepared up front, chosen by the prompt and the
    number of answers in the team's transcript."""

    def __init__(self, members: Sequence[str], rounds: int) -> None:
        super().__init__()
        self._ledger = json.dumps({"facts": "-", "plan": "-"})
        self._progress = [
            json.dumps(
                {
                    "is_request_satisfied": _entry(done >= rounds),
                    "is_in_loop": _entry(False),
                    "is_progress_being_made": _entry(True),
                    "next_speaker": _entry(members[done % len(members)]),
                    "instruction": _entry("go on"),
                }
            )
            for done in range(rounds + 1)
        ]
        self._answered = f"] {TOKEN}"

    def reply(self, messages: Sequence[ChatMessage]) -> str:
        """A task ledger, a progress ledger or the final answer, as the prompt asks."""
        prompt = messages[0].text
        if FINAL_ANSWER in prompt:
            return TOKEN
        if PROGRESS_LEDGER in prompt:
            return self._progress[messages[-1].text.count(self._answered)]
        return self._ledger


async def _consume(agent: IAgent) -> Outcome:
    """Run once through the stream; count tokens, then the answers (assistant text messages)."""
    tokens = 0
    run = agent.run(PROMPT, Session())
    async with run as stream:
        async for update in stream:
            if update.type == "text_delta" and update.text == TOKEN:
                tokens += 1
    response = run.response
    messages = response.messages if response is not None else []
    return Outcome(tokens, sum(1 for m in messages if m.role == "assistant" and m.text == TOKEN))


async def magentic(suite: RafSuite, members: int, rounds: int) -> PatternRun:
    ids = [f"member{i}" for i in range(members)]
    builder = MagenticBuilder(ManagerModel(ids, rounds), id="team")
    for member in ids:
        builder.add_agent(ReactAgent(member, suite.model, INSTRUCTIONS))
    team = builder.with_limits(max_rounds=rounds + 1).build().as_agent()
    model = suite.model
    return PatternRun(lambda: _consume(team), lambda: model.largest_input)


async def vote(suite: RafSuite, voters: int) -> PatternRun:
    builder = VoteBuilder(id="panel").with_policy(unanimous())
    for i in range(voters):
        builder.add_agent(ReactAgent(f"voter{i}", suite.model, INSTRUCTIONS))
    panel = builder.build().as_agent()
    model = suite.model
    return PatternRun(lambda: _consume(panel), lambda: model.largest_input)


__all__ = ["magentic", "vote"]
