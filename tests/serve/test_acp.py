"""`raf acp` driven by the ACP SDK's own client over stdio.

The SDK runs on asyncio only, and so does `raf acp`: the tests drive the SDK on an asyncio loop
(see tests/serve/acp_support.py) against `raf acp` subprocesses. The tests are synchronous: run
under trio as well, they would run the same asyncio code a second time. (The ACP server tested in
process, in tests/serve/test_acp_edges.py, runs on both.) A test that only needs a session opens
a new one on its module's shared `raf acp TARGET` process (`acp_servers`); one whose subject is
the process (a kept session loaded by a new server, two editors on one store) starts its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from tests.cli.support import ROOT
from tests.serve.acp_support import (
    RecordingClient,
    SharedServers,
    acp_command,
    acp_servers,
    cancel_once_running,
    kept,
    on_asyncio,
    prompt,
)

__all__ = ["acp_command", "acp_servers"]


def test_text_thoughts_and_tool_calls_become_session_updates(acp_servers: SharedServers) -> None:
    client = RecordingClient()
    assert acp_servers.one_prompt("tools_and_thoughts", client, "hi") == "end_turn"
    tools = [u for u in client.updates if isinstance(u, ToolCallStart | ToolCallProgress)]
    assert [(type(u).__name__, u.status) for u in tools] == [
        ("ToolCallStart", "pending"),
        ("ToolCallProgress", "in_progress"),
        ("ToolCallProgress", "completed"),
    ]
    assert tools[0].title == "shout" and tools[0].tool_call_id == "caller:call_1"
    assert tools[1].raw_input == {"word": "hello"}
    assert tools[2].raw_output == "HELLO"
    thoughts = [u.content.text for u in client.updates if isinstance(u, AgentThoughtChunk)]
    assert "".join(thoughts) == "The tool answered."
    assert client.text() == "It said HELLO."
    chunk = next(u for u in client.updates if isinstance(u, AgentMessageChunk))
    assert chunk.field_meta == {"raf": {"path": ["caller"]}}


def test_executors_become_plan_entries_and_nested_speakers_are_named(
    acp_servers: SharedServers,
) -> None:
    client = RecordingClient()
    assert acp_servers.one_prompt("pair", client, "hi") == "end_turn"
    plans = [u for u in client.updates if isinstance(u, AgentPlanUpdate)]
    last = plans[-1].entries
    assert [(e.content, e.status) for e in last] == [
        ("first", "completed"),
        ("second", "completed"),
    ]
    assert ("first", "in_progress") in [(e.content, e.status) for e in plans[0].entries]
    assert client.text() == "**first**: one\n\n**second**: two"


def test_acp_sessions_are_raf_sessions(acp_servers: SharedServers) -> None:
    client = RecordingClient()

    async def scenario(conn: ClientSideConnection, session_id: str) -> None:
        await prompt(conn, session_id, "hi")
        await prompt(conn, session_id, "again")
        other = await conn.new_session(cwd=str(ROOT))
        await prompt(conn, other.session_id, "hi")
        with pytest.raises(RequestError, match="Invalid params"):
            await prompt(conn, "no-such-session", "hi")

    acp_servers.run("counter", client, scenario)
    assert client.text() == "1 user messages2 user messages1 user messages"


def test_cancel_ends_the_turn_cancelled_while_a_tool_thread_blocks(
    acp_servers: SharedServers,
) -> None:
    client = RecordingClient()
    reasons: list[str] = []

    async def scenario(conn: ClientSideConnection, session_id: str) -> None:
        client.tool_running = running = anyio.Event()
        reasons.append((await cancel_once_running(conn, session_id, "go", running))[0])
        # The session takes the next prompt once cancelled (and stdout stayed the
        # protocol's: the tool's print went to stderr).
        reasons.append(await prompt(conn, session_id, "again"))

    acp_servers.run("slow", client, scenario)
    assert reasons[0] == "cancelled"
    assert reasons[1] == "end_turn"


def test_a_request_with_choices_is_a_permission_request_answered_in_the_turn(
    acp_servers: SharedServers,
) -> None:
    client = RecordingClient(choose="approve")
    assert acp_servers.one_prompt("approval", client, "cats") == "end_turn"
    [(tool_call, options)] = client.asked
    assert tool_call.title == "publish 'draft on cats'?"
    assert [(o.name, o.kind) for o in options] == [
        ("approve", "allow_once"),
        ("reject", "reject_once"),
    ]
    assert client.text().endswith("**review**: draft on cats: approve")
    request_updates = [
        u.status
        for u in client.updates
        if isinstance(u, ToolCallStart | ToolCallProgress)
        and u.tool_call_id == "request:approval/review@1#0"
    ]
    assert request_updates == ["pending", "completed"]


def test_a_dismissed_permission_request_cancels_the_turn_and_the_request_stays(
    acp_servers: SharedServers,
) -> None:
    client = RecordingClient(choose=None)
    reasons: list[str] = []

    async def scenario(conn: ClientSideConnection, session_id: str) -> None:
        reasons.append(await prompt(conn, session_id, "cats"))
        client.choose = "reject"
        reasons.append(await prompt(conn, session_id, "reject"))

    acp_servers.run("approval", client, scenario)
    assert reasons == ["cancelled", "end_turn"]
    assert client.text().endswith("**review**: draft on cats: reject")


def test_a_free_text_request_is_asked_in_a_message_and_the_next_prompt_answers(
    acp_servers: SharedServers,
) -> None:
    client = RecordingClient()

    async def scenario(conn: ClientSideConnection, session_id: str) -> None:
        assert await prompt(conn, session_id, "write") == "end_turn"
        assert "What title should it have?" in client.text()
        assert "Reply to answer." in client.text()
        assert await prompt(conn, session_id, "Cats") == "end_turn"

    acp_servers.run("question", client, scenario)
    assert client.asked == []
    assert client.text().endswith("**titling**: titled Cats")


def test_a_failed_run_answers_the_prompt_with_an_error_naming_its_path(
    acp_servers: SharedServers,
) -> None:
    client = RecordingClient()

    async def scenario(conn: ClientSideConnection, session_id: str) -> None:
        with pytest.raises(RequestError) as failure:
            await prompt(conn, session_id, "hi")
        assert "WorkflowError" in str(failure.value)
        assert failure.value.data == {"error": "WorkflowError", "path": ["s"]}

    acp_servers.run("failing", client, scenario)


def test_a_kept_session_is_listed_and_loaded_by_a_new_server(
    tmp_path: Path, acp_command: list[str]
) -> None:
    store = tmp_path / "sessions.db"
    first, second = RecordingClient(), RecordingClient()
    found: dict[str, Any] = {}

    async def scenario() -> None:
        async with kept(acp_command, "counter", first, store) as conn:
            session = await conn.new_session(cwd="/work/project")
            found["id"] = session.session_id
            await prompt(conn, session.session_id, "plan the trip\nin detail")
            await prompt(conn, session.session_id, "again")
            other = await conn.new_session(cwd="/elsewhere")
            await prompt(conn, other.session_id, "unrelated")
        # A new server process on the same store: what an editor restarted has.
        async with kept(acp_command, "counter", second, store) as conn:
            listed = await conn.list_sessions(cwd="/work/project")
            found["listed"] = [(s.session_id, s.title, s.cwd) for s in listed.sessions]
            found["all"] = len((await conn.list_sessions()).sessions)
            await conn.load_session(cwd="/work/project", session_id=found["id"])
            found["replayed"] = [
                (u.session_update, u.content.text)
                for u in second.updates
                if isinstance(u, UserMessageChunk | AgentMessageChunk)
            ]
            second.updates.clear()
            await prompt(conn, found["id"], "and now?")
            found["next"] = second.text()

    on_asyncio(scenario)
    assert found["listed"] == [(found["id"], "plan the trip", "/work/project")]
    assert found["all"] == 2
    assert found["replayed"] == [
        ("user_message_chunk", "plan the trip\nin detail"),
        ("agent_message_chunk", "1 user messages"),
        ("user_message_chunk", "again"),
        ("agent_message_chunk", "2 user messages"),
    ]
    assert found["next"] == "3 user messages"  # the conversation went on where it was


def test_an_unknown_session_cannot_be_loaded(tmp_path: Path, acp_command: list[str]) -> None:
    errors: list[str] = []

    async def scenario() -> None:
        async with kept(acp_command, "counter", RecordingClient(), tmp_path / "s.db") as conn:
            with pytest.raises(RequestError) as refused:
                await conn.load_session(cwd="/w", session_id="nope")
            errors.append(str(refused.value.data))

    on_asyncio(scenario)
    assert "no such session" in errors[0] and "session/list" in errors[0]


def test_two_editors_on_one_store_never_run_one_session_at_once(
    tmp_path: Path, acp_command: list[str]
) -> None:
    store = tmp_path / "sessions.db"
    first, second = RecordingClient(), RecordingClient()
    outcome: dict[str, Any] = {}

    async def scenario() -> None:
        first.tool_running = anyio.Event()
        async with (
            kept(acp_command, "slow", first, store) as one,
            kept(acp_command, "slow", second, store) as two,
        ):
            session = await one.new_session(cwd="/w")
            session_id = session.session_id
            async with anyio.create_task_group() as tg:

                async def hold() -> None:
                    outcome["first"] = await prompt(one, session_id, "go")

                tg.start_soon(hold)
                await first.tool_running.wait()
                await two.load_session(cwd="/w", session_id=session_id)
                with pytest.raises(RequestError) as refused:
                    await prompt(two, session_id, "me too")
                outcome["refused"] = str(refused.value.data)
                await one.cancel(session_id=session_id)

    on_asyncio(scenario)
    assert outcome["first"] == "cancelled"
    assert "is busy" in outcome["refused"] and "another editor" in outcome["refused"]
