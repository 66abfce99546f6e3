"""Recovery for real: worker processes SIGKILLed mid-run, the run finished by another.

Each worker kills itself with SIGKILL at a chosen point (a token of a model call's stream, a
completed message between steps, inside a tool call after its effect, while the run waits
for a human), so the tests know where it died without sleeping. The scripted model server
counts requests: only the call in flight at the kill is made again, and the final response
and session equal those of an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import random
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from raf.messages import ChatMessage
from raf.testing import ScriptedOpenAIServer, text, tool_calls
from raf.testing.script import Turn
from tests.durable.worker import RESEARCHER
from tests.forkserver import command

# Two or three worker processes per test, each importing raf and launching DBOS.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

RUN_ID = "team:recovery:0"
WRITER_TEXT = "It is sunny today and Bob has been told so by mail, as you asked this morning."


def script(messages: list[ChatMessage]) -> Turn:
    """The turn for a request, by agent and by its own rounds so far (repeats get the same)."""
    rounds = sum(1 for m in messages if m.role == "assistant")
    if messages[0].text == RESEARCHER:
        return [
            tool_calls(("lookup", {"q": "weather"})),
            tool_calls(("send_mail", {"to": "bob", "body": "sunny"})),
            text("Bob is told it is sunny."),
        ][rounds]
    return text(WRITER_TEXT)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the test drives processes; the workers are asyncio (DBOS is)


async def worker(
    server: str, db: str, base_url: str, executor: str, mode: str, tmp: Path, *extra: str
) -> tuple[int, list[dict[str, Any]]]:
    """Run one worker (forked from `server`) to its end; its return code and the JSON lines
    it printed."""
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    argv = [*command(server, "tests.durable.worker"), db, base_url, executor, RUN_ID, mode]
    argv += ["--effects", str(tmp / "effects.txt"), *extra]
    done = await anyio.run_process(argv, env=env, check=False, cwd=os.getcwd())
    lines = [json.loads(x) for x in done.stdout.decode().splitlines() if x.startswith("{")]
    if done.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(done.stderr.decode()[-3000:])
    return done.returncode, lines


def requests_of(server: ScriptedOpenAIServer) -> list[str]:
    return [json.dumps([m.model_dump() for m in r.messages]) for r in server.requests]


async def uninterrupted(forks: str, db: str, tmp: Path) -> tuple[dict[str, Any], list[str]]:
    async with ScriptedOpenAIServer(script) as server:
        extra = ["--answer", "ok"]
        code, lines = await worker(forks, db, server.base_url, "solo", "start", tmp, *extra)
        assert code == 0
        return lines[-1]["result"], requests_of(server)


def same_run(result: dict[str, Any], baseline: dict[str, Any]) -> None:
    assert result["response"] == baseline["response"]
    assert json.loads(result["session"])["state"] == json.loads(baseline["session"])["state"]


async def recover(forks: str, db: str, tmp: Path, die_at: str, survivor_mode: str, *answers: str):
    async with ScriptedOpenAIServer(script) as server:
        extra = ["--die-at", die_at, "--answer", "ok"]
        code, _ = await worker(forks, db, server.base_url, "a", "start", tmp, *extra)
        assert code == -signal.SIGKILL
        before = len(server.requests)
        more = [a for answer in answers for a in ("--answer", answer)]
        executor = "a" if survivor_mode == "restart" else "b"
        code, lines = await worker(forks, db, server.base_url, executor, survivor_mode, tmp, *more)
        assert code == 0, lines
        return lines, requests_of(server), before


KILL_POINTS = ["token:3", "token:12", "completed:1", "completed:3", "tool:lookup", "waiting"]


_BASELINE: dict[str, Any] = {}


async def baseline(forks: str, tmp: Path) -> tuple[dict[str, Any], list[str]]:
    """The uninterrupted run's result and requests (computed once: it is deterministic)."""
    if not _BASELINE:
        (tmp / "baseline").mkdir()
        db = f"sqlite:///{tmp / 'baseline' / 'dbos.sqlite'}"
        result, requests = _BASELINE["run"] = await uninterrupted(forks, db, tmp / "baseline")
        assert result["response"]["status"] == "completed"
        assert result["response"]["messages"][-1]["contents"][0]["text"] == WRITER_TEXT
        assert len(requests) == 4  # lookup, send_mail, the researcher's answer, the writer
        effects = (tmp / "baseline" / "effects.txt").read_text()
        assert effects == "lookup:weather\nbob:sunny\n"
    return _BASELINE["run"]


def check_recovered(
    result: dict[str, Any], requests: list[str], base: tuple[dict[str, Any], list[str]], tmp: Path
) -> None:
    """Same response and session; the requests are the baseline's, at most the one in flight
    at the kill made twice; the mail went out once."""
    same_run(result, base[0])
    extra = list(requests)
    for request in base[1]:
        extra.remove(request)  # every baseline call was made
    assert len(extra) <= 1 and set(extra) <= set(base[1])
    assert (tmp / "effects.txt").read_text().count("bob:sunny") == 1


# One point per run of the suite, drawn from RAF_TEST_SEED (say it to replay a failure).
@pytest.mark.parametrize(
    "die_at", [random.Random(int(os.environ.get("RAF_TEST_SEED", "1"))).choice(KILL_POINTS)]
)
async def test_a_restarted_worker_finishes_the_run_on_sqlite(
    forkserver: str, tmp_path: Path, die_at: str
) -> None:
    base = await baseline(forkserver, tmp_path)
    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    lines, requests, _ = await recover(forkserver, db, tmp_path, die_at, "restart", "ok")
    check_recovered(lines[-1]["result"], requests, base, tmp_path)


@pytest.mark.parametrize(
    ("die_at", "answers"),
    [
        ("waiting", ["ok"]),
        ("tool:send_mail", ["skip: sent", "ok"]),
    ],
)
async def test_another_worker_finishes_the_run_on_postgres(
    forkserver: str, tmp_path: Path, postgres_db: str, die_at: str, answers: list[str]
) -> None:
    base = await baseline(forkserver, tmp_path)
    lines, requests, _ = await recover(
        forkserver, postgres_db, tmp_path, die_at, "resume", *answers
    )
    check_recovered(lines[-1]["result"], requests, base, tmp_path)


async def test_a_call_in_doubt_goes_to_a_human_and_is_not_repeated(
    forkserver: str, tmp_path: Path
) -> None:
    """The worker dies inside `send_mail` after the mail went out: on recovery the call is in
    doubt; the human says it was sent, and no second mail goes out."""
    base = await baseline(forkserver, tmp_path)
    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    lines, requests, _ = await recover(
        forkserver, db, tmp_path, "tool:send_mail", "restart", "skip: sent", "ok"
    )
    check_recovered(lines[-1]["result"], requests, base, tmp_path)
    asked = [line["asked"] for line in lines if "asked" in line]
    assert [a[0].get("kind") for a in asked] == ["tool_in_doubt", None]
    assert asked[0][0]["tool"] == "send_mail"


async def test_an_idempotent_call_in_doubt_runs_again(forkserver: str, tmp_path: Path) -> None:
    base = await baseline(forkserver, tmp_path)
    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    lines, requests, _ = await recover(forkserver, db, tmp_path, "tool:lookup", "restart", "ok")
    check_recovered(lines[-1]["result"], requests, base, tmp_path)
    assert (tmp_path / "effects.txt").read_text().count("lookup:weather") == 2
