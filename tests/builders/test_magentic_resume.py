"""Magentic over real HTTP, and resuming a checkpoint taken mid-ledger."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from raf import MagenticBuilder, ReactAgent, SequentialBuilder, Session, tool
from raf.engine import Workflow
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.providers.openai import OpenAIProvider, create_client
from raf.stores import SqliteCheckpointStore
from raf.testing import ScriptedOpenAIServer, ScriptedProvider, Turn, text, tool_calls
from tests.builders.magentic_script import Manager, kind_of, progress

pytestmark = pytest.mark.anyio


@tool
def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: what to look up.
    """
    return f"{topic}: 42"


def model(messages: list[ChatMessage]) -> Turn:
    """One server plays the manager and both participants (the system prompt says who)."""
    system = messages[0].text
    if system == "researcher":
        if messages[-1].role == "tool":
            return text(f"found {messages[-1].contents[0].result}")  # type: ignore[union-attr]
        return tool_calls(("lookup", {"topic": "answer"}))
    if system == "writer":
        return text("written up")
    kind = kind_of(messages)
    if kind == "task":
        return text("none yet")
    if kind == "plan":
        return text("- researcher looks it up")
    if kind == "progress":
        briefing = messages[-1].text
        if "[writer] written up" in briefing:
            return text(json.dumps(progress("writer", "", done=True)))
        if "[researcher] found" in briefing:
            return text(json.dumps(progress("writer", "write it up")))
        return text(json.dumps(progress("researcher", "look up the answer")))
    return text("The answer is 42.")


async def test_react_agents_over_real_http_send_the_ledger_formats() -> None:
    async with ScriptedOpenAIServer(model) as server, create_client(server.base_url, "k") as client:
        provider = OpenAIProvider(client, "scripted")
        team = (
            MagenticBuilder(provider, id="team")
            .add_agent(ReactAgent("researcher", provider, "researcher", tools=[lookup]))
            .add_agent(ReactAgent("writer", provider, "writer", description="writes"))
            .build()
            .as_agent()
        )
        async with team.run("what is the answer?") as stream:
            items = [u async for u in stream]
    final = [u.message for u in items if u.type == "message_completed" and u.path == ("team",)]
    assert [m.text for m in final] == ["The answer is 42."]
    called = [(u.path, u.result) for u in items if u.type == "tool_called"]
    assert called == [(("team", "researcher"), "answer: 42")]
    formats = [r.response_format for r in server.requests]
    names = [f["json_schema"]["name"] if f else None for f in formats]
    # facts, plan, progress, researcher (tool call, answer), progress, writer, progress, final
    assert names == [
        None,
        None,
        "ProgressLedger",
        None,
        None,
        "ProgressLedger",
        None,
        "ProgressLedger",
        None,
    ]
    progress_schema = formats[2]["json_schema"]["schema"]  # type: ignore[index]
    speaker = progress_schema["$defs"]["SpeakerChoice"]["properties"]["answer"]
    assert speaker["enum"] == ["researcher", "writer"]
    assert [t.name for t in server.requests[3].tools] == ["lookup"]
    assert server.requests[0].tools == [] and server.requests[-1].tools == []
    manager_roster = server.requests[0].messages[0].text
    assert "- researcher: researcher" in manager_roster and "- writer: writes" in manager_roster
    # The writer was told what to do, after seeing the researcher's answer.
    writer_request = server.requests[6].messages
    assert "found answer: 42" in " ".join(m.text for m in writer_request)
    assert writer_request[-1].text == "write it up"
    # It was shown the plan, too.
    assert "- researcher looks it up" in " ".join(m.text for m in writer_request)


def counted(calls: Counter[str], agent_id: str) -> FunctionAgent:
    def answer(messages: list[ChatMessage]) -> str:
        calls[agent_id] += 1
        return f"{agent_id} answer {calls[agent_id]}"

    return FunctionAgent(agent_id, answer)


async def test_a_checkpoint_mid_ledger_resumes_exactly(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    managers: list[Manager] = []

    plan = [
        progress("a", "first"),
        progress("b", "second", stalled=True),
        progress("a", "third"),
        progress("b", "", done=True),
    ]

    def by_answers(messages: list[ChatMessage]) -> dict[str, object]:
        # The ledger follows from the transcript, so a resumed manager answers the same.
        return plan[messages[-1].text.count(" answer ")]

    def build() -> Workflow:
        manager = Manager([by_answers] * 4, answer="all done")
        managers.append(manager)
        team = (
            MagenticBuilder(ScriptedProvider(manager), id="team")
            .add_agent(counted(calls, "a"))
            .add_agent(counted(calls, "b"))
            .build()
        )
        return SequentialBuilder(id="flow").add_agent(team.as_agent()).build()

    path = tmp_path / "runs.sqlite"
    async with SqliteCheckpointStore(path) as store:
        first = await build().run("go", Session(id="s1", store=store))
        assert first.status == "completed"
        assert [m.text for m in first.outputs[-1]] == ["all done"]
        checkpoints = await store.list("s1")
        saved = [await store.load(c) for c in checkpoints]
    assert calls == Counter({"a": 2, "b": 1})
    # The checkpoint that hands b its turn: the ledger in the session, one stall counted.
    states = [_magentic(c.data) for c in saved]
    middle = next(i for i, s in enumerate(states) if s is not None and s["round"] == 2)
    assert states[middle]["stalls"] == 1  # type: ignore[index]
    assert states[middle]["ledger"] == {"facts": "facts 1", "plan": "plan 1"}  # type: ignore[index]

    calls.clear()
    async with SqliteCheckpointStore(path) as reopened:
        resumed = await build().resume(checkpoints[middle], reopened)
    assert resumed.status == "completed"
    assert [m.text for m in resumed.outputs[-1]] == ["all done"]
    # Only what came after the checkpoint ran: b's pending turn, then a's.
    assert calls == Counter({"a": 1, "b": 1})
    # b's turn, then two progress ledgers and the answer: nothing before the checkpoint.
    assert managers[-1].kinds() == ["progress", "progress", "final"]
    # The resumed manager picked up the stall count and transcript from the checkpoint.
    last = managers[-1].prompts("final")[0]
    assert "[b] b answer 1" in last and "[a] a answer 1" in last


def _magentic(data: dict[str, object]) -> dict[str, object] | None:
    """The orchestrator's state in a checkpoint, if it has one yet."""
    session = data["session"]
    assert isinstance(session, dict)
    for key, value in session.items():  # pyright: ignore[reportUnknownVariableType]
        if str(key).endswith("orchestrator#state"):
            found = _decoded(value)
            if isinstance(found, dict) and "magentic" in found:
                return found["magentic"]  # type: ignore[return-value]
    return None


def _decoded(value: object) -> object:
    if isinstance(value, dict) and set(value) >= {"t", "v"}:  # pyright: ignore[reportUnknownArgumentType]
        return value["v"]  # type: ignore[index]
    return value
