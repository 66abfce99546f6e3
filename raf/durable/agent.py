"""`DurableAgent`: any raf agent, run as a DBOS durable workflow, behind the same `IAgent`.

Example:
    >>> from dbos import DBOS  # doctest: +SKIP
    >>> DBOS(config={"name": "app", "system_database_url": "sqlite:///runs.sqlite"})  # doctest: +SKIP
    >>> durable = DurableAgent(agent)  # before DBOS.launch()  # doctest: +SKIP
    >>> DBOS.launch()  # inside the running event loop  # doctest: +SKIP
    >>> response = await durable.run("hello")  # doctest: +SKIP
"""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import sniffio
from anyio.streams.memory import MemoryObjectSendStream
from dbos import DBOS, Queue, SetWorkflowID, WorkflowHandleAsync

from raf._session_turns import kept_turn
from raf._single_writer import claim_session
from raf.agent import (
    AgentMetadata,
    AgentRun,
    BaseAgent,
    IAgent,
    RunOptions,
    Session,
    options_of_run,
    out_of_time,
    time_limit,
)
from raf.budget import BudgetTracker
from raf.durable.dbos import ANSWERS, NODES, DbosSteps, NodeMessage
from raf.durable.envelopes import (
    STREAM,
    FailedEnvelope,
    TurnEnvelope,
    UpdateEnvelope,
    envelope_adapter,
)
from raf.durable.manage import cancel_node_steps, cancel_run, resume_run
from raf.durable.nodes import (
    NodeResult,
    NodeSpec,
    error_from,
    error_of,
    run_node_step,
    workflow_at,
)
from raf.engine.runner import Runner
from raf.errors import AgentError, DurableRunError
from raf.messages import ChatMessage, MessagesInput, as_messages, message_list_adapter
from raf.run import Emit, RunContext, Turn
from raf.session import checked_session
from raf.updates import AgentResponse, AgentUpdate

__all__ = ["DurableAgent", "answer", "resume"]

_Item = AgentUpdate | TurnEnvelope | FailedEnvelope
_T = TypeVar("_T")


