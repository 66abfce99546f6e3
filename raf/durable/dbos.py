"""The durable seam on DBOS: each model and tool call of a run is a DBOS step.

A durable run is one DBOS workflow (`raf.durable.agent.DurableAgent` starts it). Its steps
are named by their stable id, the agent's place and the call's index there
(`raf.model:team/writer#0`, `raf.tool:team/writer#1:send_mail`), and started in a
deterministic order, so DBOS replays a recovered run step by step and checks each name: a
run that would take another path than the one recorded fails loudly rather than take a
recorded result for another call. Items streamed outside steps go to the workflow's DBOS
stream too (`raf.durable.envelopes`); tokens only to a reader in the worker's process.

Each node's work in a workflow's superstep is a *node step*: a DBOS child workflow with id
`{parent id}/{workflow place}/{node}@{superstep}#{k}`, whose own model and tool calls are
its steps (`raf.durable.nodes`). A superstep with one node starts its child in this worker;
a superstep of several enqueues them on the run's DBOS queue, so they spread over workers.
The children report to their parent on topic `raf.nodes` (done, or a tool call in doubt to
put to a human); the parent takes their results in node order and puts what they streamed
on its stream.

This module is the one place of raf's library that runs on asyncio APIs: DBOS is asyncio.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal, Protocol

from dbos import DBOS
from pydantic import BaseModel, ConfigDict

from raf.durable.envelopes import (
    STREAM,
    FailedEnvelope,
    ModelStep,
    ToolStep,
    TurnEnvelope,
    UpdateEnvelope,
    is_token,
)
from raf.durable.nodes import NodeResult, NodeSpec, apply_result, error_of, spec_of
from raf.durable.seam import ModelCall, ToolCall
from raf.engine.context import NodeWork
from raf.errors import AgentError
from raf.messages import ChatMessage, ToolCallContent, message_list_adapter
from raf.providers.base import Completion
from raf.run import RunContext
from raf.session import Session
from raf.tools.in_doubt import (
    answer_text,
    decision_of,
    in_doubt_id,
    in_doubt_request,
    refused,
)
from raf.tools.tool import ToolResult
from raf.updates import AgentPath, AgentResponse, AgentUpdate, RequestInfoUpdate, Usage

if TYPE_CHECKING:
    from raf.engine.runner import Job, Runner

__all__ = ["ANSWERS", "NODES", "DbosSteps", "Live", "NodeMessage", "NodeStarter"]

ANSWERS = "raf.answers"
"""The DBOS topic on which a waiting run receives the next turn's messages."""

NODES = "raf.nodes"
"""The DBOS topic on which a workflow receives its node steps' reports (`NodeMessage`)."""

_WAIT_SECONDS = 86_400.0
"""How long one `recv` waits; a run waits for as many of them as it takes."""

Live = Callable[[AgentUpdate | TurnEnvelope | FailedEnvelope], Awaitable[None]]
"""Hands an item to a reader in this process (a no-op when there is none)."""


class NodeMessage(BaseModel):
    """What a node step tells the workflow that started it: it is done (with its result),
    or a tool call in it is in doubt (with the request to put to a human; the answer goes
    to the workflow `id`, which may be a node step below it)."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["done", "asking"]
    """Which."""
    id: str
    """The node step's workflow id (for `asking`, the one waiting for the answer)."""
    result: NodeResult | None = None
    """The result, when done."""
    request: RequestInfoUpdate | None = None
    """The request, when asking."""


class NodeStarter(Protocol):
    """Starts node steps: in this worker, or on the run's queue for any worker."""

    def ships(self, runner: Runner) -> bool:
        """Whether `runner`'s nodes can run as node steps (its workflow is found by path in
        every worker's agent tree)."""
        ...

    async def start(self, workflow_id: str, spec: NodeSpec, *, queued: bool) -> None:
        """Start node step `spec` as workflow `workflow_id`."""
        ...


class DbosSteps:
    """`Durability` on DBOS, for one execution of one workflow of a durable run: the run's
    own, or one of its node steps (`parent` set).

    Args:
        recorded: reads the names of the steps the workflow recorded (a recovered run's), to
            tell a tool call in doubt; read once, before the first tool call that is recorded
            before it runs (so only the steps of completed calls are recorded by then).
        live: where items go in this process, tokens included.
        root: the durable run's id.
        nodes: starts the node steps of the workflows this one runs.
        parent: for a node step, the workflow that started it; its items are then collected
            (`items`) for the parent rather than written to a stream.
    """

    __slots__ = (
        "_counts",
        "_known",
        "_live",
        "_nodes",
        "_parent",
        "_recorded",
        "_root",
        "items",
    )

    def __init__(
        self,
        recorded: Callable[[], Awaitable[set[str]]],
        live: Live,
        *,
        root: str = "",
        nodes: NodeStarter | None = None,
        parent: str | None = None,
    ) -> None:
        self._recorded = recorded
        self._known: set[str] | None = None
        self._live = live
        self._root = root
        self._nodes = nodes
        self._parent = parent
        self._counts: dict[AgentPath, int] = {}
        self.items: list[AgentUpdate] = []
        """What a node step streamed (tokens left out), for its parent."""

    def _name(self, kind: str, place: AgentPath) -> str:
        index = self._counts.get(place, 0)
        self._counts[place] = index + 1
        return f"raf.{kind}:{'/'.join(place)}#{index}"

    async def model_call(self, ctx: RunContext, call: ModelCall) -> tuple[Completion, Usage]:
        """Run the model call as a step named by its place and index; a replayed one gives
        its recorded completion without streaming again."""
        name = self._name("model", ctx.place)
        live = ctx.with_emit(self._live)

        async def step() -> str:
            completion, usage = await call(live)
            return ModelStep.of(completion, usage).model_dump_json()

        record = ModelStep.model_validate_json(await DBOS.run_step_async({"name": name}, step))
        return record.completion(), record.usage

    async def tool_call(
        self, ctx: RunContext, call: ToolCallContent, run: ToolCall, *, idempotent: bool
    ) -> ToolResult:
        """Run the tool call as a step, recorded before (unless idempotent) and after."""
        name = f"{self._name('tool', ctx.place)}:{call.name}"
        started = f"{name}.started"

        async def step() -> str:
            result = await run(call, ctx)
            return ToolStep(text=result.text, is_error=result.is_error).model_dump_json()

        if not idempotent:
            known = self._known
            if known is None:
                known = self._known = await self._recorded()
            await DBOS.run_step_async({"name": started}, _started)  # replayed when recorded
            if started in known and name not in known:
                return await self._in_doubt(ctx, call, name, step)
        record = ToolStep.model_validate_json(await DBOS.run_step_async({"name": name}, step))
        return ToolResult(record.text, record.is_error)

    async def _in_doubt(
        self,
        ctx: RunContext,
        call: ToolCallContent,
        name: str,
        step: Callable[[], Coroutine[Any, Any, str]],
    ) -> ToolResult:
        """Ask a human what to do with a call that started and has no recorded end."""
        request_id = in_doubt_id(ctx.place, name.partition(":")[2])
        request = in_doubt_request(request_id, call, ctx.path)
        while True:
            answer = answer_text(await self._ask(request, ctx.session), request_id)
            decision = decision_of(answer)
            if decision is not None:
                break
            request = request.model_copy(
                update={"payload": {**request.payload, "unclear_answer": answer}}
            )
        if decision.choice == "fail":
            raise refused(call, ctx.path)
        if decision.choice == "skip":
            skipped = ToolStep(text=decision.result).model_dump_json()

            async def recorded() -> str:
                return skipped

            step = recorded
        record = ToolStep.model_validate_json(await DBOS.run_step_async({"name": name}, step))
        return ToolResult(record.text, record.is_error)

    async def _ask(self, request: RequestInfoUpdate, session: Session) -> list[ChatMessage]:
        """Put `request` to a human and wait for the answer: through the run's stream, or,
        in a node step, through the workflow that started it, up to the run's."""
        if self._parent is None:
            await self._put(request, session)
        else:
            me = DBOS.workflow_id
            assert me is not None
            asking = NodeMessage(kind="asking", id=me, request=request)
            await DBOS.send_async(self._parent, asking.model_dump_json(), topic=NODES)
        return await self.answer()

    async def _put(self, request: RequestInfoUpdate, session: Session) -> None:
        """Stream `request` and end the turn waiting for its answer."""
        await self.publish(request)
        pending = AgentResponse[Any](messages=[], status="waiting", pending=[request])
        await self.end_turn(pending, session.to_json())

    async def publish(self, update: AgentUpdate) -> None:
        """Stream `update`: to a reader here, and (unless it is a token) to the run's stream
        (in a node step: to the items its parent streams)."""
        await self._live(update)
        if not is_token(update):
            if self._parent is not None:
                self.items.append(update)
            else:
                envelope = UpdateEnvelope(update=update)
                await DBOS.write_stream_async(STREAM, envelope.model_dump_json())

    async def node_steps(self, runner: Runner, jobs: list[Job]) -> list[NodeWork]:
        """Run each node of the superstep as a node step: a child workflow started here
        (one node) or enqueued for any worker (several); results taken in node order."""
        nodes = self._nodes
        if nodes is None or not nodes.ships(runner):
            return await self._in_place(runner, jobs)
        me = DBOS.workflow_id
        assert me is not None
        context = runner.agent_context
        assert context is not None
        place = "/".join(context.place)
        ids: list[str] = []
        for job in jobs:
            base = f"{me}/{place}/{job[0]}@{job[2]}"
            index = self._counts.get((base,), 0)
            self._counts[(base,)] = index + 1
            child = f"{base}#{index}"
            ids.append(child)
            spec = spec_of(runner, job, self._root, me)
            await nodes.start(child, spec, queued=len(jobs) > 1)
        results = await self._collect(ids, runner.session)
        works: list[NodeWork] = []
        for job, child in zip(jobs, ids, strict=True):
            result = results.get(child)
            if result is None:  # cancelled: a sibling failed
                works.append(NodeWork(runner, *job))
                continue
            await self._absorb(result)
            works.append(apply_result(runner, job, result))
        return works

    async def _in_place(self, runner: Runner, jobs: list[Job]) -> list[NodeWork]:
        """The nodes of a workflow no worker can find by path (a workflow agent that node
        code invokes without declaring it): run here, one after another, their calls
        recorded as this workflow's steps."""
        works: list[NodeWork] = []
        for job in jobs:
            works.append(await runner.run_node(*job))
            if runner.failure is not None:
                break
        return works

    async def _collect(self, ids: list[str], session: Session) -> dict[str, NodeResult]:
        """Wait for the node steps `ids` to report done; pass on what they ask meanwhile.
        When one reports a failure, the others are cancelled and not waited for."""
        wanted = set(ids)
        results: dict[str, NodeResult] = {}
        while len(results) < len(wanted):
            text: Any = await DBOS.recv_async(NODES, timeout_seconds=_WAIT_SECONDS)
            if not isinstance(text, str):
                continue
            message = NodeMessage.model_validate_json(text)
            if message.kind == "done":
                if message.id in wanted and message.result is not None:
                    results[message.id] = message.result
                    if message.result.failed is not None and len(results) < len(wanted):
                        # A failed branch ends the superstep: its siblings, on any worker,
                        # are cancelled (with their own node steps), as a local run would.
                        others = [i for i in ids if i not in results]
                        await DBOS.cancel_workflows_async(others, cancel_children=True)
                        break
            elif self._parent is not None:
                await DBOS.send_async(self._parent, text, topic=NODES)  # up to the run
            elif message.request is not None:
                await self._put(message.request, session)
                answer = message_list_adapter.dump_json(await self.answer()).decode()
                await DBOS.send_async(message.id, answer, topic=ANSWERS)
        return results

    async def _absorb(self, result: NodeResult) -> None:
        """Stream what a node step streamed: to a reader here unless the worker that ran it
        had the reader, and on to this workflow's stream (or its parent)."""
        for item in result.items:
            if not result.delivered:
                await self._live(item)
            if self._parent is not None:
                self.items.append(item)
            else:
                envelope = UpdateEnvelope(update=item)
                await DBOS.write_stream_async(STREAM, envelope.model_dump_json())

    async def done(self, result: NodeResult) -> None:
        """Report a node step's `result` to the workflow that started it."""
        me = DBOS.workflow_id
        assert me is not None and self._parent is not None
        message = NodeMessage(kind="done", id=me, result=result)
        await DBOS.send_async(self._parent, message.model_dump_json(), topic=NODES)

    async def end_turn(self, response: AgentResponse[Any], session: str) -> TurnEnvelope:
        """Record the end of a turn (completed, or waiting for an answer)."""
        envelope = TurnEnvelope(response=response, session=session)
        await self._live(envelope)
        await DBOS.write_stream_async(STREAM, envelope.model_dump_json())
        return envelope

    async def fail(self, error: AgentError) -> None:
        """Record that the run failed with `error`."""
        envelope = error_of(error, error.path)
        await self._live(envelope)
        await DBOS.write_stream_async(STREAM, envelope.model_dump_json())

    async def answer(self) -> list[ChatMessage]:
        """Wait, durably and for as long as it takes, for the next turn's messages."""
        while True:
            text: Any = await DBOS.recv_async(ANSWERS, timeout_seconds=_WAIT_SECONDS)
            if isinstance(text, str):
                return message_list_adapter.validate_json(text)


async def _started() -> str:
    """The record a tool call leaves before it runs."""
    return ""
