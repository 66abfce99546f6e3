"""How a workflow agent that waits for a human keeps its place in the session.

Under `"{agent path}#pending"` it keeps `{"requests": [{"request_id", "payload"}, ...],
"state": <engine state JSON>}`. A parent node finds it there (a nested workflow ended waiting)
and waits on the same request ids; the next turn answers them and the agent resumes from the
kept state. Everything kept is JSON, so a waiting session survives `Session.to_json()`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from raf.engine.checkpointing import encode_state
from raf.engine.codec import decode, encode
from raf.engine.state import RunState
from raf.messages import ChatMessage
from raf.session import Session

__all__ = ["answers_from", "clear_waiting", "kept_state", "pending_key", "requests_of"]

ENGINE_ROOT = "raf.engine.root"
"""`RunContext.extras` key set by the outermost engine of a run (only it checkpoints)."""
RESPONSES = "responses"
"""`RunContext.extras` key holding answers to human requests, by request id."""


def pending_key(path: tuple[str, ...]) -> str:
    """The session key where the agent at `path` keeps its waiting state."""
    return "/".join(path) + "#pending"


def kept_state(state: RunState) -> dict[str, Any]:
    """What a waiting agent keeps: its requests and its engine state (outputs left out)."""
    return {
        "requests": [
            {
                "request_id": r.request_id,
                "payload": encode(r.payload, "a request payload", r.node_id),
            }
            for r in state.requests
        ],
        "state": encode_state(state, outputs=False),
    }


def requests_of(kept: Any) -> list[tuple[str, Any]]:
    """`(request id, payload)` of the requests a waiting agent keeps, oldest first."""
    requests = cast(list[dict[str, Any]], cast(dict[str, Any], kept)["requests"])
    return [(str(r["request_id"]), decode(r["payload"])) for r in requests]


def clear_waiting(session: Session, path: tuple[str, ...]) -> None:
    """Forget the waiting state of the agent at `path` and of every agent nested in it."""
    session.pop(pending_key(path))
    prefix = "/".join(path) + "/"
    for key in session.keys(prefix):
        if key.endswith("#pending"):
            session.pop(key)


def answers_from(messages: Sequence[ChatMessage], request_ids: Sequence[str]) -> dict[str, Any]:
    """The answers a turn's messages give to pending requests.

    A tool message with `ToolResultContent(call_id=request_id, result=<JSON>)` answers that
    request with the parsed JSON (the text itself when it is not JSON); a user message's text
    answers the oldest request not answered yet.

    Example:
        >>> answers_from([ChatMessage.user("yes")], ["wf/review@1#0"])
        {'wf/review@1#0': 'yes'}
    """
    remaining = list(request_ids)
    answers: dict[str, Any] = {}
    for message in messages:
        results = [c for c in message.contents if c.type == "tool_result"]
        if results:
            for result in results:
                if result.call_id in remaining:
                    remaining.remove(result.call_id)
                    answers[result.call_id] = _parse(result.result)
        elif message.role == "user" and remaining:
            answers[remaining.pop(0)] = message.text
    return answers


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
