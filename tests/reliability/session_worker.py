"""A worker process running one turn of an agent on a shared session, for the tests of
`test_workers.py`.

    python -m tests.reliability.session_worker STORE SESSION NAME MODE LOG BACKEND

STORE is `sqlite:PATH` or `postgres:DSN#SCHEMA`. The agent appends `NAME:start` to LOG when its
turn begins and `NAME:end` when it ends. MODE:
- `hold`: prints `HOLDING` once the turn began, then waits for a line on stdin before ending;
- `reject`: prints `BUSY <session id>` and exits 3 when another run holds the session;
- `wait`: queues behind the run that holds the session (`on_busy="wait"`), printing `ASKING`
  first.
Every mode prints `DONE` after its turn.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from anyio import to_thread

from raf import FunctionAgent, RunOptions, Session, SessionBusy
from raf.messages import ChatMessage
from tests.reliability.processes import open_store


def say(line: str) -> None:
    print(line, flush=True)


async def main(spec: str, session_id: str, name: str, mode: str, log: Path) -> int:
    async def turn(messages: list[ChatMessage]) -> AsyncIterator[str]:
        with log.open("a") as file:
            file.write(f"{name}:start\n")
        if mode == "hold":
            say("HOLDING")
            await to_thread.run_sync(sys.stdin.readline)
        with log.open("a") as file:
            file.write(f"{name}:end\n")
        yield f"{name} did {messages[-1].text}"

    agent = FunctionAgent("worker", turn)
    options = RunOptions(on_busy="wait" if mode == "wait" else "reject")
    async with open_store(spec) as store:
        if mode == "wait":
            say("ASKING")
        try:
            await agent.run("work", Session(id=session_id, store=store), options).collect()
        except SessionBusy as busy:
            say(f"BUSY {busy.session_id}")
            return 3
    say("DONE")
    return 0


if __name__ == "__main__":
    store_spec, session, worker, how, log_file, backend = sys.argv[1:7]
    sys.exit(anyio.run(main, store_spec, session, worker, how, Path(log_file), backend=backend))
