"""`ProducerStream`: every item in order, the body's error after them, a full buffer waits,
and leaving early cancels the body, under random pacing of both sides."""

from __future__ import annotations

from contextlib import nullcontext

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raf._streaming import DONE, STREAM_BUFFER, ProducerStream, Send
from tests.helpers import task_count

pytestmark = pytest.mark.anyio

# (items the body sends, which sends it waits after, which takes the consumer waits after)
paces = st.tuples(
    st.integers(0, STREAM_BUFFER * 2 + 3),
    st.sets(st.integers(0, STREAM_BUFFER * 2 + 3), max_size=8),
    st.sets(st.integers(0, STREAM_BUFFER * 2 + 3), max_size=8),
)


class Boom(Exception):
    pass


def _body(count: int, pauses: set[int], fail: bool, log: list[str]):
    async def body(send: Send[int]) -> int:
        try:
            for item in range(count):
                await send(item)
                if item in pauses:
                    await anyio.lowlevel.checkpoint()
            if fail:
                raise Boom(f"after {count}")
            return count
        finally:
            log.append("body ended")

    return body


@settings(max_examples=40)
@given(pace=paces, fail=st.booleans())
async def test_every_item_arrives_in_order_then_the_result_or_the_error(
    pace: tuple[int, set[int], set[int]], fail: bool
) -> None:
    count, producer_pauses, consumer_pauses = pace
    log: list[str] = []
    stream = ProducerStream[int, int](_body(count, producer_pauses, fail, log))
    received: list[int] = []
    with pytest.raises(Boom) if fail else nullcontext():
        async with stream as items:
            async for item in items:
                received.append(item)
                if len(received) in consumer_pauses:
                    await anyio.lowlevel.checkpoint()
    assert received == list(range(count))
    assert stream.result == (None if fail else count)
    assert log == ["body ended"]


@settings(max_examples=30)
@given(pace=paces, stop=st.integers(0, STREAM_BUFFER * 2 + 3))
async def test_leaving_early_cancels_the_body_and_leaks_no_task(
    pace: tuple[int, set[int], set[int]], stop: int
) -> None:
    count, producer_pauses, consumer_pauses = pace
    log: list[str] = []
    before = task_count()
    received: list[int] = []
    async with ProducerStream[int, int](_body(count, producer_pauses, False, log)) as items:
        async for item in items:
            if len(received) == stop:
                break
            received.append(item)
            if len(received) in consumer_pauses:
                await anyio.lowlevel.checkpoint()
    assert received == list(range(min(stop, count)))
    assert log == ["body ended"]
    assert task_count() == before


async def test_a_full_buffer_makes_the_body_wait_until_the_consumer_takes() -> None:
    sent = 0

    async def body(send: Send[int]) -> None:
        nonlocal sent
        for item in range(STREAM_BUFFER * 3):
            await send(item)
            sent += 1

    async with ProducerStream[int, None](body) as items:
        await anyio.wait_all_tasks_blocked()
        assert sent == STREAM_BUFFER  # the next send waits for room
        first = await items.__anext__()
        await anyio.wait_all_tasks_blocked()
        assert (first, sent) == (0, STREAM_BUFFER + 1)
        rest = [item async for item in items]
    assert rest == list(range(1, STREAM_BUFFER * 3))


async def test_a_done_awaitable_is_done_at_once() -> None:
    assert await DONE is None
