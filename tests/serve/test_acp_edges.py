"""`raf acp` at its edges: malformed lines, a question dismissed or cancelled, an empty prompt,
a failed turn's plan and tool calls, a bad `--store` path."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentPlanUpdate,
    DeniedOutcome,
    RequestPermissionResponse,
    ToolCallProgress,
)

from raf.cli.main import main
from raf.serve.acp.lines import MAX_LINE_BYTES
from tests.cli.support import ROOT
from tests.serve.acp_support import (
    RecordingClient,
    SharedServers,
    acp_command,
    acp_servers,
    prompt,
    run_acp,
)

__all__ = ["acp_command", "acp_servers"]

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL_VERSION},
}


def test_lines_that_are_not_a_json_object_get_errors_and_the_server_goes_on(
    acp_command: list[str],
) -> None:
    bad = [b"[]", b"null", b'"s"', b"42", b'[{"jsonrpc": "2.0", "id": 7}]', b"garbage{"]
    sent = b"\n".join([*bad, json.dumps(_INITIALIZE).encode()]) + b"\n"
    done = run_acp(acp_command, "tests.cli.targets:counter", sent=sent)
    assert done.returncode == 0, done.stderr  # the input ended: the server stops
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    codes = [r["error"]["code"] for r in replies[:-1]]
    assert codes == [-32600, -32600, -32600, -32600, -32600, -32700]
    assert all(r["id"] is None for r in replies[:-1])
    assert "batch" in replies[0]["error"]["data"]["details"]
    assert replies[-1]["id"] == 1 and replies[-1]["result"]["agentInfo"]["name"] == "raf"


def test_a_line_over_the_bound_is_answered_with_its_id_and_the_server_goes_on(
    acp_command: list[str],
) -> None:
    huge = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "session/prompt",
        "params": {"prompt": [{"type": "text", "text": "x" * (MAX_LINE_BYTES + 10)}]},
    }
    after = {**_INITIALIZE, "id": 6}
    lines = [_INITIALIZE, huge, after]
    sent = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    done = run_acp(acp_command, "tests.cli.targets:counter", sent=sent)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [r["id"] for r in replies] == [1, 5, 6]
    assert replies[1]["error"]["code"] == -32600
    assert "longer than" in replies[1]["error"]["data"]["details"]


def test_a_prompt_with_a_long_embedded_file_is_answered(acp_servers: SharedServers) -> None:
    client = RecordingClient()
    stops: list[str] = []

    async def scenario(conn: ClientSideConnection, session_id: str) -> None:
        # ~100 KB on one line: more than a stream's default buffer of 64 KiB.
        stops.append(await prompt(conn, session_id, "look at this: " + "y" * 100_000))

    acp_servers.run("counter", client, scenario)
    assert stops == ["end_turn"]


def test_a_dismissed_question_is_asked_again_and_the_prompt_runs_after_it(
    acp_servers: SharedServers,
) -> None:
    client = RecordingClient(choose=None)
    reasons: list[str] = []

    async def scenario(conn: ClientSideConnection, session_id: str) -> None:
        reasons.append(await prompt(conn, session_id, "cats"))
        reasons.append(await prompt(conn, session_id, "dogs"))  # dismissed again
        client.choose = "approve"
        reasons.append(await prompt(conn, session_id, "dogs"))

    acp_servers.run("approval", client, scenario)
    assert reasons == ["cancelled", "cancelled", "end_turn"]
    text = client.text()
    assert "is still open, so the prompt was not sent" in text
    assert "**review**: draft on cats: approve" in text  # never "draft on cats: dogs"
    assert text.endswith("**review**: draft on dogs: approve")
    assert "cats: dogs" not in text
    assert len(client.asked) == 4  # cats, cats again, cats a third time, then dogs


def test_a_prompt_naming_a_choice_answers_a_dismissed_question(acp_servers: SharedServers) -> None:
    client = RecordingClient(choose=None)
    reasons: list[str] = []

    async def scenario(conn: ClientSideConnection, session_id: str) -> None:
        reasons.append(await prompt(conn, session_id, "cats"))
        reasons.append(await prompt(conn, session_id, "Reject"))

    acp_servers.run("approval", client, scenario)
    assert reasons == ["cancelled", "end_turn"]
    assert client.text().endswith("**review**: draft on cats: reject")
    assert len(client.asked) == 1


def test_an_empty_prompt_is_refused(acp_servers: SharedServers) -> None:
    client = RecordingClient()
    errors: list[RequestError] = []

    async def scenario(conn: ClientSideConnection, session_id: str) -> None:
        try:
            await conn.prompt(session_id=session_id, prompt=[text_block("  ")])
        except RequestError as exc:
            errors.append(exc)
        assert await prompt(conn, session_id, "hi") == "end_turn"

    acp_servers.run("counter", client, scenario)
    [error] = errors
    assert error.code == -32602 and "no text" in json.dumps(error.data)


def test_a_failed_turn_leaves_no_plan_entry_running(acp_servers: SharedServers) -> None:
    client = RecordingClient()
    errors: list[RequestError] = []

    async def scenario(conn: ClientSideConnection, session_id: str) -> None:
        try:
            await prompt(conn, session_id, "hi")
        except RequestError as exc:
            errors.append(exc)

    acp_servers.run("failing", client, scenario)
    assert errors and "WorkflowError" in str(errors[0])
    plans = [u for u in client.updates if isinstance(u, AgentPlanUpdate)]
    assert plans and all(e.status != "in_progress" for e in plans[-1].entries)
    running = [u for u in client.updates if isinstance(u, ToolCallProgress)]
    assert all(u.status != "in_progress" for u in running[-1:])


_BAD_STORES = [
    ("no/such/dir/s.db", "no directory"),
    (".", "is a directory"),
    ("pyproject.toml", "cannot be used as a SQLite store"),
]


def test_a_bad_store_path_fails_at_start_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, acp_command: list[str]
) -> None:
    # The exit status and stderr of the `raf acp` process itself (forked: a few ms a start)...
    for where, said in _BAD_STORES:
        done = run_acp(acp_command, "tests.cli.targets:counter", "--store", where)
        assert done.returncode == 2 and done.stdout == b""
        [line] = done.stderr.decode().splitlines()
        assert line.startswith("raf acp: --store") and said in line
    # ...and of the same `raf` entry point in process.
    monkeypatch.chdir(ROOT)
    for where, said in _BAD_STORES:
        status = main(["acp", "tests.cli.targets:counter", "--store", where])
        captured = capsys.readouterr()
        assert status == 2 and captured.out == ""
        [line] = captured.err.splitlines()
        assert line.startswith("raf acp: --store") and said in line


@pytest.mark.anyio
async def test_sessions_are_kept_in_the_store_and_only_running_turns_in_memory() -> None:
    from raf import FunctionAgent
    from raf.serve.acp.server import AcpServer

    class Quiet:
        async def session_update(self, session_id: str, update: object, **kwargs: object) -> None:
            pass

    server = AcpServer(FunctionAgent("echo", lambda m: m[-1].text))
    server.on_connect(Quiet())  # pyright: ignore[reportArgumentType]
    ids = [(await server.new_session(cwd="/w")).session_id for _ in range(20)]
    for session_id in ids:
        reply = await server.prompt(session_id, [text_block("hi")])
        assert reply.stop_reason == "end_turn"
    assert server._turns == {}  # pyright: ignore[reportPrivateUsage]
    assert len((await server.list_sessions()).sessions) == 20
    with pytest.raises(RequestError, match="Invalid params"):
        await server.prompt("never-made", [text_block("hi")])


def test_a_question_cancelled_while_asked_is_asked_again_by_the_next_prompt(
    acp_servers: SharedServers,
) -> None:
    reasons: list[str] = []

    class Hesitant(RecordingClient):
        """Leaves the first question unanswered until the turn is cancelled."""

        ready: Any = None
        released: Any = None

        async def request_permission(
            self, session_id: str, tool_call: Any, options: Any, **kw: Any
        ) -> Any:
            if not self.asked:
                self.asked.append((tool_call, options))
                assert self.released is not None
                self.ready.set()
                await self.released.wait()
                return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
            return await super().request_permission(session_id, tool_call, options, **kw)

    client = Hesitant(choose="approve")

    async def scenario(conn: ClientSideConnection, session_id: str) -> None:
        client.ready = anyio.Event()
        client.released = anyio.Event()
        async with anyio.create_task_group() as group:

            async def first() -> None:
                reasons.append(await prompt(conn, session_id, "cats"))

            group.start_soon(first)
            await client.ready.wait()
            await conn.cancel(session_id=session_id)
        client.released.set()
        reasons.append(await prompt(conn, session_id, "dogs"))

    acp_servers.run("approval", client, scenario)
    assert reasons == ["cancelled", "end_turn"]
    text = client.text()
    assert "**review**: draft on cats: approve" in text and "cats: dogs" not in text
    assert text.endswith("**review**: draft on dogs: approve")
    assert len(client.asked) == 3  # cats (cancelled), cats again, dogs
