"""Agents the CLI and ACP tests run in a `raf` subprocess (`tests.cli.targets:NAME`)."""

from __future__ import annotations

import time

from pydantic import BaseModel

from raf import (
    ChatMessage,
    FunctionAgent,
    FunctionExecutor,
    NodeContext,
    ReactAgent,
    SequentialBuilder,
    WorkflowBuilder,
    tool,
)
from raf.testing import ScriptedProvider, resolve, text, tool_calls

STARTED = "tool started"
"""What the slow tool prints on stdout once it runs."""


@tool
def wait_a_minute() -> str:
    """Sleep for a minute, blocking its worker thread."""
    print(STARTED, flush=True)
    time.sleep(60)
    return "done"


def slow() -> ReactAgent:
    """A ReAct agent whose only tool blocks its thread for a minute."""
    provider = ScriptedProvider([tool_calls(("wait_a_minute", {})), text("finished")])
    return ReactAgent("sleeper", provider, "Wait.", tools=[wait_a_minute])


class Title(BaseModel):
    title: str


def structured() -> ReactAgent:
    """Answers in plain text first, is corrected, then resolves."""
    provider = ScriptedProvider([text("a plain answer"), resolve({"title": "Cats"})])
    return ReactAgent("titler", provider, "Give a title.", output_schema=Title)


async def _review(conversation: list[ChatMessage], ctx: NodeContext) -> None:
    verdict = await ctx.request_info(
        {"question": f"publish {conversation[-1].text!r}?", "options": ["approve", "reject"]}
    )
    await ctx.yield_output(
        ChatMessage.assistant(f"{conversation[-1].text}: {verdict}", author="review")
    )


def approval() -> object:
    """writer -> review (asks a human whether to publish), a graph."""
    writer = FunctionAgent("writer", lambda m: f"draft on {m[-1].text}")
    return (
        WorkflowBuilder("approval")
        .add_edge(writer, FunctionExecutor("review", _review))
        .set_start("writer")
        .build()
    )


def tools_and_thoughts() -> ReactAgent:
    """Thinks, calls a tool, answers."""
    provider = ScriptedProvider(
        [
            tool_calls(("shout", {"word": "hello"})),
            text("It said HELLO.", reasoning="The tool answered."),
        ]
    )
    return ReactAgent("caller", provider, "Shout.", tools=[shout])


@tool
def shout(word: str) -> str:
    """Upper-case a word.

    Args:
        word: the word.
    """
    return word.upper()


def pair() -> object:
    """Two function agents in sequence."""
    return (
        SequentialBuilder(id="pair")
        .add_agent(FunctionAgent("first", lambda m: "one"))
        .add_agent(FunctionAgent("second", lambda m: "two"))
        .build()
    )


def needs_args(name: str, size: int = 3) -> FunctionAgent:
    """A factory raf cannot call."""
    return FunctionAgent(name, lambda m: "x" * size)


def broken() -> FunctionAgent:
    """A factory that fails."""
    raise RuntimeError("the database is down")


def no_key() -> object:
    """Builds an OpenAI client with no key in the environment."""
    import openai

    return openai.AsyncOpenAI()


def counter() -> FunctionAgent:
    """Says how many user messages its conversation has."""
    return FunctionAgent("counter", lambda m: f"{sum(x.role == 'user' for x in m)} user messages")


def failing() -> object:
    """A sequence whose only agent raises."""

    def fail(messages: list[ChatMessage]) -> str:
        raise RuntimeError("[bold]no[/bold] database")

    return SequentialBuilder(id="s").add_agent(FunctionAgent("b", fail)).build()


async def _ask_title(conversation: list[ChatMessage], ctx: NodeContext) -> None:
    title = await ctx.request_info("What title should it have?")
    await ctx.yield_output(ChatMessage.assistant(f"titled {title}", author="titling"))


def question() -> object:
    """A graph that asks a free-text question."""
    titling = FunctionExecutor("titling", _ask_title)
    return WorkflowBuilder("question").add_executor(titling).set_start("titling").build()