class DurableAgent:
    """An agent whose runs are DBOS durable workflows, recovered by any worker.

    Each run is a DBOS workflow; each model call and tool call in it a DBOS step named by its
    stable id (the agent's place and the call's index), so a worker that dies mid-run is
    recovered, by this process restarted or by another worker, without making a completed
    call again. The run streams as any agent's does, every token attributed by path; a human
    request waits inside the workflow (DBOS `recv`) for as long as it takes, and the next
    `run()` on the session, or `answer()` from any process, answers it.

    Create it after `DBOS(config=...)` and before `DBOS.launch()` (DBOS registers workflows
    before launch), the same way in every worker; launch inside the running event loop, so
    recovered runs run on it. asyncio only (DBOS is asyncio): a run on trio raises
    `DurableRunError`.

    Each node's work in a superstep of a workflow in the tree is a *node step*: a DBOS child
    workflow (id `{run id}/{workflow place}/{node}@{superstep}#{k}`) whose calls are its
    steps, so a recovered run skips a completed node as a whole. The nodes of a superstep of
    several go through the DBOS queue `raf.nodes:{agent id}`, so they run concurrently, on
    whichever workers have room; their results are taken in node order.

    Args:
        agent: the raf agent to run (a ReactAgent, a workflow's agent, a FunctionAgent...).
        concurrency: at most this many node steps of this agent's runs at once, over all
            workers (None: no limit).
        worker_concurrency: at most this many at once in one worker (None: no limit).
        poll_seconds: how often each worker looks for queued node steps.

    Raises:
        TypeError: when `agent` is not a raf agent (its calls could not be steps).
    """

    def __init__(
        self,
        agent: IAgent,
        *,
        concurrency: int | None = None,
        worker_concurrency: int | None = None,
        poll_seconds: float = 0.1,
    ) -> None:
        if not isinstance(agent, BaseAgent):
            raise TypeError(
                f"DurableAgent runs raf agents (ReactAgent, FunctionAgent, workflow.as_agent()), "
                f"not {type(agent).__name__}: the model and tool calls of another agent "
                "cannot be recorded as steps"
            )
        self._agent: BaseAgent[Any] = agent
        self._default_session = Session()
        self._readers: dict[str, MemoryObjectSendStream[_Item]] = {}
        self.workflow_name = f"raf.run:{agent.id}"
        """The DBOS workflow name of this agent's runs."""
        self.queue_name = f"raf.nodes:{agent.id}"
        """The DBOS queue the node steps of a superstep of several nodes go through."""
        self._limits = (concurrency, worker_concurrency, poll_seconds)
        self._queue: Queue | None = None

        async def raf_run(messages: str, session: str, options: str) -> str:
            return await self._execute(messages, session, options)

        async def raf_node(spec: str) -> str:
            return await self._node_step(spec)

        self._workflow = DBOS.workflow(name=self.workflow_name)(raf_run)
        self._node_workflow = DBOS.workflow(name=f"raf.node:{agent.id}")(raf_node)

    def __repr__(self) -> str:
        return f"DurableAgent({self._agent!r})"

    @property
    def id(self) -> str:
        """The wrapped agent's id."""
        return self._agent.id

    @property
    def metadata(self) -> AgentMetadata:
        """The wrapped agent's metadata."""
        return self._agent.metadata

    def get_subagent(self, agent_id: str) -> IAgent | None:
        """The wrapped agent's direct child `agent_id`, or None."""
        return self._agent.get_subagent(agent_id)

    async def reset(self) -> None:
        """Forget the default session, here and in the wrapped agent's tree."""
        self._default_session = Session()
        await self._agent.reset()

    def run(
        self,
        messages: MessagesInput,
        session: Session | None = None,
        options: RunOptions | None = None,
    ) -> AgentRun[Any]:
        """Start a durable run (or answer the session's waiting one); stream it as any run.

        Leaving the stream early cancels the workflow. The response's value is JSON data
        (a structured value comes back as the dict of its fields).
        """
        new = as_messages(messages)
        run_session = self._default_session if session is None else checked_session(session)
        run_options = options_of_run(options)
        wait = run_options.on_busy == "wait"

        async def body(emit: Emit) -> AgentResponse[Any]:
            drive = partial(self._drive, new, run_session, run_options, emit)
            return await kept_turn(run_session, self.id, drive)

        return AgentRun(body, partial(claim_session, run_session, wait=wait, path=(self.id,)))

    def _key(self) -> str:
        return f"{self.id}#durable_run"

    def next_run_id(self, session: Session) -> str:
        """The id the next durable run of `session` gets: `{agent id}:{session id}:{n}`.

        Ids are predictable, so a start retried after a crash of the caller finds the run it
        started (DBOS starts a workflow id once) and any process can name the run.
        """
        count = session.get(f"{self.id}#durable_runs", 0)
        return f"{self.id}:{session.id}:{count if isinstance(count, int) else 0}"

    async def _drive(
        self, messages: list[ChatMessage], session: Session, options: RunOptions, emit: Emit
    ) -> AgentResponse[Any]:
        require_asyncio(self.id)
        waiting = session.get(self._key())
        run_id = waiting if isinstance(waiting, str) else self.next_run_id(session)
        send, receive = anyio.create_memory_object_stream[_Item](math.inf)
        self._readers[run_id] = send
        ended = False
        try:
            if isinstance(waiting, str):
                await answer(run_id, messages)
            else:
                count = session.get(f"{self.id}#durable_runs", 0)
                session.set(f"{self.id}#durable_runs", (count if isinstance(count, int) else 0) + 1)
                with SetWorkflowID(run_id):
                    await DBOS.start_workflow_async(
                        self._workflow,
                        message_list_adapter.dump_json(messages).decode(),
                        session.to_json(),
                        options.model_dump_json(),
                    )
            async with receive:
                async for item in receive:
                    if isinstance(item, TurnEnvelope | FailedEnvelope):
                        ended = True
                        response = self._ended(item, session, run_id)
                        if response.status != "waiting":
                            # The workflow records its output: wait for it to be done.
                            handle: WorkflowHandleAsync[str] = await DBOS.retrieve_workflow_async(
                                run_id
                            )
                            await handle.get_result()
                        return response
                    await emit(item)
            raise DurableRunError(f"durable run {run_id!r} ended without a response", path=())
        finally:
            self._readers.pop(run_id, None)
            send.close()
            if not ended:
                with anyio.CancelScope(shield=True):
                    await _outside(partial(cancel_run, DBOS, run_id))
                session.pop(self._key())

    def _ended(
        self, item: TurnEnvelope | FailedEnvelope, session: Session, run_id: str
    ) -> AgentResponse[Any]:
        if isinstance(item, FailedEnvelope):
            session.pop(self._key())
            raise failure(item, run_id)
        session.restore(Session.from_json(item.session).snapshot())
        if item.response.status == "waiting":
            session.set(self._key(), run_id)
        return item.response

    async def _live(self, run_id: str, item: _Item) -> None:
        reader = self._readers.get(run_id)
        if reader is None:
            return
        try:
            reader.send_nowait(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._readers.pop(run_id, None)

    def ships(self, runner: Runner) -> bool:
        """Whether `runner`'s nodes can be node steps: every worker finds its workflow by
        path in the agent tree (not so for a workflow agent that node code invokes without
        declaring it)."""
        context = runner.agent_context
        return context is not None and workflow_at(self._agent, context.path) is runner.workflow

    async def start(self, workflow_id: str, spec: NodeSpec, *, queued: bool) -> None:
        """Start node step `spec` as workflow `workflow_id`: here, or on the queue."""
        text = spec.model_dump_json()
        if not queued:
            with SetWorkflowID(workflow_id):
                await DBOS.start_workflow_async(self._node_workflow, text)
            return
        queue = self._queue
        if queue is None:
            concurrency, per_worker, poll = self._limits
            queue = self._queue = await DBOS.register_queue_async(
                self.queue_name,
                global_concurrency=concurrency,
                worker_concurrency=per_worker,
                polling_interval_sec=poll,
                on_conflict="always_update",
            )
        with SetWorkflowID(workflow_id):
            await queue.enqueue_async(self._node_workflow, text)

    async def _node_step(self, text: str) -> str:
        """A node step's body: run the node here, report the result to the parent."""
        me = DBOS.workflow_id
        assert me is not None
        spec = NodeSpec.model_validate_json(text)
        root = spec.root
        steps = DbosSteps(
            partial(recorded_steps, me),
            partial(self._live, root),
            root=root,
            nodes=self,
            parent=spec.parent,
        )
        try:
            try:
                result = await run_node_step(self._agent, spec, Turn(durable=steps), steps.publish)
            except Exception as exc:
                if type(exc).__module__.startswith("dbos"):
                    raise  # DBOS's own (a replay that went another way...): the step fails
                result = NodeResult(failed=error_of(exc, tuple(spec.path)))
            result = result.model_copy(
                update={"items": steps.items, "delivered": root in self._readers}
            )
            await steps.done(result)
        except Exception as exc:  # a cancel (a BaseException) is not reported: nobody waits
            await _outside(partial(_report_failure, spec, me, exc))
            raise
        return result.model_dump_json()

    async def _execute(self, messages: str, session: str, options: str) -> str:
        """The workflow's body: the run's turns, waiting durably between them."""
        run_id = DBOS.workflow_id
        assert run_id is not None
        recorded = partial(recorded_steps, run_id)
        steps = DbosSteps(recorded, partial(self._live, run_id), root=run_id, nodes=self)
        run_session = Session.from_json(session)
        run_options = RunOptions.model_validate_json(options)
        turn_messages = message_list_adapter.validate_json(messages)
        agent = self._agent
        turn = 0
        while True:
            budget = run_options.budget
            ctx = RunContext(
                (agent.id,),
                run_session,
                run_options,
                steps.publish,
                BudgetTracker(budget) if budget is not None else None,
                Turn(durable=steps),
            )
            try:
                response = await self._bounded(turn_messages, ctx, turn)
            except AgentError as exc:
                await steps.fail(exc)
                raise
            except Exception as exc:
                await steps.fail(AgentError(f"{type(exc).__name__}: {exc}", path=(agent.id,)))
                raise
            envelope = await steps.end_turn(response, run_session.to_json())
            if response.status != "waiting":
                return envelope.model_dump_json()
            turn_messages = await steps.answer()
            turn += 1

    async def _bounded(
        self, messages: list[ChatMessage], ctx: RunContext, turn: int
    ) -> AgentResponse[Any]:
        """Turn `turn` of the run, within `RunOptions.timeout` and `Budget(seconds=...)` as a
        local run's turn: its deadline is a recorded step, so a recovered turn keeps it; when
        it passes, the run's unfinished node steps are cancelled and the turn fails as a local
        one does (`RunTimeout`, or `BudgetExceeded` of kind `seconds`)."""
        limit = time_limit(ctx.options)
        if limit is None:
            return await self._agent.invoke_turn(messages, ctx)

        async def deadline() -> float:
            return time.time() + limit

        at = await DBOS.run_step_async({"name": f"raf.deadline#{turn}"}, deadline)
        # move_on_after, not fail_after: a TimeoutError of the agent's own stays its own.
        with anyio.move_on_after(at - time.time()):
            return await self._agent.invoke_turn(messages, ctx)
        run_id = DBOS.workflow_id
        assert run_id is not None
        await _outside(partial(cancel_node_steps, DBOS, run_id))
        raise out_of_time(ctx.options, ctx.path)

    def attach(self, run_id: str, *, offset: int = 0, poll_seconds: float = 0.1) -> AgentRun[Any]:
        """Follow durable run `run_id` from any process, from item `offset` of its stream to
        the end of that turn: the items recorded outside steps (no tokens), then its response.

        Example:
            >>> async def follow(durable, run_id):  # doctest: +SKIP
            ...     response = await durable.attach(run_id)
        """

        async def body(emit: Emit) -> AgentResponse[Any]:
            require_asyncio(self.id)
            stream = DBOS.read_stream_async(
                run_id, STREAM, offset=offset, polling_interval_sec=poll_seconds
            )
            try:
                async for text in stream:
                    item = envelope_adapter.validate_json(str(text))
                    if isinstance(item, UpdateEnvelope):
                        await emit(item.update)
                    elif isinstance(item, FailedEnvelope):
                        raise failure(item, run_id)
                    else:
                        return item.response
            finally:
                with anyio.CancelScope(shield=True):
                    await stream.aclose()
            raise DurableRunError(f"durable run {run_id!r} ended without a response", path=())

        return AgentRun(body)


def _report_failure(spec: NodeSpec, step_id: str, error: Exception) -> None:
    """Tell the parent of node step `step_id` (of `spec`) that it ended with `error` before
    reporting: sent outside the step's DBOS record, which a replay that went another way
    would check again (and so the parent fails the run rather than wait for it)."""
    failed = DurableRunError(
        f"node step {step_id!r} (node {spec.node!r}, superstep {spec.superstep}) ended without "
        f"a result: {type(error).__name__}: {error}. Check that every worker runs the same "
        "agents and node code (a recovered step replays what it recorded)",
        path=tuple(spec.path),
    )
    message = NodeMessage(
        kind="done", id=step_id, result=NodeResult(failed=error_of(failed, failed.path))
    )
    DBOS.send(spec.parent, message.model_dump_json(), topic=NODES)


async def answer(run_id: str, messages: MessagesInput) -> None:
    """Answer durable run `run_id`, waiting for a human, from any process with DBOS launched:
    `messages` are its next turn (plain text answers the oldest open request).

    Example:
        >>> await answer("4f1c...", "approve")  # doctest: +SKIP
    """
    text = message_list_adapter.dump_json(as_messages(messages)).decode()
    await DBOS.send_async(run_id, text, topic=ANSWERS)


async def resume(run_id: str) -> None:
    """Have a live worker go on with durable run `run_id`, whose worker died: the run and
    each of its node steps that was running on that worker (DBOS `resume_workflow`, which
    queues them for any worker; node steps running on live workers go on there). Call it
    from any process with DBOS launched, outside a workflow.

    Example:
        >>> await resume("team:chat-1:0")  # doctest: +SKIP
    """
    await _outside(partial(resume_run, DBOS, run_id))


async def _outside(call: Callable[[], _T]) -> _T:
    """Make DBOS calls outside any workflow's DBOS context (an empty one, on a worker
    thread), so none of them is recorded as a step of the workflow this task runs (a read
    recorded as a step would give a recovered run the first execution's answer)."""
    return await anyio.to_thread.run_sync(contextvars.Context().run, call)


def failure(item: FailedEnvelope, run_id: str) -> AgentError:
    """The error a reader raises for a durable run that failed: a `raf.errors` exception as
    its own type (with a note naming the run), any other as a `DurableRunError` naming the
    run and the exception's class."""
    error = error_from(item)
    if error is None or type(error) is DurableRunError:
        return DurableRunError(
            f"durable run {run_id!r} failed with {item.error}: {item.message}", path=item.path
        )
    error.add_note(f"in durable run {run_id!r}")
    return error


async def recorded_steps(run_id: str) -> set[str]:
    """Names of the steps run `run_id` has recorded so far.

    Read outside the workflow's DBOS context: a read made inside would be a recorded step
    itself, giving a recovered run the first execution's answer.
    """
    steps = await _outside(partial(DBOS.list_workflow_steps, run_id, load_output=False))
    return {step["function_name"] for step in steps}


def require_asyncio(agent_id: str) -> None:
    """Refuse to run durably on another async library than asyncio.

    Raises:
        DurableRunError: naming the library and what to do.
    """
    library = sniffio.current_async_library()
    if library != "asyncio":
        raise DurableRunError(
            f"durable runs need asyncio, and this one runs on {library}: DBOS, which records "
            "the run's steps, is asyncio-only. Run the agent without DurableAgent on "
            f"{library}, or run this program on asyncio",
            path=(agent_id,),
        )
