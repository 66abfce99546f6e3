"""A session with a store resumes in any process by its id alone.

Each turn runs in a process of its own (`ask_worker.py`, forked from a server that made its
imports already): the first asks a human and exits; the next opens the session by its id,
lists what waits, and answers it. The first agent does not run again, and the second turn adds
only its own checkpoints.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.forkserver import command

ROOT = Path(__file__).resolve().parents[2]


def turn(server: str, spec: str, prompt: str, log: Path) -> list[dict[str, Any]]:
    """One turn in a new process: what it printed (what waited, then the response)."""
    argv = [*command(server, "tests.reliability.ask_worker"), spec, "s1", prompt, str(log)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_human_answers_in_a_new_process_and_nothing_runs_again(
    forkserver: str, store_spec: str, tmp_path: Path
) -> None:
    log = tmp_path / "drafts.log"
    before, asked = turn(forkserver, store_spec, "dogs", log)
    assert before == {"waiting": []}
    assert (asked["status"], asked["pending"]) == ("waiting", ["desk/review@1#0"])

    waiting, answered = turn(forkserver, store_spec, "yes", log)
    [request] = waiting["waiting"]
    assert request["request_id"] == "desk/review@1#0"
    assert request["question"] == "Publish it?"
    assert request["payload"] == {"question": "Publish it?", "draft": "draft on dogs"}
    assert (answered["status"], answered["text"]) == ("completed", "draft on dogs: yes")
    assert log.read_text().splitlines() == ["draft"]  # the first agent ran once
    # The answer resumed the run at `review`: two steps (review, publish), not the whole run.
    assert answered["checkpoints"] - asked["checkpoints"] == 2

    after, again = turn(forkserver, store_spec, "cats", log)
    assert after == {"waiting": []}
    assert again["status"] == "waiting"
    assert log.read_text().splitlines() == ["draft", "draft"]
