"""A checkpointed run killed with SIGKILL inside a tool call, resumed in a new process: the
call is in doubt. An idempotent tool runs again; any other becomes a request to a human, whose
answer (`rerun`, `skip` with a result, `fail`) does what it says. A call that ended before the
kill is never made again.

The run lives in `tool_crash_workflow.py`, in processes forked from a server that made their
imports already (`tests.forkserver`); each tool appends a line to a log file as its effect,
which counts effects across the processes.

The answers to the one in-doubt request start from the same stored state: the run killed in
`send` and resumed once. It is made once per store kind and backend in this module (its checks
run then), kept untouched, and each test answers a copy of its own: the SQLite file, or the
PostgreSQL tables copied into the test's own schema.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.forkserver import command, kill
from tests.reliability.processes import read_line

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]

REQUEST_ID = "mailer/mailer[mailer@1#0]#1:send.in-doubt"
"""The in-doubt request of the mailer's second call (index 1), `send`."""


class Child:
    """Runs `tool_crash_workflow` in new processes, forked from `server`, against one
    store."""

    def __init__(self, server: str, store: str, tool: str, tmp: Path, backend: str) -> None:
        self.server = server
        self.store = store
        self.tool = tool
        self.tmp = tmp
        self.backend = backend

    def command(self, mode: str, answer: str = "") -> list[str]:
        argv = [*command(self.server, "tests.reliability.tool_crash_workflow"), self.store]
        argv += [mode, self.tool, str(self.tmp / "effects.log"), str(self.tmp / "out.json")]
        return [*argv, self.backend, *([answer] if answer else [])]

    async def kill_in_tool(self) -> None:
        """Start the run and SIGKILL it inside the tool call, after its effect (the requester
        ends once the child is gone)."""
        with anyio.fail_after(30):
            process = await anyio.open_process(
                self.command("start"), cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
            async with process:
                line = await read_line(process)
                assert line == "AT tool", line
                kill(process)
                assert await process.wait() == -signal.SIGKILL

    async def resume(self, answer: Any = None) -> dict[str, Any]:
        """Resume the latest checkpoint (answering its request with `answer`, when given)."""
        if answer is None:
            command = self.command("resume")
        else:
            command = self.command("answer", json.dumps(answer))
        with anyio.fail_after(30):
            done = await anyio.run_process(command, cwd=ROOT, check=False)
        assert done.returncode == 0, done.stderr.decode()
        return json.loads((self.tmp / "out.json").read_text())

    def effects(self) -> list[str]:
        return (self.tmp / "effects.log").read_text().splitlines()


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'runs.db'}"
    dsn = request.getfixturevalue("postgres_dsn")
    schema = request.getfixturevalue("postgres_schema")
    return f"postgres:{dsn}#{schema}"


async def make_in_doubt(server: str, store: str, tmp: Path, backend: str) -> None:
    """A run killed inside `send`, resumed once: it waits on the in-doubt request."""
    child = Child(server, store, "send", tmp, backend)
    await child.kill_in_tool()
    assert child.effects() == ["note", "send"]
    waiting = await child.resume()
    assert waiting["status"] == "waiting"
    [(request_id, payload)] = waiting["requests"]
    assert request_id == REQUEST_ID
    assert payload["kind"] == "tool_in_doubt"
    assert payload["tool"] == "send"
    assert json.loads(payload["arguments"]) == {"to": "ann"}
    assert payload["choices"] == ["rerun", "skip", "fail"]
    # Neither the call in doubt nor the call that ended before the kill ran again.
    assert child.effects() == ["note", "send"]


def copy_schema(dsn: str, source: str, target: str) -> None:
    """The store's tables of PostgreSQL schema `source`, rows and all, made in `target`."""
    import psycopg
    from psycopg import sql

    from raf.stores._pg_sql import Queries

    with psycopg.connect(dsn, autocommit=True) as connection, connection.transaction():
        for statement in Queries(target).create:
            connection.execute(statement)
        tables = connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (source,)
        ).fetchall()
        assert tables, f"schema {source!r} has no table"
        for (table,) in tables:
            connection.execute(
                sql.SQL("INSERT INTO {} SELECT * FROM {}").format(
                    sql.Identifier(target, table), sql.Identifier(source, table)
                )
            )
        # The copied rows carry their `seq`: new events must number after them.
        connection.execute(
            sql.SQL("SELECT setval(pg_get_serial_sequence({}, 'seq'), max(seq)) FROM {}").format(
                sql.Literal(f'"{target}".events'), sql.Identifier(target, "events")
            )
        )


