"""Recovery of a node step that asks several agents at once: a vote killed mid-poll.

The voters of a vote are asked in one node step; each makes three model calls and two tool
calls. The first worker's model answers `ann` slowly and `bob` at once, the recovering
worker's the other way round; the first worker dies inside `ann`'s tool call. The recovered
run ends with the same ballots, each voter's where it belongs, and makes no completed model
call again.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from raf.messages import ChatMessage
from raf.testing import ScriptedOpenAIServer, text, tool_calls
from raf.testing.script import Script, Turn
from tests.durable.vote_worker import VOTERS, prompt
from tests.forkserver import command

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

RUN_ID = "panel:vote:0"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the test drives processes; the workers are asyncio (DBOS is)


def voters_script(slow: str) -> Script:
    """Each voter thinks twice, then votes tea with its name as rationale; `slow`'s first
    answer comes late (so the other voter's calls start before its next one, when voters
    run at once)."""

    def script(messages: list[ChatMessage]) -> Turn:
        voter = next(v for v in VOTERS if messages[0].text == prompt(v))
        rounds = sum(1 for m in messages if m.role == "assistant")
        if rounds < 2:
            delay = 1.0 if voter == slow and rounds == 0 else 0.0
            call = ("think", {"voter": voter}, f"call_{voter}_{rounds}")
            return tool_calls(call, delay=delay)
        return text(json.dumps({"choice": "tea", "rationale": voter}))

    return script


async def worker(
    forks: str, db: str, base_url: str, mode: str, tmp: Path, *extra: str
) -> tuple[int, Any]:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    argv = [*command(forks, "tests.durable.vote_worker"), db, base_url, RUN_ID, mode]
    argv += ["--effects", str(tmp / "effects.txt"), *extra]
    done = await anyio.run_process(argv, env=env, check=False, cwd=os.getcwd())
    if done.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(done.stderr.decode()[-3000:])
    lines = [json.loads(x) for x in done.stdout.decode().splitlines() if x.startswith("{")]
    return done.returncode, lines[-1]["result"] if lines else None


def requests_of(server: ScriptedOpenAIServer) -> list[str]:
    return [json.dumps([m.model_dump() for m in r.messages]) for r in server.requests]


async def test_a_vote_killed_mid_poll_recovers_though_its_voters_finish_in_another_order(
    forkserver: str, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    async with ScriptedOpenAIServer(voters_script(slow="ann")) as first:
        code, _ = await worker(forkserver, db, first.base_url, "start", tmp_path, "--die-in", "ann")
        assert code == -signal.SIGKILL
    async with ScriptedOpenAIServer(voters_script(slow="bob")) as second:
        code, result = await worker(forkserver, db, second.base_url, "restart", tmp_path)
        assert code == 0
    vote = result["response"]["value"]
    assert vote["errors"] == {}  # before: a voter failed DBOS's replay check and abstained
    assert vote["winner"] == "tea"
    assert {v: b["rationale"] for v, b in vote["ballots"].items()} == {v: v for v in VOTERS}
    # Each voter's two calls were made once, over both workers: none made again.
    requests = requests_of(first) + requests_of(second)
    assert len(requests) == 6 and len(set(requests)) == 6
    # The idempotent tool call the worker died in ran again; the other ran once.
    effects = (tmp_path / "effects.txt").read_text().splitlines()
    assert sorted(effects) == ["think:ann"] * 3 + ["think:bob"] * 2
