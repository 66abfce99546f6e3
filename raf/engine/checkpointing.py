"""Checkpoints: a run's state as versioned JSON, saved after each superstep and read back.

`Checkpoint.data` holds `{"version": 2, "workflow", "graph", "scope", "superstep", "next",
"pending", "suspended", "fan_in", "requests", "answers", "outputs", "session"}` (and
`"errors"`, the ids of the answers that are error results, when there are any): every value
tagged by `raf.engine.codec`, including each value of the session state (node states, agent
histories, nested workflows' kept state) under `"session"`, so `ctx.state` keeps its types
across a resume. Version 1 (session values as untagged JSON) is still read. A waiting
`WorkflowAgent` keeps the same data, minus outputs and session, in the session itself.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from raf.engine.codec import decode, encode
from raf.engine.state import PendingRequest, RunState, Suspension
from raf.errors import CheckpointError
from raf.session import Session

if TYPE_CHECKING:
    from raf.stores.base import Checkpoint, CheckpointStore

__all__ = [
    "DATA_VERSION",
    "DECODING_ERRORS",
    "READ_VERSIONS",
    "damaged",
    "decode_state",
    "encode_state",
    "read_checkpoint",
    "restore_snapshot",
    "save_checkpoint",
    "session_snapshot",
]

DATA_VERSION = 2
"""Version of the engine's `Checkpoint.data` layout (2: session values tagged by the codec)."""
READ_VERSIONS = (1, 2)
"""Versions `read_checkpoint` reads (1 kept session values as untagged JSON)."""


def encode_state(state: RunState, *, outputs: bool = True) -> dict[str, Any]:
    """`state` as JSON (outputs left out unless `outputs`).

    Raises:
        CheckpointValueError: naming the node whose message, request, answer or output is not
            serializable.
    """
    node_of = {request.request_id: request.node_id for request in state.requests}
    return {
        "next": state.superstep,
        "pending": [
            [node, [encode(m, f"a message pending for node {node!r}", node) for m in messages]]
            for node, messages in state.pending.items()
        ],
        "suspended": [
            [
                node,
                {
                    "superstep": s.superstep,
                    "ordinal": s.ordinal,
                    "messages": [
                        encode(m, f"the input of node {node!r}", node) for m in s.messages
                    ],
                    "calls": s.calls,
                    "replies": [
                        [name, encode(r, f"a response of an agent node {node!r} ran", node)]
                        for name, r in s.replies.items()
                    ],
                },
            ]
            for node, s in state.suspended.items()
        ],
        "fan_in": [
            [
                index,
                [
                    [
                        src,
                        [
                            encode(m, f"a message node {src!r} sent to a fan-in", src)
                            for m in messages
                        ],
                    ]
                    for src, messages in buffers.items()
                ],
            ]
            for index, buffers in state.fan_in.items()
        ],
        "requests": [
            {
                "request_id": r.request_id,
                "node_id": r.node_id,
                "payload": encode(r.payload, f"the payload of request {r.request_id!r}", r.node_id),
                "forwarded": r.forwarded,
                "path": list(r.path),
            }
            for r in state.requests
        ],
        "answers": [
            [rid, encode(value, f"the answer to request {rid!r}", node_of.get(rid))]
            for rid, value in state.answers.items()
        ],
        "outputs": [
            [node, encode(value, f"an output of node {node!r}", node)]
            for node, value in state.outputs
        ]
        if outputs
        else [],
        "entered": state.entered,
        "run": state.run,
        **({"errors": sorted(state.errors)} if state.errors else {}),
    }


def decode_state(data: dict[str, Any]) -> RunState:
    """The `RunState` that `encode_state` turned into `data`."""
    return RunState(
        superstep=int(data["next"]),
        pending={node: [decode(m) for m in messages] for node, messages in data["pending"]},
        suspended={
            node: Suspension(
                s["superstep"],
                s["ordinal"],
                [decode(m) for m in s["messages"]],
                dict(s.get("calls", {})),
                {name: decode(r) for name, r in s.get("replies", ())},
            )
            for node, s in data["suspended"]
        },
        fan_in={
            int(index): {src: [decode(m) for m in messages] for src, messages in buffers}
            for index, buffers in data["fan_in"]
        },
        requests=[
            PendingRequest(
                r["request_id"],
                r["node_id"],
                decode(r["payload"]),
                bool(r["forwarded"]),
                tuple(str(p) for p in r.get("path", ())),
            )
            for r in data["requests"]
        ],
        answers={rid: decode(value) for rid, value in data["answers"]},
        outputs=[(node, decode(value)) for node, value in data["outputs"]],
        entered=dict(data.get("entered", {})),
        run=str(data.get("run", "")),
        errors={str(rid) for rid in data.get("errors", ())},
    )


