"""Agent trees the server tests run: nested workflows on scripted models, offline."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio

from raf import FunctionAgent, IAgent, ReactAgent, SequentialBuilder, WorkflowBuilder, tool
from raf.engine import FunctionExecutor, NodeContext
from raf.messages import ChatMessage
from raf.testing import ScriptedProvider, Turn, text, tool_calls


@tool
def lookup(topic: str) -> str:
    """Look up the facts about a topic.

    Args:
        topic: what to look up.
    """
    return f"{topic}: founded 1911, 3 branches"


def _researcher_turn(messages: list[ChatMessage]) -> Turn:
    if messages[-1].role == "tool":
        return text(
            "Founded in 1911, three branches.", reasoning="The lookup answered; say it briefly."
        )
    return tool_calls(("lookup", {"topic": messages[-1].text}))


def newsroom() -> IAgent:
    """newsroom (graph): drafting (sequential: researcher [lookup] → writer) → review → publish.

    `review` asks a human whether to publish (the run ends waiting); the answer is published.
    """
    researcher = ReactAgent(
        "researcher",
        ScriptedProvider(_researcher_turn),
        "Look the topic up, then state the facts.",
        tools=[lookup],
        description="Finds the facts.",
    )
    writer = ReactAgent(
        "writer",
        ScriptedProvider(
            lambda m: text("A short piece on the library.", reasoning="Keep it to one line.")
        ),
        "Write one line from the facts.",
        description="Writes the piece.",
    )
    drafting = (
        SequentialBuilder(id="drafting")
        .add_agent(researcher)
        .add_agent(writer)
        .build()
        .as_agent(description="Researches and writes a draft.")
    )

    async def review(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        verdict = await ctx.request_info(
            {"prompt": "Publish this draft?", "draft": conversation[-1].text}
        )
        await ctx.send(f"{conversation[-1].text} [{verdict}]")

    async def publish(draft: str, ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant(f"Published: {draft}", author="publish"))

    return (
        WorkflowBuilder("newsroom")
        .add_edge(drafting, FunctionExecutor("review", review))
        .add_edge("review", FunctionExecutor("publish", publish))
        .set_start("drafting")
        .build()
        .as_agent(description="Drafts a piece and publishes it once a person approves.")
    )


class Stalling:
    """A leaf whose first turn streams one token, then waits until cancelled; later turns answer.

    Its events are `threading.Event`s: the server may run on another thread's event loop.
    """

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.agent = FunctionAgent("staller", self._stream, description="Stalls once.")

    async def _stream(self, messages: list[ChatMessage]) -> AsyncIterator[str]:
        if self.started.is_set():
            yield "back again"
            return
        yield "thinking"
        self.started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise


def failing_team() -> IAgent:
    """A sequence whose second agent raises (its model endpoint is down)."""

    def broken(messages: list[ChatMessage]) -> str:
        raise RuntimeError("the model endpoint is down")

    return (
        SequentialBuilder(id="team")
        .add_agent(FunctionAgent("ok", lambda m: "fine"))
        .add_agent(FunctionAgent("broken", broken))
        .build()
        .as_agent()
    )


def run_input(thread_id: str, *messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """An AG-UI RunAgentInput as JSON."""
    return {
        "threadId": thread_id,
        "runId": f"run-{thread_id}-{len(messages)}-{len(extra)}",
        "messages": list(messages),
        **extra,
    }


def user(message_id: str, content: str) -> dict[str, Any]:
    """An AG-UI user message as JSON."""
    return {"id": message_id, "role": "user", "content": content}


def stalling() -> IAgent:
    """A leaf that streams one token, then waits until it is cancelled (see `Stalling`)."""
    return Stalling().agent
