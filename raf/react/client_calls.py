"""Calls of the tools a run's caller executes itself (`RunOptions.client_tools`).

A ReAct agent offers the client tools to its model besides its own tools. A call of one is
not run here: the round's other calls run, then the agent's turn ends `waiting`, with one
request per client call, id `"{agent place}/{call id}"` and payload
`{"client_tool": name, "call_id": call id, "arguments": the arguments}`. The agent keeps the
messages of that turn and the calls it waits on in its session (`"{agent place}#client_calls"`,
so a checkpoint holds them and the ids come out the same). The next turn answers them as
raf's requests are answered: a tool message `ToolResultContent(call_id=<request id>, ...)`
answers that call (an error when its `is_error` is set: the client's tool failed), plain text
the oldest open one. The model then sees each answer as the tool result of its own call,
marked as an error where the answer was one, and the loop goes on. A turn that fails leaves
the wait as it was, so the next turn can answer it again.

Example:
    >>> import anyio
    >>> from raf import RunOptions, Session
    >>> from raf.messages import ChatMessage
    >>> from raf.react import ReactAgent
    >>> from raf.testing import ScriptedProvider, text, tool_calls
    >>> from raf.tools import ToolDefinition
    >>> model = ScriptedProvider([tool_calls(("locate", {})), text("You are in Paris.")])
    >>> agent = ReactAgent("guide", model, "Help.")
    >>> options = RunOptions(client_tools=[ToolDefinition(name="locate")])
    >>> session = Session()
    >>> first = anyio.run(lambda: agent.run("Where am I?", session, options).collect())
    >>> first.status, [r.request_id for r in first.pending]
    ('waiting', ['guide/call_1'])
    >>> answer = ChatMessage.tool_result("guide/call_1", '"Paris"')
    >>> anyio.run(lambda: agent.run(answer, session, options).collect()).text
    'You are in Paris.'
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Container, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from raf._defaults import new_list
from raf.engine.children import CLIENT_WAIT
from raf.errors import ToolError, UnansweredCalls
from raf.messages import ChatMessage, ToolCallContent, ToolResultContent
from raf.react.resolve import before_resolve
from raf.run import RunContext
from raf.updates import AgentPath, RequestInfoUpdate

if TYPE_CHECKING:
    from raf.react.loop import ReactLoop
    from raf.tools.definition import ToolDefinition

__all__ = [
    "CLIENT_CALLS",
    "CLIENT_TOOL",
    "ClientCalls",
    "client_call_id",
    "with_client_tools",
]

CLIENT_TOOL = "client_tool"
"""The payload key naming the client tool of a request that is a client tool's call."""

CLIENT_CALLS = CLIENT_WAIT.removeprefix("#")
"""The name of the session entry (`"{agent place}#client_calls"`) of an agent's open calls."""


