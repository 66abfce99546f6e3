"""The tool calls of a checkpointed run, recorded in its store: a resume never repeats one
silently.

A run that checkpoints re-runs, on resume, the superstep a crash interrupted; the ReAct agents
in it ask their model again and reach the same tool calls. Each call is recorded in the
store's event log (key `"raf.tool-calls/{run id}"`) before it runs (`tool.started`, unless
the tool is idempotent) and after it ends (`tool.ended`, with its result), under a stable id:
the agent's place, the node call (or superstep) that runs it, the call's index in the agent's
run and the tool (`"team/writer[writer@2#0]#1:send_mail"`).
When the re-run reaches a recorded call with the same tool and arguments:

    ended                   its recorded result is used; the tool does not run again;
    started, no end         it is *in doubt*: an idempotent tool runs again; for any other
                            the agent waits on a request to a human (`raf.tools.in_doubt`):
                            `rerun`, `skip` with a result, or `fail`.

The re-run asks the model again: when it asks for the same tool at that index with other
arguments, a recorded end is not this call's (the call runs), but a call in doubt is still in
doubt (the human is asked about the recorded arguments); another tool there is a new call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import anyio

from raf.messages import ToolCallContent
from raf.stores._records import damaged_event
from raf.stores.ids import new_id
from raf.tools.in_doubt import InDoubt, decision_of, in_doubt_id, in_doubt_request, refused
from raf.tools.tool import ToolResult

if TYPE_CHECKING:
    from raf.run import RunContext
    from raf.steps import ToolCall
    from raf.stores.base import EventLog
    from raf.updates import RequestInfoUpdate

__all__ = ["STARTED", "ENDED", "ToolJournal"]

STARTED = "tool.started"
"""Kind of the event recorded before a call runs."""
ENDED = "tool.ended"
"""Kind of the event recorded after a call ended, with its result."""


@dataclass(frozen=True, slots=True)
class _Record:
    arguments: str
    result: ToolResult | None
    """None when the record says the call started."""


class ToolJournal:
    """Records the tool calls of one checkpointed run in `log`, and tells a resumed run's
    calls what became of them.

    Args:
        log: the run's store.
        run_id: the run's id (`RunState.run`), kept in its checkpoints.
        fresh: the run has just started: nothing is recorded yet, so nothing is read.
        superstep: the root's current superstep, which names a call that no node call names.
    """

    __slots__ = ("_key", "_lock", "_log", "_records", "_superstep")

    def __init__(
        self,
        log: EventLog,
        run_id: str,
        *,
        fresh: bool,
        superstep: Callable[[], int] = lambda: 0,
    ) -> None:
        self._log = log
        self._superstep = superstep
        self._key = f"raf.tool-calls/{run_id}"
        self._records: dict[str, list[_Record]] | None = {} if fresh else None
        self._lock = anyio.Lock()

    async def check(
        self,
        ctx: RunContext,
        calls: Sequence[tuple[int, ToolCallContent]],
        idempotent: frozenset[str],
    ) -> None:
        """Before a round of calls (`(index, call)`) runs: make sure each call in doubt has a
        human's decision.

        Raises:
            InDoubt: with the requests (streamed already) for the calls without a decision.
            ToolError: when a human chose to fail the run.
        """
        asked: list[RequestInfoUpdate] = []
        for index, call in calls:
            if call.name in idempotent:
                continue
            step = _step(ctx, index, call, self._superstep)
            result, doubtful = await self._look_up(step, call)
            if result is not None or doubtful is None:
                continue
            request_id = in_doubt_id(ctx.place, step)
            # The human decides about the call that may have taken effect: the recorded one.
            recorded = ToolCallContent(call_id=call.call_id, name=call.name, arguments=doubtful)
            request = in_doubt_request(request_id, recorded, ctx.path)
            answers = ctx.turn.answers
            if request_id in answers:
                answer = answers[request_id]
                decision = decision_of(answer)
                if decision is not None:
                    if decision.choice == "fail":
                        raise refused(call, ctx.path)
                    continue
                payload = {**request.payload, "unclear_answer": answer}
                request = request.model_copy(update={"payload": payload})
            await ctx.emit(request)
            ctx.turn.asked.append(request_id)
            asked.append(request)
        if asked:
            raise InDoubt(asked)

    async def call(
        self, ctx: RunContext, index: int, call: ToolCallContent, run: ToolCall, *, idempotent: bool
    ) -> ToolResult:
        """Run call `index` of the agent at `ctx.place` through `run`, recorded before and
        after; give a recorded result instead, or take a human's decision on it (`check`
        made sure there is one)."""
        step = _step(ctx, index, call, self._superstep)
        result, doubtful = await self._look_up(step, call)
        if result is not None:
            return result
        if doubtful is not None and not idempotent:
            decision = decision_of(ctx.turn.answers.get(in_doubt_id(ctx.place, step)))
            assert decision is not None and decision.choice != "fail"  # see `check`
            if decision.choice == "skip":
                result = ToolResult(decision.result)
                await self._record(ENDED, step, call, result)
                return result
        if not idempotent:
            await self._record(STARTED, step, call)
        result = await run(call, ctx)
        await self._record(ENDED, step, call, result)
        return result

    async def _look_up(
        self, step: str, call: ToolCallContent
    ) -> tuple[ToolResult | None, str | None]:
        """What the records of `step` say of `call`: its recorded result, when a call with
        its arguments ended; else the arguments of a call there that started and has no
        recorded end (in doubt: the re-run's model may have asked with other ones), if any."""
        records = self._records
        if records is None:
            records = await self._load()
        ended: dict[str, ToolResult] = {}
        started: list[str] = []
        for record in records.get(step, ()):
            if record.result is None:
                started.append(record.arguments)
            else:
                ended[record.arguments] = record.result
        found = ended.get(call.arguments)
        if found is not None:
            return found, None
        return None, next((a for a in started if a not in ended), None)

    async def _load(self) -> dict[str, list[_Record]]:
        async with self._lock:
            records = self._records
            if records is None:
                records = dict[str, list[_Record]]()
                for event in await self._log.events(self._key):
                    meta = event.meta
                    try:
                        result = None
                        if event.kind == ENDED:
                            text, is_error = meta["result"], meta["is_error"]
                            result = ToolResult(str(text), is_error=bool(is_error))
                        record = _Record(str(meta["arguments"]), result)
                        step = str(meta["step"])
                    except KeyError as exc:
                        problem = f"the tool-call record has no {exc.args[0]!r}"
                        raise damaged_event(event.id, problem) from None
                    records.setdefault(step, []).append(record)
                self._records = records
            return records

    async def _record(
        self,
        kind: Literal["tool.started", "tool.ended"],
        step: str,
        call: ToolCallContent,
        result: ToolResult | None = None,
    ) -> None:
        from raf.stores.base import StoredEvent

        meta: dict[str, Any] = {"step": step, "tool": call.name, "arguments": call.arguments}
        if result is not None:
            meta["result"] = result.text
            meta["is_error"] = result.is_error
        event = StoredEvent(
            id=new_id(), occurred_at=datetime.now(UTC), kind=kind, key=self._key, meta=meta
        )
        await self._log.append(event)
        records = self._records
        if records is not None:
            records.setdefault(step, []).append(_Record(call.arguments, result))


def _step(ctx: RunContext, index: int, call: ToolCallContent, superstep: Callable[[], int]) -> str:
    """The stable id of call `index` of the agent at `ctx.place`, in the node call that runs
    it (`ctx.call`, `"{node}@{superstep}#{n}"`) or else in the root's superstep:
    `"{place}[{call or superstep}]#{index}:{tool}"`. A resumed superstep names its calls alike;
    an agent that a later superstep runs again (a loop, a role's next step) makes calls of its
    own, never finding the earlier ones' results."""
    where = ctx.call if ctx.call is not None else str(superstep())
    return f"{'/'.join(ctx.place)}[{where}]#{index}:{call.name}"
