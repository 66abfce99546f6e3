"""Microsoft Agent Framework's Magentic and vote workloads (scenarios J and K).

Magentic: agent-framework-orchestrations' `MagenticBuilder` with a `StandardMagenticManager`
(its `manager_agent`) on a zero-latency client that answers the manager's prompts at once —
facts, plan, a JSON progress ledger alternating between the participants until they have
answered `rounds` times, then the final answer (`TOKEN`) — and `Agent` participants on the
suite's client. MAF's manager makes two calls for the task ledger (facts, then plan) where
raf's makes one, and MAF hands each participant only its own thread of the broadcast (the
report's `largest_input` shows it), where raf hands the team's whole transcript. A built MAF Magentic workflow keeps its state in the instance, so each timed
run gets a fresh build (made before the clock starts).

Vote: MAF has no vote; its closest is `ConcurrentBuilder` with a custom aggregator that
tallies the participants' answers into one message, which is what runs here. It cannot stop
early, so K's voters all agree and every ballot is needed on both sides.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from agent_framework import (
    Agent,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    UsageDetails,
)
from agent_framework_orchestrations import ConcurrentBuilder, MagenticBuilder

from bench.patterns import PatternRun
from bench.suites.base import INSTRUCTIONS, PROMPT, TOKEN, Outcome, PreparedRun
from bench.suites.maf_suite import MafSuite, ZeroLatencyChatClient

for _name in ("agent_framework", "agent_framework_orchestrations"):
    logging.getLogger(_name).setLevel(logging.ERROR)


def _entry(answer: object) -> dict[str, object]:
    return {"reason": "-", "answer": answer}


class ManagerClient(ZeroLatencyChatClient):
    """Answers the Magentic manager's prompts at once (which one: by its wording)."""

    def __init__(self, members: Sequence[str], rounds: int) -> None:
        super().__init__()
        self._text = TOKEN
        self._members = set(members)
        self._progress = [
            json.dumps(
                {
                    "is_request_satisfied": _entry(done >= rounds),
                    "is_in_loop": _entry(False),
                    "is_progress_being_made": _entry(True),
                    "next_speaker": _entry(list(members)[done % len(members)]),
                    "instruction_or_question": _entry("go on"),
                }
            )
            for done in range(rounds + 1)
        ]

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Any:
        # The manager's calls come one at a time, so the next answer can wait on the instance.
        self._text = self._reply(messages)
        return super()._inner_get_response(
            messages=messages, stream=stream, options=options, **kwargs
        )

    def _reply(self, messages: Sequence[Message]) -> str:
        prompt = messages[-1].text
        if "Who should speak next" in prompt:
            return self._progress[sum(1 for m in messages if m.author_name in self._members)]
        return TOKEN if "provide the final answer" in prompt else "-"

    async def _updates(self, inputs: int) -> AsyncIterator[ChatResponseUpdate]:
        yield ChatResponseUpdate(role="assistant", contents=[Content.from_text(self._text)])
        usage = UsageDetails(input_token_count=inputs, output_token_count=1)
        yield ChatResponseUpdate(
            role="assistant", contents=[Content.from_usage(usage)], finish_reason="stop"
        )

    async def _whole(self, inputs: int) -> ChatResponse:
        return ChatResponse(messages=[Message(role="assistant", contents=[self._text])])


async def _consume(agent: Any, author: str) -> Outcome:
    """Run once through the stream; count tokens, then the answers `author` gave (the final
    response also holds the participants' replies)."""
    tokens = 0
    stream = agent.run(PROMPT, stream=True)
    async for update in stream:
        if update.text == TOKEN:
            tokens += 1
    final = await stream.get_final_response()
    answers = [m for m in final.messages if m.author_name == author and m.text == TOKEN]
    return Outcome(tokens, len(answers))


async def magentic(suite: MafSuite, members: int, rounds: int) -> PatternRun:
    ids = [f"member{i}" for i in range(members)]
    participants = [
        Agent(client=suite.model, instructions=INSTRUCTIONS, name=name, description=name)
        for name in ids
    ]
    manager = Agent(client=ManagerClient(ids, rounds), instructions=INSTRUCTIONS, name="manager")

    def build() -> Any:
        workflow = MagenticBuilder(
            name="team",
            participants=participants,
            manager_agent=manager,
            max_round_count=rounds + 1,
            intermediate_output_from="all_other",
        )
        return workflow.build().as_agent(name="team")

    built: list[Any] = []

    async def prepare() -> None:
        built[:] = [build()]

    async def run() -> Outcome:
        if not built:
            await prepare()
        return await _consume(built.pop(), "manager")

    return PatternRun(PreparedRun(prepare, run), lambda: suite.model.largest_input)


async def vote(suite: MafSuite, voters: int) -> PatternRun:
    participants = [
        Agent(client=suite.model, instructions=INSTRUCTIONS, name=f"voter{i}")
        for i in range(voters)
    ]

    async def tally(results: list[Any]) -> Message:
        ballots = Counter(result.agent_response.text.strip() for result in results)
        winner = ballots.most_common(1)[0][0] if len(ballots) == 1 else ""
        return Message(role="assistant", contents=[winner], author_name="panel")

    workflow = ConcurrentBuilder(name="panel", participants=participants, output_from="all")
    agent = workflow.with_aggregator(tally).build().as_agent(name="panel")

    return PatternRun(lambda: _consume(agent, "panel"), lambda: suite.model.largest_input)


__all__ = ["magentic", "vote"]
