"""No failure ends a stream mute: a store that cannot open, a full disk, a damaged file, a model
that errors and raf raising each end the AG-UI stream with one `RUN_ERROR` (or `RUN_FINISHED`),
every step finished; the studio answers a failing store with 503, ACP with a JSON-RPC error.

The app runs in process (httpx2's ASGI transport), which raises whatever the app raises: a test
that gets its answer saw no "Exception in ASGI application". ACP's server is called as the SDK
calls it, which answers a `RequestError` with that request's JSON-RPC error.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block

from raf import FunctionAgent, IAgent
from raf.builders import SequentialBuilder
from raf.react import ReactAgent
from raf.serve import create_app
from raf.serve.acp.server import AcpServer
from raf.serve.store_failures import STORE_FAILED
from raf.serve.threads import Threads
from raf.stores import Checkpoint, SqliteCheckpointStore
from raf.testing.script import error, text
from raf.testing.scripted_provider import ScriptedProvider
from tests.serve.events import check_order, parse, types
from tests.serve.test_app import client, run
from tests.serve.test_studio_runs import serving
from tests.serve.trees import failing_team, run_input, user

pytestmark = pytest.mark.anyio

FULL = "database or disk is full"


class FullDisk(SqliteCheckpointStore):
    """A SQLite store on a disk that fills: while `full`, a save of a thread's turn (or, with
    `every_save`, any save) fails as SQLite fails on a full disk."""

    def __init__(self, path: Path, *, every_save: bool = False) -> None:
        super().__init__(path)
        self.full = True
        self.every_save = every_save

    async def save(self, checkpoint: Checkpoint) -> None:
        if self.full and self.every_save:
            raise sqlite3.OperationalError(FULL)
        await super().save(checkpoint)

    async def save_following(self, checkpoint: Checkpoint, follows: str | None) -> None:
        # A thread's turn is its session's fenced save.
        if self.full:
            raise sqlite3.OperationalError(FULL)
        await super().save_following(checkpoint, follows)


def team() -> IAgent:
    """Two steps, each a function agent saying how many messages it saw."""
    return (
        SequentialBuilder(id="team")
        .add_agent(FunctionAgent("first", lambda m: f"first saw {len(m)}"))
        .add_agent(FunctionAgent("second", lambda m: f"second saw {len(m)}"))
        .build()
        .as_agent()
    )


def ended_once(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The stream's terminal event, once the stream is checked: it is the last and only
    one, and every step that started finished."""
    check_order(events)
    terminal = [e for e in events if e["type"] in ("RUN_FINISHED", "RUN_ERROR")]
    assert terminal == [events[-1]], types(events)
    started = [e["stepName"] for e in events if e["type"] == "STEP_STARTED"]
    finished = [e["stepName"] for e in events if e["type"] == "STEP_FINISHED"]
    assert sorted(started) == sorted(finished), types(events)
    return events[-1]


def logged(caplog: pytest.LogCaptureFixture, *said: str) -> logging.LogRecord:
    """The `raf` logger's error record with a traceback whose message says each of `said`."""
    found = [
        r
        for r in caplog.records
        if r.name == "raf" and r.levelno == logging.ERROR and r.exc_info
        if all(s in r.getMessage() for s in said)
    ]
    assert found, [r.getMessage() for r in caplog.records]
    return found[0]


