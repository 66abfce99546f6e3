"""A durable-run worker for the recovery tests: one process, killed at a chosen point.

    python -m tests.durable.worker DB_URL BASE_URL EXECUTOR RUN_ID MODE [--die-at POINT]
        [--answer TEXT] [--effects FILE]

MODE `start` starts run RUN_ID; `resume` takes over a run whose worker died (DBOS
`resume_workflow`); `restart` only launches (DBOS recovers this executor's pending runs).
POINT is where the process SIGKILLs itself: `token:N` (the N-th live token), `completed:N`
(the N-th completed message: between steps), `tool:NAME` (inside a call of tool NAME, after
its effect),
`waiting` (while the run waits for a human). It prints one JSON line per turn end and the
final result as `{"result": ...}`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from dbos import DBOS

from raf import ChatMessage, ReactAgent, Session
from raf.durable import DurableAgent, answer, resume
from raf.durable.envelopes import STREAM, TurnEnvelope, envelope_adapter
from raf.engine import FunctionExecutor, NodeContext, WorkflowBuilder
from raf.providers.openai import OpenAIProvider, create_client
from raf.tools import tool
from tests.durable.process import configure_dbos, effect, print_result

RESEARCHER = "Find the weather, then mail Bob."
WRITER = "Write one line for the user."


def build(base_url: str, effects: Path, die_in: str) -> tuple[DurableAgent, object]:
    client = create_client(base_url, "test-key")
    provider = OpenAIProvider(client, "scripted")

    @tool(idempotent=True)
    def lookup(q: str) -> str:
        """Look something up."""
        effect(effects, f"lookup:{q}", die=die_in == "lookup")
        return f"{q}: sunny"

    @tool
    def send_mail(to: str, body: str) -> str:
        """Send a mail (an effect: it must not happen twice)."""
        effect(effects, f"{to}:{body}", die=die_in == "send_mail")
        return "sent"

    async def review(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        verdict = await ctx.request_info({"draft": conversation[-1].text})
        await ctx.send([*conversation, ChatMessage.user(f"Reviewer: {verdict}")])

    researcher = ReactAgent("researcher", provider, RESEARCHER, tools=[lookup, send_mail])
    writer = ReactAgent("writer", provider, WRITER)
    workflow = (
        WorkflowBuilder("team")
        .add_edge(researcher, FunctionExecutor("review", review))
        .add_edge("review", writer)
        .set_start("researcher")
        .build()
    )
    return DurableAgent(workflow.as_agent()), client


def die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("base_url")
    parser.add_argument("executor")
    parser.add_argument("run_id")
    parser.add_argument("mode", choices=["start", "resume", "restart"])
    parser.add_argument("--die-at", default="")
    parser.add_argument("--answer", action="append", default=[])
    parser.add_argument("--effects", default="effects.txt")
    args = parser.parse_args()
    configure_dbos("raf-recovery", args.db, args.executor)
    durable, _client = build(args.base_url, Path(args.effects), args.die_at.removeprefix("tool:"))
    DBOS.launch()
    answers = list(args.answer)
    kind, _, count = args.die_at.partition(":")
    seen = {"text_delta": 0, "message_completed": 0}
    if args.mode == "start":
        session = Session(id="recovery")
        run = durable.run("What should I tell Bob?", session)
        while True:
            async with run as stream:
                async for update in stream:
                    if update.type in seen:
                        seen[update.type] += 1
                        if kind == {"text_delta": "token"}.get(update.type, "completed") and (
                            seen[update.type] == int(count)
                        ):
                            die()
            response = run.response
            assert response is not None
            print(json.dumps({"turn": response.status}), flush=True)
            if response.status != "waiting":
                break
            if kind == "waiting":
                die()
            run = durable.run(answers.pop(0), session)
    else:
        if os.environ.get("RAF_WORKER_READY"):  # standing by: someone else resumes the run
            print(json.dumps({"ready": True}), flush=True)
            await asyncio.to_thread(sys.stdin.readline)  # the run exists: follow it
        if args.mode == "resume":
            await resume(args.run_id)
        async for text in DBOS.read_stream_async(args.run_id, STREAM, polling_interval_sec=0.01):
            item = envelope_adapter.validate_json(str(text))
            if isinstance(item, TurnEnvelope) and item.response.status == "waiting":
                asked = [r.payload for r in item.response.pending]
                print(json.dumps({"asked": asked}), flush=True)
                await answer(args.run_id, answers.pop(0))
            if isinstance(item, TurnEnvelope) and item.response.status == "completed":
                break
    await print_result(args.run_id)


if __name__ == "__main__":
    asyncio.run(main())
