"""`stream_run`: one AG-UI run of an agent on a thread, its events sent as SSE bytes.

The run happens inside the caller's task (the SSE response's own, `RunResponse`): when the
client goes away the response cancels that task, which leaves the agent's `async with` block and so
cancels every task of the run. When the server stops, `stopping` is set: the run is
cancelled the same way and the stream ends with `RUN_ERROR` (code `ServerStopping`). The
thread is held for the whole run and saved however the run ends, under a shield; the run's
`RUN_FINISHED` or `RUN_ERROR` goes out once it is saved. A store that fails (it cannot open
the thread, or save it) ends the stream with `RUN_ERROR` (code `StoreFailed`) saying which
store and what to do, its traceback logged; every stream has exactly one such end. A run
`Resumed` from a checkpoint (time travel, on a new thread) takes no messages: the workflow
agent's turn goes on from that checkpoint (`raf.engine.run_from`).

Example:
    >>> async def run(agent, run_input, threads, send):
    ...     await stream_run(agent, run_input, threads, send)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import anyio
from ag_ui.core import (
    BaseEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
)
from ag_ui.encoder import EventEncoder
from pydantic_core import to_json

from raf._streaming import DONE
from raf.agent import IAgent, RunOptions
from raf.engine import WorkflowAgent, run_from
from raf.errors import CheckpointError, SessionBusy, UnansweredCalls, UnknownRequest
from raf.serve.agui.inputs import input_ids, new_input
from raf.serve.agui.mapper import AguiMapper
from raf.serve.store_failures import STORE_FAILED, log_failure, store_failed
from raf.serve.threads import Thread, Threads

__all__ = ["SERVER_STOPPING", "Resumed", "stream_run"]

logger = logging.getLogger("raf")

SendBytes = Callable[[bytes], Awaitable[None]]
"""Sends one encoded SSE event to the client."""

Flush = Callable[[], Awaitable[None]]
"""Writes the events `send` has held back."""

Emit = Callable[[Iterable[BaseEvent]], Awaitable[None]]

SERVER_STOPPING = "ServerStopping"
"""The `RUN_ERROR` code of a run the stopping server ended."""

_ENCODER = EventEncoder()


@dataclass(frozen=True, slots=True)
class Resumed:
    """Where a run on a new thread goes on from, instead of new messages (time travel)."""

    agent: WorkflowAgent
    """The served agent whose turn saved the checkpoint."""
    checkpoint_id: str
    """The checkpoint: any step of a turn of `agent`."""
    thread: Mapping[str, Any] | None
    """The saved state of the thread the checkpoint came from, as that turn found it (its
    seen ids, runs, open requests; None when the turn was the thread's first)."""


def encode(event: BaseEvent) -> bytes:
    """`event` as one SSE event (`data: <its JSON>` and a blank line), as `ag_ui`'s
    `EventEncoder` writes it; a plain `TEXT_MESSAGE_CONTENT`, one per streamed token, is
    written directly (the same bytes, a tenth of the work).

    Example:
        >>> encode(TextMessageContentEvent(message_id="m1", delta="Hi"))
        b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hi"}\\n\\n'
    """
    if (
        type(event) is TextMessageContentEvent
        and event.timestamp is None
        and event.raw_event is None
        and event.metadata is None
        and not event.model_extra
    ):
        owner = event.subagent_run_id
        return b"".join(
            (
                _CONTENT,
                b"" if owner is None else b'"subagentRunId":' + to_json(owner) + b",",
                b'"messageId":',
                to_json(event.message_id),
                b',"delta":',
                to_json(event.delta),
                b"}\n\n",
            )
        )
    return _ENCODER.encode(event).encode()


_CONTENT = b'data: {"type":"TEXT_MESSAGE_CONTENT",'


async def stream_run(
    agent: IAgent,
    run_input: RunAgentInput,
    threads: Threads,
    send: SendBytes,
    stopping: anyio.Event | None = None,
    *,
    resumed: Resumed | None = None,
    flush: Flush | None = None,
) -> None:
    """Run `agent` on the new messages of the input's thread (or on from where `resumed`
    says), sending AG-UI events through `send`; the thread is held (`Threads.hold`) from
    before it is read until it is saved. When `stopping` is set the run is cancelled and
    ends with `RUN_ERROR`. `send` may hold events back until `flush` is awaited: the run
    awaits it whenever it is about to wait (so no event waits for company), and at its end
    (after the thread is saved)."""
    flush = flush or _nothing
    run = _Run(AguiMapper(agent, thread_id=run_input.thread_id, run_id=run_input.run_id), flush)

    async def emit(events: Iterable[BaseEvent]) -> None:
        for event in events:
            if run.ended:  # one terminal event per stream: a failure after it is only logged
                return
            await send(encode(event))
            run.ended = isinstance(event, RunFinishedEvent | RunErrorEvent)

    await emit(run.mapper.started())
    await flush()
    stopped = False
    async with anyio.create_task_group() as group:
        if stopping is not None:

            async def stop() -> None:
                nonlocal stopped
                await stopping.wait()
                stopped = True
                group.cancel_scope.cancel()

            group.start_soon(stop)
        await _held(agent, run_input, threads, run, emit, resumed)
        group.cancel_scope.cancel()
    if stopped and not run.ended:  # the stop cancelled the run before it ended its stream
        error = RuntimeError("the server stopped during the run: send it again once it is back")
        await emit(run.mapper.failed(error, code=SERVER_STOPPING))
    elif not run.ended:  # every path above ends the stream; this one says so if one did not
        error = RuntimeError("the run ended without a result: see the server's log")
        await emit(run.mapper.failed(error))
    await flush()


def _nothing() -> Awaitable[None]:
    return DONE


@runtime_checkable
class _Buffered(Protocol):
    def ready(self) -> bool: ...


def _never() -> bool:
    return False


@dataclass(slots=True)
class _Run:
    """The mapper of one run, replaced once the thread is read (its ids depend on it)."""

    mapper: AguiMapper
    flush: Flush
    ended: bool = False
    """Whether the stream has its terminal event (`RUN_FINISHED` or `RUN_ERROR`)."""


async def _held(
    agent: IAgent,
    run_input: RunAgentInput,
    threads: Threads,
    run: _Run,
    emit: Emit,
    resumed: Resumed | None,
) -> None:
    mapper = run.mapper
    opened = False
    try:
        async with threads.hold(run_input.thread_id) as thread:
            opened = True
            await _run_on(agent, run_input, thread, threads, run, emit, resumed)
    except SessionBusy as exc:
        # Another run holds the thread, and saves it: this one never started.
        exc.with_path((agent.id,))
        said = (
            f"thread {run_input.thread_id!r} has a run in progress (one run at a time per "
            "thread): wait for its RUN_FINISHED or RUN_ERROR, then send this run again, or "
            "start another thread"
        )
        await emit(mapper.failed(exc, said))
    except Exception as exc:
        if isinstance(exc, ValueError) and not isinstance(exc, CheckpointError):
            await emit(mapper.failed(exc))  # the thread's saved state is not a thread's
            return
        if opened:  # the run's own failures end it in `_run_on`: this is raf's
            said = f"raf failed on thread {run_input.thread_id!r}: {type(exc).__name__}: {exc}"
            code = None
        else:  # the store could not open, hold or read the thread
            doing = f"could not open thread {run_input.thread_id!r}"
            said = store_failed(threads.store, doing, exc) + ", then send the run again"
            code = STORE_FAILED
        log_failure(f"run of {agent.id!r}: {said}", exc)
        await emit(run.mapper.failed(exc, said, code=code))


async def _run_on(
    agent: IAgent,
    run_input: RunAgentInput,
    thread: Thread,
    threads: Threads,
    holder: _Run,
    emit: Emit,
    resumed: Resumed | None,
) -> None:
    mapper = holder.mapper
    if resumed is None:
        try:
            taken = new_input(run_input, thread.seen, thread.asked, thread.context, thread.shared)
        except ValueError as exc:
            await emit(mapper.failed(exc))
            return
        if not taken.messages:
            await emit(
                mapper.failed(
                    ValueError(
                        f"the input has no message that thread {thread.id!r} has not seen: "
                        "add a user message (or resume entries) to run the agent"
                    )
                )
            )
            return
        options = RunOptions(client_tools=taken.tools) if taken.tools else None
        run = agent.run(taken.messages, thread.session, options)
        context, shared = taken.context, taken.state
    else:
        Threads.carry(thread, resumed.thread)
        run = run_from(resumed.agent, resumed.checkpoint_id, thread.session)
        context, shared = thread.context, thread.shared
    thread.runs += 1
    turn = thread.runs
    asked = dict(thread.asked)

    def interrupt_id(request_id: str) -> str:
        # raf's request ids repeat from turn to turn; the client's are unique in the thread.
        known = asked.get(request_id)
        if known is None:
            known = asked[request_id] = f"{request_id}~{turn}"
        return known

    mapper = AguiMapper(
        agent,
        thread_id=mapper.thread_id,
        run_id=mapper.run_id,
        interrupt_id=interrupt_id,
        said=thread.said,
    )
    holder.mapper = mapper
    if shared is not None:
        await emit([StateSnapshotEvent(snapshot=shared)])
    answered = False
    ending: list[BaseEvent] = []
    unsaved: tuple[Exception, str] | None = None
    flush = holder.flush
    try:
        await flush()
        async with run as updates:
            # What the agent has buffered goes out with this update; the update is written
            # before the run waits for the next.
            ready = updates.ready if isinstance(updates, _Buffered) else _never
            async for update in updates:
                await emit(mapper.map(update))
                if not ready():
                    await flush()
        response = run.response
        if response is not None:  # the stream ended without error: it has one
            answered = True
            waiting = response.status == "waiting"
            pending = {r.request_id for r in response.pending}
            ending = mapper.finished(response)
            thread.asked = {r: mapper.client_id(r) for r in sorted(pending)}
            thread.said = [m.model_dump_json() for m in response.messages] if waiting else []
            thread.context = context
            thread.shared = shared
    except Exception as exc:
        if not isinstance(exc, UnknownRequest | UnansweredCalls):  # the client's mistake
            logger.warning("run of %r on thread %r failed", agent.id, thread.id, exc_info=True)
        ending = mapper.failed(exc)
    finally:
        with anyio.CancelScope(shield=True):
            # What the run produced is in the thread now; its input only once taken in
            # (a failed or cancelled turn leaves no history: the client may send it again).
            thread.seen |= mapper.minted
            if answered:
                thread.seen |= input_ids(run_input)
            unsaved = await _save(agent, threads, thread)
    # The run's end goes out once the thread is saved: a client told RUN_FINISHED finds the
    # turn kept; when the save failed, it is told that instead.
    if unsaved is not None:
        ending = [*ending[:-1], *mapper.failed(unsaved[0], unsaved[1], code=STORE_FAILED)]
    await emit(ending)


async def _save(agent: IAgent, threads: Threads, thread: Thread) -> tuple[Exception, str] | None:
    """Save `thread`: None once saved, else the store's error and what the client is told
    of it (logged here, with its traceback)."""
    try:
        await threads.save(thread)
    except Exception as exc:
        doing = f"could not save thread {thread.id!r}"
        said = store_failed(threads.store, doing, exc)
        said += ", then send the run again: this turn is not kept"
        log_failure(f"run of {agent.id!r}: {said}", exc)
        return exc, said
    return None
