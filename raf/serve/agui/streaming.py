"""`stream_run`: one AG-UI run of an agent on a thread, its events sent as SSE bytes.

The run happens inside the caller's task (the SSE response's sender): when the client goes
away the response cancels that task, which leaves the agent's `async with` block and so
cancels every task of the run. The thread is held for the whole run and saved however the run
ends, under a shield.

Example:
    >>> async def run(agent, run_input, threads, send):
    ...     await stream_run(agent, run_input, threads, send)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

import anyio
from ag_ui.core import BaseEvent, RunAgentInput
from ag_ui.encoder import EventEncoder

from raf.agent import IAgent
from raf.errors import SessionBusy
from raf.serve.agui.inputs import input_ids, new_messages
from raf.serve.agui.mapper import AguiMapper
from raf.serve.threads import Thread, Threads

__all__ = ["stream_run"]

logger = logging.getLogger("raf")

SendBytes = Callable[[bytes], Awaitable[None]]
"""Sends one encoded SSE event to the client."""

_ENCODER = EventEncoder()


async def stream_run(
    agent: IAgent, run_input: RunAgentInput, threads: Threads, send: SendBytes
) -> None:
    """Run `agent` on the new messages of the input's thread, sending AG-UI events through
    `send`; the thread is held (`Threads.hold`) from before it is read until it is saved."""
    mapper = AguiMapper(agent, thread_id=run_input.thread_id, run_id=run_input.run_id)

    async def emit(events: Iterable[BaseEvent]) -> None:
        for event in events:
            await send(_ENCODER.encode(event).encode())

    await emit(mapper.started())
    try:
        async with threads.hold(run_input.thread_id) as thread:
            await _run_on(agent, run_input, thread, threads, mapper, emit)
    except SessionBusy as exc:
        # Another run holds the thread, and saves it: this one never started.
        exc.with_path((agent.id,))
        await emit(mapper.failed(exc))
    except ValueError as exc:  # the thread's saved state is not a thread's
        await emit(mapper.failed(exc))


async def _run_on(
    agent: IAgent,
    run_input: RunAgentInput,
    thread: Thread,
    threads: Threads,
    mapper: AguiMapper,
    emit: Callable[[Iterable[BaseEvent]], Awaitable[None]],
) -> None:
    try:
        messages = new_messages(run_input, thread.seen)
    except ValueError as exc:
        await emit(mapper.failed(exc))
        return
    if not messages:
        await emit(
            mapper.failed(
                ValueError(
                    f"the input has no message that thread {thread.id!r} has not seen: "
                    "add a user message (or resume entries) to run the agent"
                )
            )
        )
        return
    run = agent.run(messages, thread.session)
    answered = False
    try:
        async with run as updates:
            async for update in updates:
                await emit(mapper.map(update))
        answered = run.response is not None  # the stream ended without error: it has one
        if run.response is not None:
            await emit(mapper.finished(run.response))
    except Exception as exc:
        logger.warning("run of %r on thread %r failed", agent.id, thread.id, exc_info=True)
        await emit(mapper.failed(exc))
    finally:
        with anyio.CancelScope(shield=True):
            # What the run produced is in the thread now; its input only once taken in
            # (a failed or cancelled turn leaves no history: the client may send it again).
            thread.seen |= mapper.minted
            if answered:
                thread.seen |= input_ids(run_input)
            await threads.save(thread)
