"""`raf runs`: list, show, answer and cancel durable runs from the command line."""

from __future__ import annotations

from functools import partial

import anyio.to_thread
import pytest

pytest.importorskip("dbos")

from pathlib import Path

from dbos import DBOS, DBOSClient

from raf import Session
from raf.agent import IAgent
from raf.cli.main import main
from raf.cli.runs import durable_serving
from raf.durable import DurableAgent
from tests.durable.conftest import dbos_sqlite  # noqa: F401
from tests.durable.test_agent import approval

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # DBOS is asyncio-only


async def raf(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert await anyio.to_thread.run_sync(partial(main, list(argv))) == 0
    return capsys.readouterr().out


async def test_runs_lists_shows_answers_and_cancels(
    dbos_sqlite: str,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    durable = DurableAgent(approval())
    DBOS.launch()
    assert (await durable.run("go", Session(id="a"))).status == "waiting"
    assert (await durable.run("go", Session(id="b"))).status == "waiting"
    listed = await raf(capsys, "runs", "list", "--dbos", dbos_sqlite)
    assert "flow:a:0\tPENDING\tflow" in listed and "flow:b:0\tPENDING\tflow" in listed
    shown = await raf(capsys, "runs", "show", "flow:a:0", "--dbos", dbos_sqlite)
    assert 'waiting: flow/review@1#0: {"draft": "draft"}' in shown
    nodes = sorted(line.split("\t")[0] for line in shown.splitlines() if "node step" in line)
    # (The review's step may still be ending: it reports its result, then its status.)
    assert nodes == ["  node step flow:a:0/flow/review@1#0", "  node step flow:a:0/flow/writer@0#0"]
    assert "  node step flow:a:0/flow/writer@0#0\tSUCCESS\tlocal" in shown.splitlines()
    items = [line for line in shown.splitlines() if line.startswith("{")]
    await raf(capsys, "runs", "answer", "flow:a:0", "ship it", "--dbos", dbos_sqlite)
    response = await durable.attach("flow:a:0", offset=len(items))
    assert response.text == "published after Reviewer: ship it"
    await raf(capsys, "runs", "cancel", "flow:b:0", "--dbos", dbos_sqlite)
    listed = await raf(capsys, "runs", "list", "--dbos", dbos_sqlite)
    assert "flow:a:0\tSUCCESS" in listed and "flow:b:0\tCANCELLED" in listed


def test_runs_says_where_the_runs_are(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "list"]) == 2
    assert "--dbos sqlite:///runs.sqlite" in capsys.readouterr().err


async def test_serving_with_dbos_serves_the_agent_durably(tmp_path: Path) -> None:
    served: list[IAgent] = []

    async def serve(agent: IAgent) -> None:
        served.append(agent)
        assert (await agent.run("go", Session(id="s"))).status == "waiting"

    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    await durable_serving(approval(), url, serve)()
    assert isinstance(served[0], DurableAgent)
    client = DBOSClient(system_database_url=url)
    try:
        runs = [w.workflow_id for w in client.list_workflows() if w.name.startswith("raf.run:")]
        assert runs == ["flow:s:0"]
    finally:
        client.destroy()


async def test_serving_without_dbos_serves_the_agent_as_it_is() -> None:
    agent = approval()
    served: list[IAgent] = []

    async def serve(given: IAgent) -> None:
        served.append(given)

    await durable_serving(agent, None, serve)()
    assert served == [agent]
