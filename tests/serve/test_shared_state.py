"""AG-UI shared `state`: the thread keeps it, the agent is shown it when it changes, and each
run tells the client the state it uses with a `STATE_SNAPSHOT`."""

from __future__ import annotations

import pytest

from raf import FunctionAgent
from raf.messages import ChatMessage
from raf.serve import create_app
from raf.serve.threads import Threads
from raf.stores import MemoryCheckpointStore
from tests.serve.events import check_order, types
from tests.serve.test_app import client, run
from tests.serve.trees import run_input, user

pytestmark = pytest.mark.anyio


async def test_the_thread_keeps_the_shared_state_and_the_agent_sees_each_change() -> None:
    seen: list[list[tuple[str, str]]] = []

    def answer(messages: list[ChatMessage]) -> str:
        seen.append([(m.role, m.text) for m in messages])
        return "ok"

    store = MemoryCheckpointStore()
    one, two, three = user("u1", "hi"), user("u2", "again"), user("u3", "and now?")
    async with client(create_app(FunctionAgent("echo", answer), store)) as http:
        first = await run(http, "echo", run_input("t", one, state={"units": "metric"}))
        # A client that has no state (a reloaded page) gets the thread's back.
        second = await run(http, "echo", run_input("t", one, two, state={}))
        third = await run(
            http, "echo", run_input("t", one, two, three, state={"units": "imperial"})
        )
        kept = (await Threads(store).open("t")).shared
    for events in (first, second, third):
        check_order(events)
        assert types(events)[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    snapshots = [e["snapshot"] for run_ in (first, second, third) for e in run_ if "snapshot" in e]
    assert snapshots == [{"units": "metric"}, {"units": "metric"}, {"units": "imperial"}]
    shown = "Shared state from the client (JSON):\n"
    assert seen[0] == [("system", shown + '{"units": "metric"}'), ("user", "hi")]
    assert [m for m in seen[1] if m[0] == "system"] == [seen[0][0]]  # unchanged: not again
    assert seen[2][-2:] == [("system", shown + '{"units": "imperial"}'), ("user", "and now?")]
    assert kept == {"units": "imperial"}


async def test_a_thread_without_shared_state_sends_no_snapshot() -> None:
    agent = FunctionAgent("echo", lambda m: "ok")
    async with client(create_app(agent, MemoryCheckpointStore())) as http:
        events = await run(http, "echo", run_input("t", user("u1", "hi"), state={}))
    assert "STATE_SNAPSHOT" not in types(events)
    assert events[-1]["type"] == "RUN_FINISHED"
