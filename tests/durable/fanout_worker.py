"""A durable-run worker for the fan-out tests: a superstep of two branches, spread over workers.

    python -m tests.durable.fanout_worker DB_URL BASE_URL EXECUTOR RUN_ID MODE BARRIER_PORT
        [--die-in-meet] [--effects FILE]

The graph: `plan` (code) fans out to the agents `north` and `south`, which fan in to `merge`
(code). Each branch calls the tool `meet`, which waits at the test's barrier (a TCP server on
BARRIER_PORT) until both branches arrived, so with one node step per worker at a time the two
branches run on two workers; it writes `meet:{branch}:{worker}` to the effects file (so the
test sees which worker ran which branch), then, with `--die-in-meet` in MODE `start`, the
worker SIGKILLs itself. `plan` and `merge` write `plan` and `merge` there too.

MODE `start` starts run RUN_ID and prints its result; `stand` launches, prints
`{"ready": true}`, then obeys one line on stdin: `resume` (take over RUN_ID, whose worker
died: `raf.durable.resume`) and follow its DBOS stream to its end (printing the completed
messages it holds as `{"said": [[path, text], ...]}`, then its result), or `stop`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
from dbos import DBOS

from raf import ChatMessage, ReactAgent, Session
from raf.durable import DurableAgent, resume
from raf.durable.envelopes import STREAM, TurnEnvelope, UpdateEnvelope, envelope_adapter
from raf.engine import FunctionExecutor, NodeContext, WorkflowBuilder
from raf.providers.base import LlmProvider
from raf.tools import tool
from raf.updates import MessageCompleted
from tests.durable.process import configure_dbos, print_result

BRANCHES = ("north", "south")


def prompt(branch: str) -> str:
    return f"You are the {branch} branch: meet the other branch, then report."


def graph(provider: LlmProvider, effects: Path, worker: str, port: int, die: bool) -> Any:
    def note(line: str) -> None:
        with effects.open("a") as f:
            f.write(line + "\n")

    @tool(idempotent=True)
    async def meet(branch: str) -> str:
        """Wait for the other branch."""
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(f"{branch}\n".encode())
            await stream.receive()
        note(f"meet:{branch}:{worker}")
        if die:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        return f"{branch} met"

    async def plan(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        note("plan")
        await ctx.send(conversation)

    async def merge(reports: list[Any], ctx: NodeContext) -> None:
        note("merge")
        lines = [m[-1].text if isinstance(m, list) else str(m) for m in reports]
        await ctx.yield_output(ChatMessage.assistant(" | ".join(lines)))

    agents = [ReactAgent(b, provider, prompt(b), tools=[meet]) for b in BRANCHES]
    return (
        WorkflowBuilder("team")
        .add_executor(FunctionExecutor("plan", plan))
        .add_fan_out("plan", agents)
        .add_fan_in(agents, FunctionExecutor("merge", merge))
        .set_start("plan")
        .build()
        .as_agent()
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("base_url")
    parser.add_argument("executor")
    parser.add_argument("run_id")
    parser.add_argument("mode", choices=["start", "stand"])
    parser.add_argument("port", type=int)
    parser.add_argument("--die-in-meet", action="store_true")
    parser.add_argument("--effects", default="effects.txt")
    args = parser.parse_args()
    from raf.providers.openai import OpenAIProvider, create_client

    configure_dbos("raf-fanout", args.db, args.executor)
    provider = OpenAIProvider(create_client(args.base_url, "test-key"), "scripted")
    die = args.die_in_meet and args.mode == "start"
    agent = graph(provider, Path(args.effects), args.executor, args.port, die)
    durable = DurableAgent(agent, worker_concurrency=1, poll_seconds=0.05)
    DBOS.launch()
    if args.mode == "start":
        session = Session(id=args.run_id.split(":")[1])  # the run id is team:{session}:0
        response = await durable.run("Report, both of you.", session)
        print(json.dumps({"turn": response.status}), flush=True)
    else:
        print(json.dumps({"ready": True}), flush=True)
        command = (await asyncio.to_thread(sys.stdin.readline)).strip()
        if command == "stop":
            DBOS.destroy()
            return
        await resume(args.run_id)
        said: list[tuple[str, str]] = []  # the completed messages the run's stream holds
        async for text in DBOS.read_stream_async(args.run_id, STREAM, polling_interval_sec=0.01):
            item = envelope_adapter.validate_json(str(text))
            if isinstance(item, UpdateEnvelope) and isinstance(item.update, MessageCompleted):
                said.append(("/".join(item.update.path), item.update.message.text))
            if isinstance(item, TurnEnvelope) and item.response.status == "completed":
                break
        print(json.dumps({"said": said}), flush=True)
    await print_result(args.run_id)


if __name__ == "__main__":
    asyncio.run(main())
