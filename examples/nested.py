"""Workflows inside workflows: a concurrent team of two sequential pipelines of ReAct agents.

Every token reaches the top-level stream with its full path; usage sums up the whole tree;
`reset()` clears every session of every agent in it.

Run: python examples/nested.py (or, from the repository root, python -m examples.nested)
"""

from __future__ import annotations

import anyio

from raf import ConcurrentBuilder, ReactAgent, SequentialBuilder, Session, tool
from raf.messages import ChatMessage
from raf.testing import Turn, text, tool_calls

if __package__:  # python -m examples.nested
    from examples._models import provider_for
else:  # python examples/nested.py
    from _models import provider_for


@tool
def word_count(text: str) -> int:
    """Count the words of a text.

    Args:
        text: the text.
    """
    return len(text.split())


def counting(messages: list[ChatMessage]) -> Turn:
    if messages[-1].role == "tool":
        return text(f"The request has {messages[-1].contents[0].result} words.")  # type: ignore[union-attr]
    return tool_calls(("word_count", {"text": messages[1].text}))


async def main() -> None:
    async with (
        provider_for(counting) as counter_model,
        provider_for(lambda m: text("Short enough for a tweet.")) as judge_model,
        provider_for(lambda m: text("Tone: upbeat.")) as tone_model,
        provider_for(lambda m: text("Audience: families.")) as audience_model,
    ):
        length = (
            SequentialBuilder(id="length")
            .add_agent(ReactAgent("counter", counter_model, "Count words.", tools=[word_count]))
            .add_agent(ReactAgent("judge", judge_model, "Judge the length."))
            .build()
            .as_agent()
        )
        style = (
            SequentialBuilder(id="style")
            .add_agent(ReactAgent("tone", tone_model, "Name the tone."))
            .add_agent(ReactAgent("audience", audience_model, "Name the audience."))
            .build()
            .as_agent()
        )
        team = ConcurrentBuilder(id="analysis").add_agent(length).add_agent(style).build()
        agent = team.as_agent()

        session = Session()
        async with agent.run("Fresh bread, every morning, for everyone.", session) as stream:
            async for update in stream:
                if update.type in ("text_delta", "tool_called"):
                    shown = update.text if update.type == "text_delta" else update.result
                    print(f"{'/'.join(update.path):<28} {update.type:<11} {shown}")
        response = await agent.run("And for a cafe?", session).collect()
        print("second turn:", [m.text for m in response.messages])
        print("tokens in the tree:", response.usage.total_tokens)
        await agent.reset()


if __name__ == "__main__":
    anyio.run(main)
