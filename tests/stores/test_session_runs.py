"""A run stops when its session's lock is lost, before it writes; a fresh run goes on from the
newest saved turn (`raf._session_turns`), on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from raf import ChatMessage, FunctionAgent, Session, SessionLockLost
from tests.stores.conftest import Backing
from tests.stores.test_lost_locks import dsn_of, lose_locks

pytestmark = pytest.mark.anyio


def holding_echo() -> tuple[FunctionAgent, anyio.Event]:
    """An agent that echoes the conversation, but holds its turn for ever on "hold" (once
    `started` is set), as a slow model would."""
    started, never = anyio.Event(), anyio.Event()

    async def slow(messages: list[ChatMessage]) -> AsyncIterator[str]:
        if messages[-1].text == "hold":
            started.set()
            await never.wait()
        yield " ".join(m.text for m in messages)

    return FunctionAgent("echo", slow), started


async def test_a_run_whose_lock_is_lost_stops_before_it_writes(
    durable_backing: Backing, request: pytest.FixtureRequest
) -> None:
    dsn = dsn_of(durable_backing, request)
    agent, started = holding_echo()
    async with durable_backing.open() as first, durable_backing.open() as second:
        await agent.run("one", Session("s", first))
        saved = (await Session.open("s", first)).saved
        failure: list[BaseException] = []
        ended = anyio.Event()

        async def holder() -> None:
            try:
                await agent.run("hold", Session("s", first))
            except SessionLockLost as exc:
                failure.append(exc)
            finally:
                ended.set()

        async with anyio.create_task_group() as group:
            group.start_soon(holder)
            await started.wait()
            lose_locks(first, dsn)
            with anyio.fail_after(3):  # stopped promptly, not when the turn would end
                await ended.wait()
        [lost] = failure
        assert isinstance(lost, SessionLockLost) and lost.path == ("echo",)
        assert "run the turn again" in str(lost)
        # Nothing of the stopped turn was written; another worker goes on from turn one.
        assert (await Session.open("s", second)).saved == saved
        again = await agent.run("two", Session("s", second))
        assert again.text == "one one two"


async def test_two_http_workers_never_both_finish_one_threads_turn(
    durable_backing: Backing, request: pytest.FixtureRequest
) -> None:
    import httpx2

    from raf.serve import create_app
    from tests.serve.events import parse, text_of
    from tests.serve.trees import run_input, user

    dsn = dsn_of(durable_backing, request)
    agent, started = holding_echo()
    async with durable_backing.open() as first, durable_backing.open() as second:
        workers = [create_app(agent, first), create_app(agent, second)]
        clients = [
            httpx2.AsyncClient(transport=httpx2.ASGITransport(w), base_url="http://localhost")
            for w in workers
        ]
        async with clients[0] as a, clients[1] as b:

            async def run(http: httpx2.AsyncClient, text: str, n: int) -> list[dict[str, object]]:
                answer = await http.post(
                    "/agents/echo/run", json=run_input("t", user(f"m{n}", text))
                )
                return parse(answer.text)

            await run(a, "one", 1)
            held: list[list[dict[str, object]]] = []

            async def holder() -> None:
                held.append(await run(a, "hold", 2))

            async with anyio.create_task_group() as group:
                group.start_soon(holder)
                await started.wait()
                lose_locks(first, dsn)
            [stopped] = held
            second_turn = await run(b, "two", 3)
    assert stopped[-1]["type"] == "RUN_ERROR" and "was lost" in str(stopped[-1]["message"])
    assert [e["type"] for e in stopped].count("RUN_FINISHED") == 0
    assert second_turn[-1]["type"] == "RUN_FINISHED"
    assert text_of(second_turn, "echo") == "one one two"  # the stopped turn left nothing
