"""Run the `raf` script of this environment in a subprocess, offline."""

from __future__ import annotations

import os
import subprocess
import sys
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


def raf(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> Done:
    """`raf ARGS...` run to the end (offline, with `env` added to the environment).

    Synchronous: the command is the whole test, and a test that only runs commands has no
    event loop of its own to run on asyncio and on trio."""
    result = subprocess.run(
        [RAF, *args],
        cwd=cwd,
        env=offline_env() | (env or {}),
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    return Done(result.returncode, result.stdout.decode(), result.stderr.decode())
