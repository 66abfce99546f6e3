"""A concurrent workflow: three reviewers read the same text at once; a custom aggregator tallies.

Run: python examples/review_panel.py (or, from the repository root, python -m examples.review_panel)
"""

from __future__ import annotations

import anyio

from raf import AgentResponse, ConcurrentBuilder, ReactAgent
from raf.testing import text

if __package__:  # python -m examples.review_panel
    from examples._models import provider_for
else:  # python examples/review_panel.py
    from _models import provider_for


def tally(results: dict[str, AgentResponse]) -> dict[str, str]:
    """The aggregator: each reviewer's verdict by id (a value, not messages)."""
    return {reviewer: response.text for reviewer, response in results.items()}


async def main() -> None:
    async with (
        provider_for(lambda m: text("approve: clear and short")) as p1,
        provider_for(lambda m: text("approve: friendly tone")) as p2,
        provider_for(lambda m: text("revise: says nothing about price")) as p3,
    ):
        panel = ConcurrentBuilder(id="panel")
        for reviewer, provider in (("style", p1), ("tone", p2), ("facts", p3)):
            panel.add_agent(ReactAgent(reviewer, provider, "Review the text: approve or revise."))
        agent = panel.with_aggregator(tally).build().as_agent()

        async with agent.run("Fresh bread, every morning, for everyone.") as stream:
            async for update in stream:
                if update.type == "message_completed":
                    print(f"{update.path[-1]:>6} finished: {update.message.text}")
        response = await agent.run("Fresh bread, every morning.").collect()
        print("verdicts:", response.value)


if __name__ == "__main__":
    anyio.run(main)
