"""What the worker processes of the durable tests share: DBOS set up, effects, dying, the
result line."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from dbos import DBOS


def configure_dbos(name: str, db: str, executor: str) -> None:
    """Set DBOS up for app `name` on the system database `db`, as worker `executor` (not yet
    launched), polling for notifications often (SQLite has none pushed)."""
    DBOS(
        config={
            "name": name,
            "system_database_url": db,
            "executor_id": executor,
            "notification_listener_polling_interval_sec": 0.01,
        }
    )


def effect(effects: Path, line: str, *, die: bool = False) -> None:
    """Write `line` to the effects file; then, with `die`, SIGKILL this process."""
    with effects.open("a") as f:
        f.write(line + "\n")
    if die:
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)


async def print_result(run_id: str) -> None:
    """Wait for run `run_id` to end, print its result as `{"result": ...}`, stop DBOS."""
    handle = await DBOS.retrieve_workflow_async(run_id)
    result = json.loads(await handle.get_result())
    print(json.dumps({"result": result}), flush=True)
    DBOS.destroy()
