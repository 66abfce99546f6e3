"""A nested workflow run in a child process that stops, announced, where a test kills it.

`python -m tests.reliability.crash_workflow STORE POINT LOG OUT BACKEND` runs (or resumes) a
sequential of [plan, concurrent of [lookup (with a tool), a sequential of [draft, polish]],
a human gate] on the scripted model, with checkpoints in STORE (`sqlite:PATH` or
`postgres:DSN#SCHEMA`). Every model call and tool call appends one line to LOG, written after
the call did its work. At POINT (`model`, `checkpoint`, `tool`, `human`) it prints `AT POINT`
and blocks the whole process on stdin, so the test kills it exactly there; `resume` continues
the latest checkpoint of the session in a new process, and `none` runs to the end. The last
process writes OUT: the final answer, the status and the session's history.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from raf import (
    ChatMessage,
    ConcurrentBuilder,
    FunctionExecutor,
    NodeContext,
    ReactAgent,
    SequentialBuilder,
    Session,
    WorkflowAgent,
    WorkflowBuilder,
    tool,
)
from raf.messages import message_list_adapter
from raf.stores import Checkpoint
from raf.testing import ScriptedProvider, Turn, text, tool_calls
from tests.reliability.processes import open_store

SESSION = "crash-session"


class Stop:
    """Where this process announces itself and blocks until it is killed."""

    def __init__(self, point: str, log: Path) -> None:
        self.point = point
        self.log = log
        self.done: set[str] = set()

    def at(self, point: str) -> None:
        if point == self.point:
            print(f"AT {point}", flush=True)
            # Blocks the event loop itself: nothing else of the run moves until the kill.
            sys.stdin.readline()
            raise SystemExit(f"{point}: stdin closed before the kill")

    def effect(self, name: str) -> None:
        self.done.add(name)
        with self.log.open("a") as file:
            file.write(name + "\n")


def model(stop: Stop, agent: str) -> ScriptedProvider:
    def answer(messages: list[ChatMessage]) -> Turn:
        calls = sum(1 for m in messages if m.role == "assistant" and m.author in (None, agent))
        if agent == "polish":
            stop.at("model")
        if agent == "lookup" and not any(m.role == "tool" for m in messages):
            stop.effect(f"model:{agent}:ask")
            return tool_calls(("search", {"query": "facts"}))
        stop.effect(f"model:{agent}")
        return text(f"{agent} says {len(messages)}/{calls}")

    return ScriptedProvider(answer)


def build(stop: Stop) -> WorkflowAgent:
    @tool(idempotent=True)  # a lookup: a call in doubt after the kill runs again
    async def search(query: str) -> str:
        """Look something up."""
        stop.at("tool")
        stop.effect("tool:search")
        return f"found {query}"

    async def gate(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        answer = await ctx.request_info({"approve": conversation[-1].text})
        stop.effect("gate:answered")
        await ctx.yield_output(ChatMessage.assistant(f"gate got {answer}", author="gate"))

    def react(agent_id: str, tools: list[Any] | None = None) -> ReactAgent:
        return ReactAgent(agent_id, model(stop, agent_id), f"You are {agent_id}.", tools or [])

    writing = SequentialBuilder(id="writing").add_agent(react("draft")).add_agent(react("polish"))
    research = (
        ConcurrentBuilder(id="research")
        .add_agent(react("lookup", [search]))
        .add_agent(writing.build().as_agent())
        .build()
    )
    human = (
        WorkflowBuilder("human")
        .add_executor(FunctionExecutor("gate", gate))
        .set_start("gate")
        # One node, its start: right by construction. The structure pass would load
        # networkx in every process (~0.45 CPU-s, a third of the child's CPU).
        .build(check_structure=False)
    )
    return (
        SequentialBuilder(id="root")
        .add_agent(react("plan"))
        .add_agent(research.as_agent())
        .add_agent(human.as_agent())
        .build()
        .as_agent()
    )


def blocking(store_class: type[Any], stop: Stop) -> type[Any]:
    """`store_class` whose first save after `draft` did its work (the nested sequential's
    checkpoint of it) stops at `checkpoint`, before it commits."""

    class Blocking(store_class):  # type: ignore[misc, valid-type]
        async def save(self, checkpoint: Checkpoint) -> None:
            if "model:draft" in stop.done:
                stop.at("checkpoint")
            await super().save(checkpoint)

    return Blocking


def history(agent: WorkflowAgent, session: Session) -> list[list[str | None]]:
    messages = session.get_as(f"{agent.id}#history", message_list_adapter) or []
    return [[m.role, m.author, m.text] for m in messages]


async def main(spec: str, point: str, log: Path, out: Path) -> None:
    stop = Stop(point, log)
    agent = build(stop)
    async with open_store(spec, lambda kind: blocking(kind, stop)) as store:
        if point == "resume":
            latest = await store.latest(SESSION)
            assert latest is not None, "no checkpoint to resume"
            session = Session(id=SESSION, store=store)
            resumed = await agent.workflow.resume(latest, store, session=session, on_busy="wait")
            status = resumed.status
        elif point == "answer":
            saved = await anyio.Path(out.with_suffix(".session")).read_text()
            session = Session.from_json(saved, store=store)
            status = "waiting"
        else:
            session = Session(id=SESSION, store=store)
            first = await agent.run("go", session).collect()
            status = first.status
        if status == "waiting":
            if point == "human":
                await anyio.Path(out.with_suffix(".session")).write_text(session.to_json())
                stop.at("human")
            response = await agent.run("yes", session).collect()
            status, final = response.status, response.text
        else:
            final = ""
        await anyio.Path(out).write_text(
            json.dumps({"status": status, "text": final, "history": history(agent, session)})
        )


if __name__ == "__main__":
    store_spec, where, log_file, out_file, backend = sys.argv[1:6]
    anyio.run(main, store_spec, where, Path(log_file), Path(out_file), backend=backend)