class ClientCalls(BaseModel):
    """What a ReAct agent whose turn waits on client tool calls keeps in its session."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    calls: list[tuple[str, str]]
    """The calls it waits on: request id and the model's call id, in call order."""
    messages: list[ChatMessage] = Field(default_factory=new_list)
    """The messages of the waiting turn (its model's calls, the results of its own tools)."""

    @staticmethod
    def key(place: AgentPath) -> str:
        """The session key of the agent at `place`."""
        return "/".join(place) + "#" + CLIENT_CALLS

    @classmethod
    def load(cls, ctx: RunContext) -> ClientCalls | None:
        """What the agent of `ctx` keeps, or None."""
        kept = ctx.session.get(cls.key(ctx.place))
        if kept is None or isinstance(kept, ClientCalls):
            return kept
        return cls.model_validate(kept)  # JSON, from a saved session

    def answers(
        self, messages: Sequence[ChatMessage]
    ) -> tuple[dict[str, str], set[str], list[str], list[ChatMessage]]:
        """The answers `messages` give (request id to text), the ids answered with an error,
        the ids left open, and the messages that answer none: a tool result naming a request
        answers it, a user message's text the oldest one open."""
        open_ = [request_id for request_id, _ in self.calls]
        answers: dict[str, str] = {}
        errors: set[str] = set()
        rest: list[ChatMessage] = []
        for message in messages:
            results = [c for c in message.contents if c.type == "tool_result"]
            for result in results:
                if result.call_id in open_:
                    open_.remove(result.call_id)
                    answers[result.call_id] = result.result
                    if result.is_error:
                        errors.add(result.call_id)
            if not results and message.role == "user" and open_:
                answers[open_.pop(0)] = message.text
            elif not any(r.call_id in answers for r in results):
                rest.append(message)
        return answers, errors, open_, rest

    def results(
        self, answers: Mapping[str, Any], errors: Container[str], author: str | None
    ) -> list[ChatMessage]:
        """The model's view of `answers`: a tool result of each call, in call order, an error
        one where the request's id is in `errors`."""
        return [
            ChatMessage(
                role="tool",
                contents=[
                    ToolResultContent(
                        call_id=call_id,
                        result=_text(answers[request_id]),
                        is_error=request_id in errors,
                    )
                ],
                author=author,
            )
            for request_id, call_id in self.calls
            if request_id in answers
        ]

    def answered_turn(
        self, messages: Sequence[ChatMessage], ctx: RunContext, author: str | None
    ) -> list[ChatMessage]:
        """A root agent's new `messages` as its model sees them: first the tool results of
        the calls they answer, then the rest.

        Raises:
            UnansweredCalls: when a call stays unanswered (the model cannot go on without it).
        """
        answers, errors, open_, rest = self.answers(messages)
        if open_:
            raise UnansweredCalls(open_, path=ctx.path)
        return [*self.results(answers, errors, author), *rest]


def _text(answer: Any) -> str:
    return answer if isinstance(answer, str) else json.dumps(answer)


def client_call_id(payload: Any) -> str | None:
    """The model's call id, when `payload` is a request's for a client tool call."""
    if isinstance(payload, dict) and CLIENT_TOOL in payload:
        call_id = payload.get("call_id")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        return call_id if isinstance(call_id, str) else None
    return None


def requests(calls: Sequence[ToolCallContent], ctx: RunContext) -> list[RequestInfoUpdate]:
    """One request per client call, for the agent of `ctx`."""
    base = "/".join(ctx.place)
    return [
        RequestInfoUpdate(
            request_id=f"{base}/{call.call_id}",
            payload={CLIENT_TOOL: call.name, "call_id": call.call_id, "arguments": _args(call)},
            path=ctx.path,
        )
        for call in calls
    ]


def _args(call: ToolCallContent) -> Any:
    try:
        return json.loads(call.arguments or "{}")
    except ValueError:
        return call.arguments


async def wait_on(
    calls: Sequence[ToolCallContent], messages: list[ChatMessage], ctx: RunContext
) -> list[RequestInfoUpdate]:
    """Stream the requests of `calls` and keep what the turn waits on: the agent's turn ends
    waiting on them, with `messages` its messages so far."""
    asked = requests(calls, ctx)
    kept = ClientCalls(
        calls=[(r.request_id, c.call_id) for r, c in zip(asked, calls, strict=True)],
        messages=messages,
    )
    ctx.session.set(ClientCalls.key(ctx.place), kept)
    for request in asked:
        ctx.turn.asked.append(request.request_id)
        await ctx.emit(request)
    return asked


def with_client_tools(loop: ReactLoop, tools: Sequence[ToolDefinition], who: str) -> ReactLoop:
    """`loop` offering `tools` too (before `resolve`), their calls left to the client.

    Raises:
        ToolError: when a client tool is named like a tool of the loop.
    """
    own = {d.name for d in loop.tools} | {e.name for e in loop.exits}
    for definition in tools:
        if definition.name in own:
            raise ToolError(
                f"{who} has its own tool {definition.name!r} and the run's client tools "
                f"offer a tool {definition.name!r} too; rename the client's tool or the "
                "agent's (@tool(name=...)), a model cannot tell them apart"
            )
    names = [d.name for d in tools]
    if len(set(names)) < len(names):
        raise ToolError(f"the run's client tools name a tool twice: {sorted(names)}")
    definitions = before_resolve(loop.tools, tools)
    return dataclasses.replace(loop, tools=definitions, client=frozenset(names))
