"""Time travel: a workflow agent's turn run on from any checkpoint it saved, in any session.

`Workflow.resume` continues a run from a checkpoint as the engine sees it (events, outputs).
`run_from` does it as the agent sees it: an `AgentRun` streaming the agent's updates, whose
response is the turn's, and which writes the turn into the session's history exactly as the
uninterrupted turn would have. The session (a new one, for a fork) gets the checkpoint's
state, then the superstep after it runs: what the turn's agents produced before the
checkpoint stays the turn's, nodes that completed do not run again, and every id the run
makes (request ids, node calls) is the one the original run made at that point, since each
names its superstep. The checkpoint, and the session it came from, are only read. Tool calls
run again: the turn is a new run (`raf.tools.journal` records its calls under a new run id),
so no result the original run recorded is reused.

A checkpoint saved inside a nested workflow's superstep holds the root's state as of that
superstep's start and the nested run's state: the root's superstep runs again and the nested
workflow goes on from its own checkpointed superstep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from raf.agent import AgentMetadata, BaseAgent, IAgent
from raf.engine.checkpointing import DECODING_ERRORS, damaged, read_checkpoint
from raf.engine.mapping import AgentSink
from raf.engine.protocol import (
    RootRun,
    TurnRecord,
    check_kept_states,
    finish_resumed_turn,
    load_waiting,
    turn_response,
)
from raf.engine.runner import Runner
from raf.errors import CheckpointError
from raf.messages import ChatMessage
from raf.run import AgentRun, RunContext
from raf.session import Session
from raf.updates import AgentResponse, Usage

if TYPE_CHECKING:
    from raf.agent import RunOptions
    from raf.engine.facade import WorkflowAgent
    from raf.stores.base import Checkpoint, CheckpointStore

__all__ = ["run_from"]


def run_from(
    agent: WorkflowAgent,
    checkpoint_id: str,
    session: Session,
    *,
    store: CheckpointStore | None = None,
    options: RunOptions | None = None,
) -> AgentRun:
    """Run `agent`'s turn on from its checkpoint `checkpoint_id`, in `session`.

    The session's state is replaced by the checkpoint's (and put back as it was when the
    run fails or is cancelled); the turn's new checkpoints go to the session's store under
    the session's id. Streamed and awaited like `agent.run()`.

    Args:
        agent: the workflow agent whose turn saved the checkpoint (same workflow and graph).
        checkpoint_id: any checkpoint of that turn: after a superstep, or inside a nested
            workflow's.
        session: where the turn goes on (a new session forks the run; the one that saved
            the checkpoint rewinds it).
        store: where the checkpoint is, when not in `session.store`.
        options: as for `agent.run()`.

    Raises:
        ValueError: when neither `store` nor `session.store` is given.

    The run fails with `CheckpointError` when the checkpoint was not saved by a turn of
    `agent` (another workflow, a changed graph, or a run of the workflow itself rather than
    of its agent), and with `KeyError` when the store has no such checkpoint.

    Example:
        >>> import anyio
        >>> from raf import FunctionAgent, Session
        >>> from raf.engine import WorkflowBuilder
        >>> from raf.stores import MemoryCheckpointStore
        >>> up = FunctionAgent("up", lambda m: m[-1].text.upper())
        >>> bang = FunctionAgent("bang", lambda m: m[-1].text + "!")
        >>> agent = WorkflowBuilder("w").add_edge(up, bang).set_start(up).build().as_agent()
        >>> async def main() -> tuple[str, bool]:
        ...     store = MemoryCheckpointStore()
        ...     first = Session("first", store=store)
        ...     await agent.run("hi", first)
        ...     after_up = (await store.list("first"))[0]  # taken after the superstep of `up`
        ...     fork = Session("fork", store=store)
        ...     response = await run_from(agent, after_up, fork)
        ...     return response.text, fork.history(agent) == first.history(agent)
        >>> anyio.run(main)
        ('HI!', True)
    """
    source = store if store is not None else session.store
    if source is None:
        raise ValueError(
            f"no store holds checkpoint {checkpoint_id!r}: give the session a store, or pass store="
        )
    return _FromCheckpoint(agent, checkpoint_id, source).run([], session, options)


class _FromCheckpoint(BaseAgent[Any]):
    """`agent`, whose turn goes on from a checkpoint instead of starting on new messages (so
    the run has everything `BaseAgent.run` gives: budget, timeout, tracing, one writer)."""

    def __init__(self, agent: WorkflowAgent, checkpoint_id: str, store: CheckpointStore) -> None:
        super().__init__(agent.id, name=agent.metadata.name, description=agent.description)
        self._agent = agent
        self._checkpoint_id = checkpoint_id
        self._store = store

    @property
    def metadata(self) -> AgentMetadata:
        return self._agent.metadata

    def subagents(self) -> Sequence[IAgent]:
        return self._agent.subagents()

    async def invoke_turn(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        checkpoint = await self._store.load(self._checkpoint_id)
        return await _turn_from(self._agent, checkpoint, ctx)

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        return await self.invoke_turn(messages, ctx)


async def _turn_from(
    agent: WorkflowAgent, checkpoint: Checkpoint, ctx: RunContext
) -> AgentResponse:
    workflow = agent.workflow
    workflow.declare_models()
    state, scope, snapshot = read_checkpoint(
        checkpoint,
        workflow_id=workflow.id,
        fingerprint=workflow.fingerprint,
        nodes=workflow.executors,
    )
    data = checkpoint.data.get("turn")
    if data is None:
        raise CheckpointError(
            f"checkpoint {checkpoint.id!r} was saved by a run of workflow {workflow.id!r} "
            f"itself, not by a turn of agent {agent.id!r}: continue it with Workflow.resume",
            checkpoint_id=checkpoint.id,
            path=ctx.path,
        )
    try:
        record, produced = TurnRecord.from_json(data)
        check_kept_states(snapshot)
    except DECODING_ERRORS as exc:
        raise damaged(checkpoint.id, workflow.id, exc) from exc
    if record.path != ctx.path or scope != ctx.path:
        raise CheckpointError(
            f"checkpoint {checkpoint.id!r} was saved by the agent at "
            f"{'/'.join(record.path)!r}, not at {'/'.join(ctx.path)!r}: run it on from the "
            "agent that saved it, run as the root",
            checkpoint_id=checkpoint.id,
            path=ctx.path,
        )
    session = ctx.session
    before = session.snapshot()
    session.restore(snapshot)
    ctx.turn.answers.update(state.answers)
    ctx.turn.errors.update(state.errors)
    sink = AgentSink(ctx)
    root = RootRun(session, record)
    runner = Runner(
        workflow,
        state,
        sink,
        session,
        scope=scope,
        agent_context=ctx,
        progress=root if root.checkpoints else None,
        reports=sink,
    )
    # Run again, not resumed: the fork's tool calls are its own (a new run id, so none of the
    # original run's recorded results stands in for a call), and recorded as they run.
    state.run = ""
    root.bind(runner)
    runner.produced.extend(produced)
    ctx.turn.engine = root
    try:
        status = await runner.execute()
    except BaseException:
        # A failed or cancelled turn never happened: the session is as the run found it (what
        # the checkpoint held, nested runs' states included, is not left for a later turn).
        session.restore(before)
        raise
    finally:
        ctx.turn.engine = None
    if status == "failed":
        session.restore(before)
        raise sink.failure()
    finish_resumed_turn(workflow, session, (record, produced), state, status, [], runner.produced)
    usage = Usage(input_tokens=runner.input_tokens, output_tokens=runner.output_tokens)
    if status == "waiting":
        waiting = load_waiting(session, ctx.path, workflow)
        assert waiting is not None
        return AgentResponse(
            messages=list(runner.produced),
            usage=usage,
            status="waiting",
            pending=waiting.pending(),
        )
    return turn_response(state, usage)
