"""How a workflow agent keeps its place in the session: waiting for a human, or mid-run.

Under `"{agent path}#pending"` a waiting agent keeps `{"requests": [{"request_id", "payload"},
...], "state": <engine state JSON>}`. A parent node finds it there (a nested workflow ended
waiting) and waits on the same request ids; the next turn answers them and the agent resumes
from the kept state. Everything kept is JSON, so a waiting session survives `Session.to_json()`.

Under `"{agent path}#running"` a nested workflow whose root checkpoints keeps its state after
each of its supersteps, `{call: {"graph", "state"}}`, for as long as it runs. `call` names the
parent node's call that runs it (`"{node}@{superstep}#{n}"`, after its own parent's call when
nested deeper). The root's checkpoints carry it in their session snapshot; when a resume
re-runs the parent's superstep, the same call continues from it instead of starting over.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from raf.engine.checkpointing import decode_state, encode_state
from raf.engine.codec import decode, encode
from raf.engine.state import RunState
from raf.messages import ChatMessage
from raf.session import Session

__all__ = [
    "answers_from",
    "clear_running",
    "clear_waiting",
    "drop_running",
    "keep_running",
    "kept_state",
    "open_requests",
    "pending_key",
    "requests_of",
    "saved_running",
]

ENGINE_ROOT = "raf.engine.root"
"""`RunContext.extras` key set by the outermost engine of a run (only it checkpoints)."""
RESPONSES = "responses"
"""`RunContext.extras` key holding answers to human requests, by request id."""
CHECKPOINTER = "raf.engine.checkpointer"
"""`RunContext.extras` key of the root runner while it checkpoints into a store."""


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


def keep_running(session: Session, key: str, *, call: str, state: RunState, graph: str) -> None:
    """Keep a nested workflow's state between its supersteps, for the parent's `call`.

    Raises:
        CheckpointValueError: naming the node whose message or output is not serializable.
    """
    kept = {"graph": graph, "state": encode_state(state)}
    calls = _running(session, key)
    # Other calls' states stay: a restored session may hold one for a later call of this path.
    session.set(key, {**calls, call: kept} if calls else {call: kept})


def saved_running(session: Session, key: str, *, call: str, graph: str) -> RunState | None:
    """The state `keep_running` kept for this `call`, or None.

    Raises:
        ValueError: when a different graph of the workflow kept it.
    """
    kept = _running(session, key).get(call)
    if kept is None:
        return None
    if kept.get("graph") != graph:
        path = key.removesuffix("#running")
        raise ValueError(
            f"the checkpoint holds the state of nested workflow {path!r} from a different graph "
            "(nodes or edges changed); resume it with the graph that wrote it"
        )
    return decode_state(cast(dict[str, Any], kept["state"]))


def drop_running(session: Session, key: str, *, call: str) -> None:
    """Forget the state kept for `call` (its run ended: the root's checkpoints hold it)."""
    calls = _running(session, key)
    if call not in calls:
        return
    rest = {other: kept for other, kept in calls.items() if other != call}
    if rest:
        session.set(key, rest)
    else:
        session.pop(key)


def _running(session: Session, key: str) -> dict[str, dict[str, Any]]:
    found = session.get(key)
    return cast(dict[str, dict[str, Any]], found) if isinstance(found, dict) else {}


def clear_running(session: Session, prefix: str) -> None:
    """Forget the mid-run states kept under `prefix` (none is running between supersteps)."""
    for key in session.keys(prefix):
        if key.endswith("#running"):
            session.pop(key)


def requests_of(kept: Any) -> list[tuple[str, Any]]:
    """`(request id, payload)` of the requests a waiting agent keeps, oldest first."""
    requests = cast(list[dict[str, Any]], cast(dict[str, Any], kept)["requests"])
    return [(str(r["request_id"]), decode(r["payload"])) for r in requests]


def open_requests(kept: Any) -> list[str]:
    """Ids of the requests a waiting agent keeps that have no answer yet, oldest first."""
    state = cast(dict[str, Any], kept)["state"]
    answered = {str(request_id) for request_id, _ in state["answers"]}
    return [rid for rid, _ in requests_of(kept) if rid not in answered]


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
