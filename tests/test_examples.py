"""Every example runs offline on the scripted model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXPECTED = {
    "sequential.py": "copy/editor",
    "concurrent.py": "verdicts: {'style'",
    "nested.py": "analysis/length/counter",
    "registry.py": "['newsroom/writing/polish']",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_offline(name: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [sys.executable, "-m", f"examples.{name.removesuffix('.py')}"],
        cwd=EXAMPLES.parent,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert EXPECTED[name] in done.stdout


def test_every_example_is_listed_and_tested() -> None:
    scripts = {p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(EXPECTED)
    readme = (EXAMPLES / "README.md").read_text()
    assert all(name in readme for name in scripts)
