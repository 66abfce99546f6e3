"""A process running one turn of a workflow that asks a human, on a session of a shared store,
for the tests of `test_session_resume.py`.

    python -m tests.reliability.ask_worker STORE SESSION PROMPT LOG

STORE is `sqlite:PATH` or `postgres:DSN#SCHEMA`. The workflow is `draft` (a function agent
that appends a line to LOG each time it runs) then `review` (a node that asks a human for a
verdict) then `publish`. The process opens the session by its id alone, prints what waits
on it as one JSON line, runs the turn with PROMPT, and prints the response as a JSON line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from raf import ChatMessage, FunctionAgent, IAgent, Session, WorkflowBuilder
from raf.engine import FunctionExecutor, NodeContext
from tests.reliability.processes import open_store


def workflow(log: Path) -> IAgent:
    def draft(messages: list[ChatMessage]) -> str:
        with log.open("a") as file:
            file.write("draft\n")
        return f"draft on {messages[0].text}"

    async def review(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        verdict = await ctx.request_info(
            {"question": "Publish it?", "draft": conversation[-1].text}
        )
        await ctx.send(f"{conversation[-1].text}: {verdict}")

    async def publish(line: str, ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant(line, author="desk"))

    return (
        WorkflowBuilder("desk")
        .add_edge(FunctionAgent("draft", draft), FunctionExecutor("review", review))
        .add_edge("review", FunctionExecutor("publish", publish))
        .set_start("draft")
        .build()
        .as_agent()
    )


async def main(spec: str, session_id: str, prompt: str, log: Path) -> None:
    agent = workflow(log)
    async with open_store(spec) as store:
        session = await Session.open(session_id, store)
        waiting = [r.model_dump(mode="json") for r in session.pending_requests()]
        print(json.dumps({"waiting": waiting}), flush=True)
        response = await agent.run(prompt, session=session)
        print(
            json.dumps(
                {
                    "status": response.status,
                    "text": response.text,
                    "pending": [r.request_id for r in response.pending],
                    "checkpoints": len(await store.list(session_id)),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]))