def session_snapshot(session: Session) -> dict[str, Any]:
    """The session state as JSON, each value tagged by `raf.engine.codec` (so sets, tuples,
    messages and pydantic models come back as themselves).

    Raises:
        CheckpointValueError: naming the session key (and so the node) that is not serializable.
    """
    return {
        key: encode(
            session.get(key),
            f"session key {key!r} (a node's state or an agent's history)",
        )
        for key in session.keys("")
    }


def restore_snapshot(data: dict[str, Any], version: int) -> dict[str, Any]:
    """The session values of a snapshot `session_snapshot` wrote (untagged JSON in version 1)."""
    if version == 1:
        return data
    return {key: decode(value) for key, value in data.items()}


async def save_checkpoint(
    store: CheckpointStore,
    session: Session,
    *,
    workflow_id: str,
    fingerprint: str,
    scope: tuple[str, ...],
    superstep: int,
    state: RunState,
    turn: dict[str, Any] | None = None,
) -> str:
    """Save the state after `superstep` to `store`; return the new checkpoint id.

    `turn` is the root agent's turn the run belongs to (see `raf.engine.protocol.TurnRecord`).
    """
    # Imported here: the stores package is only needed once a run checkpoints.
    from raf.stores.base import Checkpoint
    from raf.stores.ids import new_id

    data: dict[str, Any] = {
        "version": DATA_VERSION,
        "workflow": workflow_id,
        "graph": fingerprint,
        "scope": list(scope),
        "superstep": superstep,
        **encode_state(state),
        "session": session_snapshot(session),
    }
    if turn is not None:
        data["turn"] = turn
    checkpoint = Checkpoint(
        id=new_id(),
        session_id=session.id,
        workflow_id=workflow_id,
        superstep=superstep,
        created_at=datetime.now(UTC),
        data=data,
    )
    await store.save(checkpoint)
    return checkpoint.id


def read_checkpoint(
    checkpoint: Checkpoint, *, workflow_id: str, fingerprint: str, nodes: Collection[str]
) -> tuple[RunState, tuple[str, ...], dict[str, Any]]:
    """The run state, scope and session values of `checkpoint`.

    Raises:
        CheckpointError: naming the checkpoint, when it belongs to another workflow or graph,
            has an unknown data version, or cannot be decoded (truncated or edited).
    """
    data = checkpoint.data
    version = data.get("version")
    if version not in READ_VERSIONS:
        raise CheckpointError(
            f"checkpoint {checkpoint.id!r} holds engine data version {version!r}; this raf "
            f"reads versions {list(READ_VERSIONS)}; resume it with the raf release that wrote it",
            checkpoint_id=checkpoint.id,
        )
    if data.get("workflow") != workflow_id:
        raise CheckpointError(
            f"checkpoint {checkpoint.id!r} belongs to workflow {data.get('workflow')!r}, "
            f"not {workflow_id!r}; resume it with that workflow",
            checkpoint_id=checkpoint.id,
        )
    if data.get("graph") != fingerprint:
        raise CheckpointError(
            f"checkpoint {checkpoint.id!r} was taken from a different graph of workflow "
            f"{workflow_id!r} (nodes or edges changed); resume it with the graph that wrote it",
            checkpoint_id=checkpoint.id,
        )
    try:
        scope = tuple(str(part) for part in cast(list[Any], data["scope"]))
        session = restore_snapshot(cast(dict[str, Any], data["session"]), cast(int, version))
        state = decode_state(data)
        _check_nodes(state, nodes)
    except CheckpointError:
        raise
    except DECODING_ERRORS as exc:
        raise damaged(checkpoint.id, workflow_id, exc) from exc
    return state, scope, session


DECODING_ERRORS = (KeyError, IndexError, TypeError, ValueError, AttributeError)
"""What decoding edited checkpoint data may raise (each becomes a `CheckpointError`)."""


def damaged(checkpoint_id: str, workflow_id: str, exc: BaseException) -> CheckpointError:
    """The `CheckpointError` for checkpoint data that decoding failed on with `exc`."""
    return CheckpointError(
        f"checkpoint {checkpoint_id!r} of workflow {workflow_id!r} cannot be read: "
        f"{_what(exc)}; it was truncated or edited after raf wrote it (resume from "
        "another checkpoint: `await store.list(session_id)` lists them)",
        checkpoint_id=checkpoint_id,
    )


def _check_nodes(state: RunState, nodes: Collection[str]) -> None:
    """Refuse node ids the workflow does not have, and request ids that are not text (a
    checkpoint edited by hand)."""
    named = [
        *state.pending,
        *state.suspended,
        *(r.node_id for r in state.requests),
        *(node for node, _ in state.outputs),
        *(src for buffers in state.fan_in.values() for src in buffers),
    ]
    if not all(type(r.request_id) is str for r in state.requests):
        raise ValueError("a request id is not a string")
    unknown = sorted({str(node) for node in named if type(node) is not str or node not in nodes})
    if unknown:
        raise ValueError(f"it names nodes {unknown}, which the workflow does not have")


def _what(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"the field {exc.args[0]!r} is missing"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
