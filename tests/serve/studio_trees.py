"""Agents the studio page tests run: two questions at once, a group chat, a slow workflow."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

import anyio

from raf import FunctionAgent, GroupChatBuilder, IAgent, MaxRounds, WorkflowBuilder, round_robin
from raf.engine import FunctionExecutor, NodeContext
from raf.messages import ChatMessage
from tests.serve.trees import Stalling

INJECTION = 'Try <img src=x onerror="window.injected=1"> and [a link](javascript:alert(1))'


def two_questions() -> IAgent:
    """pair (graph): start fans out to `left` (choices) and `right` (free text), then `join`."""

    async def begin(message: object, ctx: NodeContext) -> None:
        await ctx.send("colours")

    async def left(message: str, ctx: NodeContext) -> None:
        answer = await ctx.request_info({"question": "Left colour?", "options": ["red", "blue"]})
        await ctx.send(f"left got: {answer}")

    async def right(message: str, ctx: NodeContext) -> None:
        answer = await ctx.request_info("Right colour?")
        await ctx.send(f"right got: {answer}")

    async def join(parts: list[str], ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant(" | ".join(sorted(parts)), author="join"))

    return (
        WorkflowBuilder("pair")
        .add_executor(FunctionExecutor("begin", begin))
        .add_fan_out("begin", [FunctionExecutor("left", left), FunctionExecutor("right", right)])
        .add_fan_in(["left", "right"], FunctionExecutor("join", join))
        .set_start("begin")
        .build()
        .as_agent(description="Asks two questions at once.")
    )


def chat() -> IAgent:
    """room (group chat): alice and bob take turns, two rounds each, in Markdown."""
    said = {"alice": 0, "bob": 0}

    def speaker(name: str, lines: list[str]) -> FunctionAgent:
        def answer(messages: list[ChatMessage]) -> str:
            said[name] += 1
            return lines[(said[name] - 1) % len(lines)]

        return FunctionAgent(name, answer, description=f"{name.title()} talks.")

    alice = speaker("alice", ["**Hello** from `alice`", INJECTION])
    bob = speaker("bob", ["- one\n- two", "Bye, see [docs](https://example.com/docs)"])
    return (
        GroupChatBuilder(id="room")
        .add_agent(alice)
        .add_agent(bob)
        .with_selector(round_robin())
        .with_termination(MaxRounds(4))
        .build()
        .as_agent(description="Two people talking.")
    )


def slow(stalling: Stalling) -> IAgent:
    """slow (graph): `staller` (stalls on its first turn) → `after`."""

    async def after(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant("after it", author="after"))

    return (
        WorkflowBuilder("slow")
        .add_edge(stalling.agent, FunctionExecutor("after", after))
        .set_start("staller")
        .build()
        .as_agent(description="Stalls, then goes on.")
    )


class Gated:
    """A leaf that streams one token, then waits for `release` before it answers.

    Its events are `threading.Event`s: the server runs on another thread's event loop.
    """

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.agent = FunctionAgent("gated", self._stream, description="Waits to be let go.")

    async def _stream(self, messages: list[ChatMessage]) -> AsyncIterator[str]:
        yield "waiting"
        self.started.set()
        await anyio.to_thread.run_sync(self.release.wait, abandon_on_cancel=True)
        yield " and done"
