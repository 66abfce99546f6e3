"""Durable runs (`raf.durable`): what a step costs against the local mode, what a node step
costs, what a token would cost on the DBOS stream, and how long a run waits after its worker
dies.

Calls: a ReAct agent on the scripted model makes `--rounds` rounds of one model call and one
tool call, run locally and then as a DBOS workflow (each call a recorded step, each completed
item on the run's DBOS stream); the difference divided by the steps is the overhead per step.
Node steps: a sequential workflow of `--nodes` agents of one model call each, locally and
durably (each node a node step: a child workflow, its call a step in it, its result sent to
the run); the difference divided by the nodes is the overhead per node step, its model call
included. Tokens: the time of one `DBOS.write_stream` (what putting every token on the
durable stream would cost). Takeover: a worker process is SIGKILLed between steps while
another stands by; the run and its node step that was running are resumed at once
(`raf.durable.manage.resume_run`, DBOS `resume_workflow`); the time from the death to the
run asking its human on the standing worker (its remaining calls take a few milliseconds)
is how long the run waited for another worker.

    python -m bench.durable                     # SQLite
    python -m bench.durable --db postgres       # PostgreSQL (RAF_BENCH_POSTGRES_DSN)

Prints a table and writes `bench/results/durable-DB.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from dbos import DBOS

from raf import ReactAgent, SequentialBuilder, Session
from raf.agent import IAgent
from raf.durable import DurableAgent
from raf.testing import ScriptedProvider, text, tool_calls
from raf.tools import tool

_DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
RESULTS = Path(__file__).resolve().parent / "results"


def agent(rounds: int) -> ReactAgent[None]:
    @tool
    def echo(x: int) -> int:
        """Echo."""
        return x

    script = [tool_calls(("echo", {"x": i})) for i in range(rounds)] + [text("done")]
    return ReactAgent(
        "bench", ScriptedProvider(script * 1000), "Go.", tools=[echo], max_rounds=rounds + 1
    )


def chain(nodes: int) -> IAgent:
    """A sequential workflow of `nodes` agents, one model call each."""
    builder = SequentialBuilder(id="chain")
    for i in range(nodes):
        builder.add_agent(ReactAgent(f"n{i}", ScriptedProvider([text(f"{i}")] * 1000), "Go."))
    return builder.build().as_agent()


async def _timed(agent: IAgent, runs: int) -> float:
    """Seconds per run of `agent`, after one run to warm up."""
    await agent.run("go", Session())
    start = time.perf_counter()
    for _ in range(runs):
        await agent.run("go", Session())
    return (time.perf_counter() - start) / runs


def database(kind: str, tmp: Path) -> tuple[str, str | None]:
    """The system database URL, and the PostgreSQL database to drop afterwards."""
    if kind == "sqlite":
        return f"sqlite:///{tmp / 'dbos.sqlite'}", None
    name = f"raf_bench_{uuid.uuid4().hex[:10]}"
    base = os.environ.get("RAF_BENCH_POSTGRES_DSN", _DEFAULT_DSN).rsplit("/", 1)[0]
    return f"{base}/{name}", name


async def steps(db: str, rounds: int, nodes: int, runs: int) -> dict[str, float]:
    local_s = await _timed(agent(rounds), runs)
    local_chain_s = await _timed(chain(nodes), runs)
    DBOS(
        config={
            "name": "raf-bench",
            "system_database_url": db,
            # SQLite: node steps report to their run through a polled table (1 s by default).
            "notification_listener_polling_interval_sec": 0.05,
        }
    )
    durable = DurableAgent(agent(rounds))
    durable_chain = DurableAgent(chain(nodes))
    DBOS.launch()
    durable_s = await _timed(durable, runs)
    durable_chain_s = await _timed(durable_chain, runs)

    @DBOS.workflow(name="raf.bench.tokens")
    async def tokens(n: int) -> None:
        for i in range(n):
            await DBOS.write_stream_async("tokens", f"token {i}")

    n = 200
    start = time.perf_counter()
    await tokens(n)
    token_s = (time.perf_counter() - start) / n
    DBOS.destroy(destroy_registry=True)
    count = 2 * rounds + 1  # model calls and tool calls
    return {
        "local_run_ms": local_s * 1e3,
        "durable_run_ms": durable_s * 1e3,
        "steps_per_run": count,
        "overhead_per_step_ms": (durable_s - local_s) / count * 1e3,
        "local_chain_run_ms": local_chain_s * 1e3,
        "durable_chain_run_ms": durable_chain_s * 1e3,
        "overhead_per_node_step_ms": (durable_chain_s - local_chain_s) / nodes * 1e3,
        "stream_write_ms": token_s * 1e3,
    }


async def takeover(db: str, tmp: Path) -> float:
    """Seconds from a worker's death (its process reaped) until its run, resumed at once on a
    worker standing by, goes on there and asks its human (its remaining calls before that take
    a few milliseconds). Telling that the worker died is left out: DBOS Conductor, or whoever
    runs `raf runs resume`, decides it."""
    from dbos import DBOSClient

    from raf.durable.manage import resume_run
    from raf.testing import ScriptedOpenAIServer
    from tests.durable.test_recovery import RUN_ID, script

    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    async with ScriptedOpenAIServer(script) as server:
        argv = [sys.executable, "-m", "tests.durable.worker", db, server.base_url]
        effects = ["--effects", str(tmp / "effects.txt"), "--answer", "ok"]
        standing = await asyncio.create_subprocess_exec(
            *argv,
            "b",
            RUN_ID,
            "restart",
            *effects,
            env={**env, "RAF_WORKER_READY": "1"},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert standing.stdout is not None and standing.stdin is not None
        assert json.loads(await standing.stdout.readline()) == {"ready": True}
        first = await asyncio.create_subprocess_exec(
            *argv,
            "a",
            RUN_ID,
            "start",
            "--die-at",
            "completed:2",
            *effects,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        client = DBOSClient(system_database_url=db)
        assert await first.wait() == -signal.SIGKILL
        start = time.perf_counter()
        # The run and its node step that was running on the dead worker.
        await asyncio.to_thread(resume_run, client, RUN_ID)
        standing.stdin.write(b"follow\n")  # the run exists now: the standing worker reads it
        await standing.stdin.drain()
        line = await standing.stdout.readline()  # the run went on there: it asks its human
        elapsed = time.perf_counter() - start
        assert "asked" in json.loads(line), line
        line = await standing.stdout.readline()
        await standing.wait()
        client.destroy()
        assert "result" in json.loads(line), line
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    results: dict[str, Any] = {"db": args.db}
    with tempfile.TemporaryDirectory() as tmp:
        db, name = database(args.db, Path(tmp))
        # One event loop each: DBOS takes over the loop's default executor and shuts it down.
        results.update(asyncio.run(steps(db, args.rounds, args.nodes, args.runs)))
        db2, name2 = (
            database(args.db, Path(tmp) / "takeover")
            if args.db != "sqlite"
            else (f"sqlite:///{Path(tmp) / 'takeover.sqlite'}", None)
        )
        (Path(tmp) / "takeover").mkdir(exist_ok=True)
        results["takeover_s"] = asyncio.run(takeover(db2, Path(tmp) / "takeover"))
        for dropped in (name, name2):
            if dropped is not None:
                import psycopg

                admin = db.rsplit("/", 1)[0] + "/postgres"
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute(f"DROP DATABASE IF EXISTS {dropped} WITH (FORCE)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"durable-{args.db}.json").write_text(json.dumps(results, indent=2) + "\n")
    for key, value in results.items():
        print(f"{key:24} {value:.3f}" if isinstance(value, float) else f"{key:24} {value}")


if __name__ == "__main__":
    main()
