"""`raf run` through the script: the answer, `--json`, `--session`, a failed run."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import TypeAdapter

from raf.updates import AgentUpdate, RequestInfoUpdate, ToolCalled
from tests.cli.support import RafCommand

UPDATES = TypeAdapter[AgentUpdate](AgentUpdate)


def test_the_answer_follows_the_tree_one_line_per_agent(raf: RafCommand) -> None:
    done = raf("run", "tests.cli.targets:pair", "hi")
    assert done.status == 0, done.err
    tree, answer = done.out.split("first: one\n")
    assert "pair" in tree and "second" in tree
    assert answer == "second: two\n"


def test_an_output_schema_agent_answers_with_its_value_not_its_corrected_text(
    raf: RafCommand,
) -> None:
    done = raf("run", "tests.cli.targets:structured", "hi")
    assert done.status == 0, done.err
    answer = done.out[done.out.rindex("{") :]
    assert json.loads(answer) == {"title": "Cats"} and done.out.endswith("}\n")
    assert "a plain answer" not in done.out.split("└──")[-1].split("\n", 1)[1]


def test_json_prints_every_update_as_a_json_line(raf: RafCommand) -> None:
    done = raf("run", "tests.cli.targets:tools_and_thoughts", "hi", "--json")
    assert done.status == 0, done.err
    updates = [UPDATES.validate_json(line) for line in done.out.splitlines()]
    assert [u.model_dump(mode="json") for u in updates] == [
        json.loads(line) for line in done.out.splitlines()
    ]
    types = [u.type for u in updates]
    assert types[0] == "tool_call_start" and "reasoning_delta" in types
    assert [u.result for u in updates if isinstance(u, ToolCalled)] == ["HELLO"]
    assert "".join(u.text for u in updates if u.type == "text_delta") == "It said HELLO."


def test_a_session_file_continues_the_conversation(tmp_path: Path, raf: RafCommand) -> None:
    session = tmp_path / "chat.json"
    first = raf("run", "tests.cli.targets:counter", "hi", "--session", str(session))
    assert first.out.endswith("\n1 user messages\n")
    second = raf("run", "tests.cli.targets:counter", "again", "--session", str(session))
    assert second.out.endswith("\n2 user messages\n")
    fresh = raf("run", "tests.cli.targets:counter", "hi")
    assert fresh.out.endswith("\n1 user messages\n")


def test_the_next_prompt_answers_a_waiting_run_kept_in_the_session_file(
    tmp_path: Path,
    raf: RafCommand,
) -> None:
    session = tmp_path / "review.json"
    asked = raf("run", "tests.cli.targets:approval", "cats", "--session", str(session))
    assert asked.status == 0, asked.err
    assert "waiting for: approval/review@1#0" in asked.out
    hint = f'answer with: raf run tests.cli.targets:approval "YOUR ANSWER" --session {session}'
    assert hint in " ".join(asked.out.split())
    answered = raf("run", "tests.cli.targets:approval", "approve", "--session", str(session))
    assert answered.status == 0, answered.err
    assert answered.out.endswith("\ndraft on cats: approve\n")
    assert "waiting" not in answered.out


def test_a_session_of_a_store_is_answered_by_its_id_in_the_next_process(
    tmp_path: Path, raf: RafCommand
) -> None:
    store = str(tmp_path / "runs.db")
    kept = ("--session", "review-1", "--store", store)
    asked = raf("run", "tests.cli.targets:approval", "cats", *kept)
    assert asked.status == 0, asked.err
    hint = (
        'answer with: raf run tests.cli.targets:approval "YOUR ANSWER" '
        f"--session review-1 --store {store}"
    )
    assert hint in " ".join(asked.out.split())
    answered = raf("run", "tests.cli.targets:approval", "approve", *kept)
    assert answered.status == 0, answered.err
    assert answered.out.endswith("\ndraft on cats: approve\n")
    counted = raf("run", "tests.cli.targets:counter", "hi", "--session", "c", "--store", store)
    again = raf("run", "tests.cli.targets:counter", "again", "--session", "c", "--store", store)
    assert (counted.out[-17:], again.out[-17:]) == ("\n1 user messages\n", "\n2 user messages\n")


def test_a_store_without_a_session_or_a_bad_id_is_one_line(tmp_path: Path, raf: RafCommand) -> None:
    store = str(tmp_path / "runs.db")
    alone = raf("run", "tests.cli.targets:counter", "hi", "--store", store)
    reserved = raf("run", "tests.cli.targets:counter", "hi", "--session", "raf:x", "--store", store)
    assert (alone.status, reserved.status) == (2, 2)
    assert (
        alone.err.strip()
        == "raf run: --store keeps sessions: name the one to run with --session ID"
    )
    assert reserved.err.startswith("raf run: --session: session id 'raf:x' starts with 'raf:'")


def test_json_mode_keeps_stdout_for_updates_and_says_how_to_answer_on_stderr(
    tmp_path: Path,
    raf: RafCommand,
) -> None:
    session = tmp_path / "review.json"
    done = raf("run", "tests.cli.targets:approval", "cats", "--json", "--session", str(session))
    updates = [UPDATES.validate_json(line) for line in done.out.splitlines()]
    asks = [u for u in updates if isinstance(u, RequestInfoUpdate)]
    assert [a.request_id for a in asks] == ["approval/review@1#0"]
    assert "waiting for an answer to approval/review@1#0:" in done.err
    assert "answer with: raf run tests.cli.targets:approval" in done.err


def test_a_failed_run_exits_1_with_its_error_and_path_on_stderr_unwrapped(raf: RafCommand) -> None:
    done = raf("run", "tests.cli.targets:failing", "hi", env={"COLUMNS": "60"})
    assert done.status == 1
    [said] = [line for line in done.err.splitlines() if line.strip()]
    assert said.startswith("WorkflowError: executor 'b' failed") and "(at 's')" in said
    assert len(said) > 60  # piped: one whole line, not wrapped to the terminal's width
    assert "RuntimeError: [bold]no[/bold] database" in said
    assert "WorkflowError" not in done.out
    assert "Traceback" not in done.out + done.err
