"""Typed reads of a session by agent or path: history, pattern state, the paths kept."""

from __future__ import annotations

import pytest

from raf import ConcurrentBuilder, FunctionAgent, SequentialBuilder
from raf.messages import ChatMessage
from raf.session import Session


def _echo(agent_id: str) -> FunctionAgent:
    return FunctionAgent(agent_id, lambda messages: messages[-1].text.upper())


@pytest.mark.anyio
async def test_history_by_agent_path_string_and_tuple_after_two_turns() -> None:
    team = SequentialBuilder(id="team").add_agent(_echo("writer")).build().as_agent()
    session = Session()
    await team.run("one", session)
    await team.run("two", session)
    texts = ["one", "ONE", "two", "TWO"]
    assert [m.text for m in session.history(team)] == texts
    assert [m.text for m in session.history("team")] == texts
    assert [m.text for m in session.history(("team",))] == texts
    assert session.history(team) == session.get("team#history")  # the same data, typed
    assert session.paths() == ["team"]


@pytest.mark.anyio
async def test_history_survives_a_json_round_trip_and_reads_as_messages() -> None:
    agent = _echo("echo")
    session = Session()
    await agent.run("hi", session)
    restored = Session.from_json(session.to_json())
    assert restored.to_json() == session.to_json()  # the format is unchanged
    history = restored.history(agent)
    assert all(isinstance(m, ChatMessage) for m in history)
    assert [m.text for m in history] == ["hi", "HI"]


def test_an_unknown_agent_has_no_history_or_state_and_copies_are_the_callers() -> None:
    session = Session()
    assert session.history("nobody") == [] and session.state("nobody") == {}
    session.set("desk/router#state", {"active": "sales"})
    state = session.state("desk/router")
    state["active"] = "changed"
    assert session.state("desk/router") == {"active": "sales"}
    assert session.state(FunctionAgent("router", lambda m: "")) == {"active": "sales"}


@pytest.mark.anyio
async def test_an_agent_id_kept_at_several_paths_asks_for_the_path() -> None:
    one = _echo("echo")
    both = ConcurrentBuilder(id="both").add_agent(one).add_agent(_echo("other")).build()
    session = Session()
    await one.run("a", session)
    session.set("both/echo#history", [ChatMessage.user("b")])
    await both.as_agent().run("c", session)
    with pytest.raises(ValueError) as info:
        session.history(one)
    assert str(info.value) == (
        f"agent 'echo' has history at several paths of session {session.id!r} "
        "(echo, both/echo): pass the path, say session.history('echo')"
    )
    assert [m.text for m in session.history("both/echo")] == ["b"]
