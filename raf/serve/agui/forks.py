"""What a fork from a checkpoint (the studio's time travel) asks for, and where it goes on from.

A fork from a `turn` checkpoint copies the thread as saved after that run (`Threads.fork`). A
fork from a `step` checkpoint (the engine's state after one superstep of a run, or inside a
nested workflow's) runs the workflow agent whose turn saved it on from there, on the new
thread (`Resumed`, then `raf.engine.run_from`): the new thread starts from the source thread
as that turn found it, with the checkpoint's session.

Example:
    >>> ForkRequest(thread=None, agent=None).thread is None
    True
"""

from __future__ import annotations

import json
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, cast

from starlette.requests import Request

from raf.engine import WorkflowAgent
from raf.registry import AgentRegistry
from raf.serve.agui.streaming import Resumed
from raf.serve.threads import ThreadStore, check_thread_id, is_turn, turn_keys
from raf.stores import Checkpoint

__all__ = ["BODY_LIMIT", "ForkRefused", "ForkRequest", "read_fork_request", "resumption"]

BODY_LIMIT = 4096
"""The most bytes a fork's body may have."""


class ForkRefused(Exception):
    """A fork the studio refuses: the HTTP `status` to answer, and what to do."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ForkRequest:
    """A fork's body: `{}`, or `{"threadId": ..., "agent": ...}`."""

    thread: str | None
    """The new thread's id (None: a new random one)."""
    agent: str | None
    """The served agent (its path) that runs a step checkpoint on (None: the one whose
    turn saved it, when it is served at its own id)."""


async def read_fork_request(request: Request) -> ForkRequest:
    """The fork that `request`'s body asks for.

    Raises:
        ForkRefused: when the body is too large, not JSON, or names no usable thread id.
    """
    declared = request.headers.get("content-length", "")
    too_large = ForkRefused(413, f"a fork's body is at most {BODY_LIMIT} bytes")
    if declared.isdigit() and int(declared) > BODY_LIMIT:
        raise too_large
    body = b""
    async with aclosing(request.stream()) as chunks:
        async for chunk in chunks:
            body += chunk
            if len(body) > BODY_LIMIT:
                raise too_large
    if not body.strip():
        return ForkRequest(None, None)
    usage = 'send {} or {"threadId": "...", "agent": "..."}'
    try:
        fields: object = json.loads(body)
    except ValueError:
        raise ForkRefused(422, f"the body is not JSON: {usage}") from None
    if not isinstance(fields, dict):
        raise ForkRefused(422, f"the body is not a JSON object: {usage}")
    given = cast(dict[str, Any], fields)
    wanted, agent = given.get("threadId"), given.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise ForkRefused(422, f"agent is the path of a served agent: {usage}")
    if wanted is None:
        return ForkRequest(None, agent)
    try:
        return ForkRequest(check_thread_id(wanted if isinstance(wanted, str) else ""), agent)
    except ValueError as exc:
        raise ForkRefused(422, str(exc)) from None


async def resumption(
    registry: AgentRegistry,
    store: ThreadStore,
    checkpoint: Checkpoint,
    source: str,
    agent_path: str | None,
) -> tuple[str, Resumed]:
    """The served agent (its path) that runs the step `checkpoint` of thread `source` on, and
    where its run on the new thread starts.

    Raises:
        ForkRefused: when no served agent can run it on.
    """
    turn: Any = checkpoint.data.get("turn")
    fields = cast(dict[str, Any], turn) if isinstance(turn, dict) else {}
    saved_by = "/".join(str(p) for p in _list(fields.get("path")))
    if not saved_by:
        raise ForkRefused(
            422,
            f"checkpoint {checkpoint.id!r} holds no workflow agent's turn (a workflow run "
            "inside an agent that is not a workflow saved it): fork from a turn checkpoint",
        )
    path = agent_path if agent_path is not None else saved_by
    if path not in registry:
        raise ForkRefused(
            422,
            f"the agent at {saved_by!r} saved checkpoint {checkpoint.id!r}, and no agent is "
            f"served at {path!r}: say which served agent runs it on with "
            '{"agent": "<its path>"}',
        )
    agent = registry.get(path)
    if (
        not isinstance(agent, WorkflowAgent)
        or agent.workflow.id != checkpoint.workflow_id
        or agent.workflow.fingerprint != checkpoint.data.get("graph")
        or agent.id != saved_by
    ):
        raise ForkRefused(
            422,
            f"checkpoint {checkpoint.id!r} was saved by the agent at {saved_by!r} running "
            f"workflow {checkpoint.workflow_id!r}; the agent served at {path!r} does not run "
            "that graph: fork with the agent that saved it",
        )
    # The source thread as the checkpoint's turn found it: its newest save before the turn.
    before = await _turn_before(store, source, checkpoint.id)
    return path, Resumed(agent, checkpoint.id, before)


async def _turn_before(store: ThreadStore, thread_id: str, checkpoint_id: str) -> Any:
    """The data of thread `thread_id`'s newest saved turn before `checkpoint_id`, or None."""
    records, earlier = turn_keys(thread_id)
    turns = sorted([*await store.list(records), *await store.list(earlier)], reverse=True)
    for turn_id in turns:
        if turn_id < checkpoint_id:
            saved = await store.load(turn_id)
            if is_turn(saved):
                return saved.data
    return None


def _list(value: Any) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []
