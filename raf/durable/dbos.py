"""The durable seam on DBOS: each model and tool call of a run is a DBOS step.

A durable run is one DBOS workflow (`raf.durable.agent.DurableAgent` starts it). Its steps
are named by their stable id, the agent's place and the call's index there
(`raf.model:team/writer#0`, `raf.tool:team/writer#1:send_mail`), and started in a
deterministic order, so DBOS replays a recovered run step by step and checks each name: a
run that would take another path than the one recorded fails loudly rather than take a
recorded result for another call. Items streamed outside steps go to the workflow's DBOS
stream too (`raf.durable.envelopes`); tokens only to a reader in the worker's process.

This module is the one place of raf's library that runs on asyncio APIs: DBOS is asyncio.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from dbos import DBOS

from raf.durable.envelopes import (
    STREAM,
    FailedEnvelope,
    ModelStep,
    ToolStep,
    TurnEnvelope,
    UpdateEnvelope,
    is_token,
)
from raf.durable.seam import ModelCall, ToolCall
from raf.errors import AgentError
from raf.messages import ChatMessage, ToolCallContent, message_list_adapter
from raf.providers.base import Completion
from raf.run import RunContext
from raf.tools.in_doubt import (
    answer_text,
    decision_of,
    in_doubt_id,
    in_doubt_request,
    refused,
)
from raf.tools.tool import ToolResult
from raf.updates import AgentPath, AgentResponse, AgentUpdate, Usage

__all__ = ["ANSWERS", "DbosSteps", "Live"]

ANSWERS = "raf.answers"
"""The DBOS topic on which a waiting run receives the next turn's messages."""

_WAIT_SECONDS = 86_400.0
"""How long one `recv` waits; a run waits for as many of them as it takes."""

Live = Callable[[AgentUpdate | TurnEnvelope | FailedEnvelope], Awaitable[None]]
"""Hands an item to a reader in this process (a no-op when there is none)."""


class DbosSteps:
    """`Durability` on DBOS, for one execution of one durable run's workflow.

    Args:
        recorded: names of the steps the run recorded before this execution (a recovered
            run's), to tell a tool call in doubt.
        live: where items go in this process, tokens included.
    """

    __slots__ = ("_counts", "_live", "_recorded")

    def __init__(self, recorded: set[str], live: Live) -> None:
        self._recorded = recorded
        self._live = live
        self._counts: dict[AgentPath, int] = {}

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
            await DBOS.run_step_async({"name": started}, _started)  # replayed when recorded
            if started in self._recorded and name not in self._recorded:
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
        await self.publish(request)
        pending = AgentResponse[Any](messages=[], status="waiting", pending=[request])
        await self.end_turn(pending, ctx.session.to_json())
        while True:
            answer = answer_text(await self.answer(), request_id)
            decision = decision_of(answer)
            if decision is not None:
                break
            again = request.model_copy(
                update={"payload": {**request.payload, "unclear_answer": answer}}
            )
            await self.publish(again)
            await self.end_turn(pending, ctx.session.to_json())
        if decision.choice == "fail":
            raise refused(call, ctx.path)
        if decision.choice == "skip":
            skipped = ToolStep(text=decision.result).model_dump_json()

            async def recorded() -> str:
                return skipped

            step = recorded
        record = ToolStep.model_validate_json(await DBOS.run_step_async({"name": name}, step))
        return ToolResult(record.text, record.is_error)

    async def publish(self, update: AgentUpdate) -> None:
        """Stream `update`: to a reader here, and (unless it is a token) to the run's stream."""
        await self._live(update)
        if not is_token(update):
            envelope = UpdateEnvelope(update=update)
            await DBOS.write_stream_async(STREAM, envelope.model_dump_json())

    async def end_turn(self, response: AgentResponse[Any], session: str) -> TurnEnvelope:
        """Record the end of a turn (completed, or waiting for an answer)."""
        envelope = TurnEnvelope(response=response, session=session)
        await self._live(envelope)
        await DBOS.write_stream_async(STREAM, envelope.model_dump_json())
        return envelope

    async def fail(self, error: AgentError) -> None:
        """Record that the run failed with `error`."""
        envelope = FailedEnvelope(
            error=type(error).__name__, message=error.message, path=error.path
        )
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