class InDoubtStates:
    """The in-doubt state per store kind and backend, each made once, copied for each test."""

    def __init__(self, server: str, root: Path) -> None:
        self.server = server
        self.root = root
        self.made: dict[tuple[str, str], tuple[str, Path]] = {}
        """(store kind, backend) -> the store spec of the untouched state and its directory
        (its effect log)."""
        self.schemas: list[tuple[str, str]] = []
        """The PostgreSQL (DSN, schema) of each state made, to drop at the end."""

    async def child(self, store: str, tmp: Path, backend: str) -> Child:
        """A `Child` on `store` and `tmp` holding a copy of the in-doubt state."""
        kind, _, where = store.partition(":")
        if (kind, backend) not in self.made:
            directory = Path(tempfile.mkdtemp(prefix=f"{kind}-{backend}-", dir=self.root))
            if kind == "sqlite":
                pristine = f"sqlite:{directory / 'runs.db'}"
            else:
                dsn, schema = where.partition("#")[0], f"raf_test_{uuid.uuid4().hex}"
                self.schemas.append((dsn, schema))
                pristine = f"postgres:{dsn}#{schema}"
            await make_in_doubt(self.server, pristine, directory, backend)
            self.made[kind, backend] = pristine, directory
        pristine, directory = self.made[kind, backend]
        shutil.copy(directory / "effects.log", tmp / "effects.log")
        if kind == "sqlite":
            for name in ("runs.db", "runs.db-wal"):
                if (directory / name).exists():
                    shutil.copy(directory / name, Path(where).with_name(name))
        else:
            dsn, _, schema = where.partition("#")
            copy_schema(dsn, pristine.partition("#")[2], schema)
        return Child(self.server, store, "send", tmp, backend)

    def drop_schemas(self) -> None:
        if not self.schemas:
            return
        import psycopg
        from psycopg import sql

        for dsn, schema in self.schemas:
            with psycopg.connect(dsn, autocommit=True) as connection:
                connection.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )


@pytest.fixture(scope="module")
def in_doubt_states(
    forkserver: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[InDoubtStates]:
    states = InDoubtStates(forkserver, tmp_path_factory.mktemp("in-doubt"))
    yield states
    states.drop_schemas()


async def test_a_call_in_doubt_asks_and_rerun_runs_it_again(
    store: str, tmp_path: Path, anyio_backend: str, in_doubt_states: InDoubtStates
) -> None:
    child = await in_doubt_states.child(store, tmp_path, anyio_backend)
    done = await child.resume("rerun")
    assert done["status"] == "completed", done
    assert done["answer"] == "done: sent to ann"
    assert child.effects() == ["note", "send", "send"]


async def test_skip_takes_the_given_result_without_running_the_tool(
    store: str, tmp_path: Path, anyio_backend: str, in_doubt_states: InDoubtStates
) -> None:
    child = await in_doubt_states.child(store, tmp_path, anyio_backend)
    done = await child.resume({"decision": "skip", "result": "sent by the crashed run"})
    assert done["status"] == "completed", done
    assert done["answer"] == "done: sent by the crashed run"
    assert child.effects() == ["note", "send"]


async def test_fail_fails_the_run_naming_the_tool(
    store: str, tmp_path: Path, anyio_backend: str, in_doubt_states: InDoubtStates
) -> None:
    child = await in_doubt_states.child(store, tmp_path, anyio_backend)
    done = await child.resume("fail")
    assert done["status"] == "failed"
    assert done["error"].startswith("ToolError: the call of tool 'send' was in doubt")
    assert child.effects() == ["note", "send"]


async def test_an_unclear_answer_asks_again(
    tmp_path: Path, anyio_backend: str, in_doubt_states: InDoubtStates
) -> None:
    store = f"sqlite:{tmp_path / 'runs.db'}"
    child = await in_doubt_states.child(store, tmp_path, anyio_backend)
    again = await child.resume("maybe")
    assert again["status"] == "waiting"
    [(request_id, payload)] = again["requests"]
    assert request_id == REQUEST_ID
    assert payload["unclear_answer"] == "maybe"
    done = await child.resume("skip: sent")
    assert done["answer"] == "done: sent"
    assert child.effects() == ["note", "send"]


async def test_an_idempotent_call_in_doubt_runs_again_without_asking(
    forkserver: str, store: str, tmp_path: Path, anyio_backend: str
) -> None:
    child = Child(forkserver, store, "fetch", tmp_path, anyio_backend)
    await child.kill_in_tool()
    done = await child.resume()
    assert done["status"] == "completed", done
    assert done["requests"] == []
    assert done["answer"] == "done: fetched example.org"
    # The note ended before the kill: its recorded result serves the re-run.
    assert child.effects() == ["note", "fetch", "fetch"]