@pytest.fixture(params=["a directory at the path", "a path in a missing folder"])
def unopenable(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A path no SQLite store can open."""
    if request.param == "a directory at the path":
        (tmp_path / "threads.db").mkdir()
        return tmp_path / "threads.db"
    return tmp_path / "missing" / "threads.db"


@asynccontextmanager
async def unopened(path: Path) -> AsyncIterator[SqliteCheckpointStore]:
    """A store on `path` not opened yet (it opens on first use), closed after the block."""
    store = SqliteCheckpointStore(path)
    try:
        yield store
    finally:
        await store.aclose()


async def test_a_store_that_cannot_open_ends_the_stream_with_run_error(
    unopenable: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = unopenable
    async with unopened(path) as store, client(create_app(team(), store)) as http:
        events = await run(http, "team", run_input("t1", user("u1", "hello")))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    end = ended_once(events)
    assert end["code"] == STORE_FAILED
    said = end["message"]
    assert said.startswith("could not open thread 't1' in SqliteCheckpointStore(")
    assert str(path) in said and "folder" in said and "send the run again" in said
    assert "Traceback" not in said
    logged(caplog, "could not open thread 't1'", str(path))


async def test_the_studio_answers_a_store_that_cannot_open_with_503(
    unopenable: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = unopenable
    async with unopened(path) as store, client(create_app(team(), store)) as http:
        listed = await http.get("/studio/threads")
        checkpoints = await http.get("/studio/threads/t1/checkpoints")
        shown = await http.get("/studio/threads/t1/checkpoints/c1")
    for answer, doing in [
        (listed, "could not list the threads"),
        (checkpoints, "could not list the thread's checkpoints"),
        (shown, "could not read the checkpoint"),
    ]:
        assert answer.status_code == 503, answer.text
        detail = answer.json()["detail"]
        assert detail.startswith(doing) and str(path) in detail and "Traceback" not in detail
    logged(caplog, "studio GET /studio/threads:", str(path))


async def test_a_full_disk_on_the_final_save_ends_the_stream_with_run_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = user("u1", "hello")
    async with (
        FullDisk(tmp_path / "threads.db") as store,
        client(create_app(team(), store)) as http,
    ):
        failed = await run(http, "team", run_input("t1", first))
        store.full = False  # space freed: the same run again is a first turn
        again = await run(http, "team", run_input("t1", first))
        fresh = await run(http, "team", run_input("t2", user("u2", "hello")))
        kept = await Threads(store).open("t1")
    end = ended_once(failed)
    assert "STEP_FINISHED" in types(failed)  # the run went through, its save did not
    assert end["type"] == "RUN_ERROR" and end["code"] == STORE_FAILED
    said = end["message"]
    assert said.startswith("could not save thread 't1' in SqliteCheckpointStore(")
    assert str(tmp_path / "threads.db") in said and FULL in said
    assert "Free disk space" in said and "this turn is not kept" in said
    assert "Traceback" not in said
    logged(caplog, "could not save thread 't1'", FULL)
    assert ended_once(again)["type"] == "RUN_FINISHED"
    said_again = [e["delta"] for e in again if e["type"] == "TEXT_MESSAGE_CONTENT"]
    said_fresh = [e["delta"] for e in fresh if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert said_again == said_fresh  # the failed turn left no history behind
    assert "u1" in kept.seen


async def test_a_full_disk_during_the_run_ends_it_with_one_run_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FullDisk(tmp_path / "threads.db", every_save=True)
    async with store, client(create_app(team(), store)) as http:
        events = await run(http, "team", run_input("t1", user("u1", "hello")))
    end = ended_once(events)
    assert end["type"] == "RUN_ERROR" and end["code"] == STORE_FAILED
    assert FULL in end["message"] and "Traceback" not in end["message"]
    logged(caplog, "could not save thread 't1'", FULL)


async def test_a_damaged_file_ends_the_stream_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    async with SqliteCheckpointStore(path) as store, client(create_app(team(), store)) as http:
        for n in range(20):  # a file of several pages
            await run(http, "team", run_input(f"t{n}", user(f"u{n}", "hello " * 200)))
    with path.open("r+b") as file:  # cut short, as a disk that filled mid-copy leaves it
        file.truncate(path.stat().st_size // 2)
    async with unopened(path) as store, client(create_app(team(), store)) as http:
        events = await run(http, "team", run_input("t19", user("u20", "again")))
    end = ended_once(events)
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert end["code"] == STORE_FAILED
    assert str(path) in end["message"] and "Traceback" not in end["message"]


def broken_model() -> IAgent:
    """A sequence whose second agent's model answers 503."""
    planner = ReactAgent("planner", ScriptedProvider([text("A plan.")]), "Plan.")
    writer = ReactAgent(
        "writer", ScriptedProvider([error(503, "the model is overloaded")]), "Write."
    )
    return SequentialBuilder(id="desk").add_agent(planner).add_agent(writer).build().as_agent()


@pytest.mark.parametrize(
    ("agent", "said"),
    [
        (broken_model, "the model is overloaded"),
        (failing_team, "the model endpoint is down"),
    ],
    ids=["the model errors", "a function agent raises"],
)
async def test_a_failing_run_ends_with_one_run_error_and_its_thread_saved(
    tmp_path: Path, agent: Any, said: str
) -> None:
    served: IAgent = agent()
    async with (
        SqliteCheckpointStore(tmp_path / "threads.db") as store,
        client(create_app(served, store)) as http,
    ):
        events = await run(http, served.id, run_input("t1", user("u1", "hello")))
        kept = await Threads(store).open("t1")
    end = ended_once(events)
    assert end["type"] == "RUN_ERROR" and said in end["message"]
    assert "STEP_STARTED" in types(events)
    assert kept.runs == 1  # the failed turn was saved as a failed turn


class Quiet:
    """An ACP client that takes every session update and says nothing."""

    async def session_update(self, session_id: str, update: object, **kwargs: object) -> None:
        pass


def acp_server(store: SqliteCheckpointStore) -> AcpServer:
    server = AcpServer(FunctionAgent("echo", lambda m: m[-1].text), store)
    server.on_connect(Quiet())  # pyright: ignore[reportArgumentType]
    return server


async def test_an_acp_prompt_whose_save_fails_gets_an_error_and_the_server_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with FullDisk(tmp_path / "sessions.db") as store:
        server = acp_server(store)
        store.full = False
        session_id = (await server.new_session(cwd="/w")).session_id
        store.full = True
        with pytest.raises(RequestError) as failure:
            await server.prompt(session_id, [text_block("hi")])
        store.full = False  # space freed
        again = await server.prompt(session_id, [text_block("hi")])
        listed = await server.list_sessions()
    said = str(failure.value)
    assert failure.value.code == -32603
    assert failure.value.data == {"error": "OperationalError", "code": STORE_FAILED}
    assert said.startswith(f"could not save session {session_id!r} in SqliteCheckpointStore(")
    assert FULL in said and "Free disk space" in said and "this turn is not kept" in said
    logged(caplog, f"could not save session {session_id!r}", FULL)
    assert again.stop_reason == "end_turn"
    assert [s.session_id for s in listed.sessions] == [session_id]
    assert server._turns == {}  # pyright: ignore[reportPrivateUsage]


async def test_acp_requests_on_a_store_that_cannot_open_get_errors_naming_it(
    unopenable: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with unopened(unopenable) as store:
        server = acp_server(store)
        calls = {
            "could not create a session": lambda: server.new_session(cwd="/w"),
            "could not list the sessions": lambda: server.list_sessions(),
            "could not open session 's1'": lambda: server.prompt("s1", [text_block("hi")]),
            "could not open session 's2'": lambda: server.load_session(cwd="/w", session_id="s2"),
        }
        for doing, call in calls.items():
            with pytest.raises(RequestError) as failure:
                await call()
            said = str(failure.value)
            assert said.startswith(doing) and str(unopenable) in said, said
            assert (failure.value.data or {}).get("code") == STORE_FAILED
    logged(caplog, "could not create a session", str(unopenable))


async def test_a_studio_run_whose_save_fails_ends_with_run_error(tmp_path: Path) -> None:
    async with (
        FullDisk(tmp_path / "threads.db") as store,
        serving(create_app(team(), store)) as http,
    ):
        body = run_input("t1", user("u1", "hello"))
        started = await http.post("/studio/agents/team/runs", json=body)
        replay = await http.get(f"/studio/runs/{body['runId']}/events", params={"after": 0})
    events = parse(started.text)
    end = ended_once(events)
    assert end["type"] == "RUN_ERROR" and end["code"] == STORE_FAILED and FULL in end["message"]
    assert parse(replay.text) == events
