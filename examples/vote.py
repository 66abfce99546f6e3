"""A vote: three reviewers answer the same question at once, each with a ballot.

The majority decides; a split vote goes to a judge. Each reviewer answers with a JSON ballot
(`{"choice", "confidence", "rationale"}`), which any model can write; a plain answer counts as
its choice. (`ReactAgent(..., output_schema=Ballot)` gets the ballot through a tool call
instead.) The run's value is a `VoteResult`.

Run: python examples/vote.py (or, from the repository root, python -m examples.vote)
"""

from __future__ import annotations

import json
from collections.abc import Callable

import anyio

from raf import ChatMessage, ReactAgent, VoteBuilder, VoteResult, judge, majority
from raf.testing import Turn, text

if __package__:  # python -m examples.vote
    from examples._models import provider_for
else:  # python examples/vote.py
    from _models import provider_for

VERDICTS = {"style": "publish", "tone": "publish", "facts": "revise"}
INSTRUCTIONS = (
    "Review the text. Vote 'publish' or 'revise'. Answer with JSON only: "
    '{"choice": "publish" or "revise", "confidence": 0 to 1, "rationale": "why"}'
)


def reviewer_script(name: str) -> Callable[[list[ChatMessage]], Turn]:
    """The scripted reviewer: it always casts the same ballot."""

    def script(messages: list[ChatMessage]) -> Turn:
        ballot = {"choice": VERDICTS[name], "confidence": 0.8, "rationale": f"{name} says so"}
        return text(json.dumps(ballot))

    return script


async def main() -> None:
    async with (
        provider_for(reviewer_script("style")) as p1,
        provider_for(reviewer_script("tone")) as p2,
        provider_for(reviewer_script("facts")) as p3,
        provider_for(lambda m: text("revise")) as referee,
    ):
        reviewers = [
            ReactAgent(name, provider, INSTRUCTIONS)
            for name, provider in (("style", p1), ("tone", p2), ("facts", p3))
        ]
        board = VoteBuilder(id="board")
        for reviewer in reviewers:
            board.add_agent(reviewer)
        agent = board.with_policy(majority()).build().as_agent()

        draft = "Fresh bread, every morning, for everyone. Open 24 hours."
        response = await agent.run(draft).collect()
        result = response.value
        assert isinstance(result, VoteResult)
        for voter, ballot in result.ballots.items():
            print(f"{voter:>6}: {ballot.choice if ballot else 'abstained'}")
        print(f"winner: {response.text}, tally: {result.tally}")

        # Two reviewers split evenly: the judge decides.
        split = (
            VoteBuilder(id="split")
            .add_agent(ReactAgent("style", p1, INSTRUCTIONS))
            .add_agent(ReactAgent("facts", p3, INSTRUCTIONS))
            .with_policy(judge(ReactAgent("editor", referee, "Settle the vote: one word.")))
            .build()
            .as_agent()
        )
        print(f"judged: {(await split.run(draft).collect()).text}")


if __name__ == "__main__":
    anyio.run(main)
