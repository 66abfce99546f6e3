"""Run the `raf` script of this environment in a subprocess, offline: in a fresh interpreter
(`raf`), or forked from one that imported raf already (the `raf` fixture, tests/cli/conftest.py,
through `tests.forkserver`: the same script, ~0.5 CPU-s less a command)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RAF = str(Path(sys.executable).parent / "raf")
TIMEOUT = 30
"""Seconds any one command may take on a busy machine."""


def offline_env() -> dict[str, str]:
    """This environment without an OpenAI endpoint, with a wide, colourless terminal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(COLUMNS="120", NO_COLOR="1", PYTHONUNBUFFERED="1")
    return env


@dataclass(frozen=True)
class Done:
    status: int
    out: str
    err: str


def raf(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, via: list[str] | None = None
) -> Done:
    """`raf ARGS...` run to the end (offline, with `env` added to the environment); `via`,
    the argv that runs the script (`tests.forkserver.script`), else a fresh interpreter.

    Synchronous: the command is the whole test, and a test that only runs commands has no
    event loop of its own to run on asyncio and on trio."""
    result = subprocess.run(
        [*(via or [RAF]), *args],
        cwd=cwd,
        env=offline_env() | (env or {}),
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    return Done(result.returncode, result.stdout.decode(), result.stderr.decode())


RafCommand = Callable[..., Done]
"""`raf` with its `via` given: what the `raf` fixture is."""
