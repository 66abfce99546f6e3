"""A sequential workflow: a writer drafts, an editor tightens; each sees the conversation so far.

Run: python examples/sequential.py (or, from the repository root, python -m examples.sequential)
"""

from __future__ import annotations

import anyio

from raf import ReactAgent, SequentialBuilder
from raf.testing import text

if __package__:  # python -m examples.sequential
    from examples._models import last_text, provider_for
else:  # python examples/sequential.py
    from _models import last_text, provider_for


async def main() -> None:
    async with (
        provider_for(lambda m: text("Slogan: Fresh bread, every morning, for everyone.")) as w,
        provider_for(lambda m: text(f"Edited: {last_text(m).split(': ', 1)[-1]}")) as e,
    ):
        writer = ReactAgent("writer", w, "Write a one-line slogan for the request.")
        editor = ReactAgent("editor", e, "Tighten the slogan in the conversation; answer it only.")
        pipeline = SequentialBuilder(id="copy").add_agent(writer).add_agent(editor).build()
        agent = pipeline.as_agent(description="Writes and edits a slogan.")

        async with agent.run("A slogan for a neighbourhood bakery.") as stream:
            async for update in stream:
                if update.type == "text_delta":
                    print(f"[{'/'.join(update.path)}] {update.text}")
                elif update.type in ("executor_invoking", "executor_invoked"):
                    print(f"  {update.type}: {update.executor_id}")
        print(pipeline.to_mermaid())


if __name__ == "__main__":
    anyio.run(main)
