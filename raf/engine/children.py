"""How a workflow node runs an agent: in place when it is raf's, through its `run()` when not.

An agent that is not raf's keeps its own session inside this one while it waits
(`"{agent path}#foreign"`), and the next turn runs it on that session with the answers to its
requests as typed tool results. A node that runs an agent afresh (not a resumed handling)
forgets what the agent kept from an earlier wait. The rest of the run protocol is
`raf.engine.protocol`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from raf.agent import invoke_foreign
from raf.messages import ChatMessage, ToolResultContent
from raf.run import RunContext
from raf.session import Session
from raf.updates import AgentPath, AgentResponse

if TYPE_CHECKING:
    from raf.agent import IAgent

__all__ = [
    "CLIENT_WAIT",
    "FOREIGN",
    "RUNNING",
    "WAITING",
    "forget_waiting",
    "invoke_foreign_child",
    "key_of",
    "text_of",
]

WAITING = "#pending"
"""Suffix of the session key where a waiting workflow agent keeps its state."""
RUNNING = "#running"
"""Suffix of the key where a nested workflow keeps its state between supersteps."""
FOREIGN = "#foreign"
"""Suffix of the key where a waiting agent that is not raf's keeps its session."""
CLIENT_WAIT = "#client_calls"
"""Suffix of the key where a ReAct agent waiting on client tool calls keeps them
(`raf.react.client_calls`)."""


def key_of(path: AgentPath, suffix: str) -> str:
    """The session key `suffix` of the agent at `path`."""
    return "/".join(path) + suffix


def text_of(value: Any) -> str:
    """An answer as text: a string as itself, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)


def forget_waiting(session: Session, base: str) -> None:
    """Forget what the agent whose path is `base` (joined), and every agent in it, keeps
    while waiting."""
    session.pop(base + WAITING)
    session.pop(base + FOREIGN)
    for key in session.keys(base + "/"):
        if key.endswith((WAITING, FOREIGN)):
            session.pop(key)


async def invoke_foreign_child(
    agent: IAgent, messages: list[ChatMessage], ctx: RunContext, place: AgentPath, fresh: bool
) -> AgentResponse:
    """Run an agent that is not raf's at `place` (see `RunContext`) for a workflow node whose
    agent context is `ctx`, on the session it keeps while it waits; `fresh` (not a resumed
    handling) forgets what it kept."""
    session = ctx.session
    base = "/".join(place)
    asks = place[:-1]
    prefix = "/".join(asks) + "/" if asks else ""
    key = base + FOREIGN
    kept = session.get(key)
    if fresh and kept is not None:
        forget_waiting(session, base)
        kept = None
    if kept is None:
        own = Session(store=session.store)
        response = await invoke_foreign(agent, messages, ctx, own, asks=asks)
    else:
        data = cast(dict[str, Any], kept)
        own = Session.from_json(str(data["session"]), store=session.store)
        answers = ctx.turn.answers
        replies = [
            ChatMessage(
                role="tool",
                contents=[
                    ToolResultContent(call_id=rid[len(prefix) :], result=text_of(answers[rid]))
                ],
            )
            for rid in cast(list[str], data["requests"])
            if rid in answers
        ]
        response = await invoke_foreign(agent, replies, ctx, own, asks=asks)
    if response.status == "waiting":
        requests = [r.request_id for r in response.pending]
        session.set(key, {"session": own.to_json(), "requests": requests})
    elif kept is not None:
        session.pop(key)
    return response
