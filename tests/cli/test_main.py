"""The `raf` command through its script: help, version, demo, tree, graph, mistakes, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from importlib import metadata

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

import raf as raf_package
from raf.cli.main import main
from tests.cli.support import RAF, ROOT, TIMEOUT, RafCommand, offline_env
from tests.cli.support import raf as fresh_raf
from tests.cli.targets import STARTED


def test_help_and_version() -> None:
    # In a fresh interpreter, as a user starts it (the other tests fork theirs).
    raf = fresh_raf
    done = raf("--help")
    assert done.status == 0
    for command in ("demo", "run", "tree", "graph", "acp"):
        assert command in done.out
    run_help = raf("run", "--help")
    assert "--session ID|FILE" in run_help.out and "--store PATH" in run_help.out
    version = raf("--version")
    assert version.out == f"raf {metadata.version('raf')}\n" == f"raf {raf_package.__version__}\n"


def test_raf_alone_prints_the_help_and_exits_2(raf: RafCommand) -> None:
    done = raf()
    assert done.status == 2 and done.out == ""
    assert done.err.startswith("usage: raf [-h] [--version] COMMAND ...")
    assert all(command in done.err for command in ("demo", "run", "tree", "graph", "acp"))


def test_demo_help_says_what_it_does_offline_and_what_it_reads(raf: RafCommand) -> None:
    done = raf("demo", "--help")
    assert done.status == 0
    said = " ".join(done.out.split())
    assert "a built-in scripted model answers" in said and "the city the prompt names" in said
    for variable in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "RAF_MODEL"):
        assert variable in said


def test_the_scripted_demo_plans_for_the_city_in_the_prompt(raf: RafCommand) -> None:
    done = raf("demo", "A weekend in Porto")
    assert done.status == 0, done.err
    assert '"city":"Porto"' in done.out and "Lisbon" not in done.out


def test_demo_streams_the_nested_tree_and_answers(raf: RafCommand) -> None:
    done = raf("demo")
    assert done.status == 0, done.err
    for agent_id in ("trip", "itinerary", "researcher", "planner", "logistics", "packer"):
        assert agent_id in done.out
    assert "find_sights ✓" in done.out and "forecast ✓" in done.out
    assert "planner: The estimate is about 240 EUR for 2 days." in done.out
    assert "tokens in the whole tree" in done.out
    assert "model: scripted, offline" in done.out


def test_tree_as_json_and_drawn(raf: RafCommand) -> None:
    done = raf("tree", "examples.registry:build_newsroom", "--json")
    tree = json.loads(done.out)
    assert tree["id"] == "newsroom" and tree["kind"] == "concurrent"
    assert [c["id"] for c in tree["children"]] == ["writing", "check"]
    drawn = raf("tree", "examples.registry:build_newsroom")
    assert "newsroom (concurrent)" in drawn.out and "polish (function)" in drawn.out


def test_graph_renders_a_workflow_as_mermaid_and_dot(raf: RafCommand) -> None:
    for fmt, marker in (("mermaid", "flowchart"), ("dot", "digraph")):
        done = raf("graph", "examples.registry:build_newsroom", "--format", fmt)
        assert done.status == 0
        assert marker in done.out and "dispatcher" in done.out and "aggregator" in done.out


def test_a_bad_target_or_a_factory_needing_arguments_is_one_line_and_status_2(
    raf: RafCommand,
) -> None:
    for args, says in (
        (("run", "examples.registry:nope", "hi"), "has no attribute 'nope'; it has build_newsroom"),
        (("run", "tests.cli.targets:needs_args", "hi"), "needs arguments (name); raf calls"),
    ):
        done = raf(*args)
        assert done.status == 2
        assert done.err.startswith("raf run: ") and says in done.err
        assert done.err.count("\n") == 1 and "Traceback" not in done.out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("run", "examples.registry", "hi"), "expected MODULE:ATTR"),
        (("run", "no_such_module:agent", "hi"), "no module 'no_such_module'; run raf from"),
        (("tree", "examples.registry:nope"), "has no attribute 'nope'; it has build_newsroom"),
        (("run", "missing.py:agent", "hi"), "no file 'missing.py'"),
        (("run", "tests.cli.targets:needs_args", "hi"), "needs arguments (name); raf calls"),
        (("run", "tests.cli.targets:broken", "hi"), "RuntimeError: the database is down"),
        (("run", "tests.cli.targets:no_key", "hi"), "no API key; set OPENAI_API_KEY"),
        (("run", "tests.cli.targets:STARTED", "hi"), "neither an IAgent nor a Workflow"),
        (("graph", "tests.cli.targets:slow"), "not a workflow; `raf graph` draws"),
        (
            ("run", "tests.cli.targets:pair", "hi", "--session", "pyproject.toml"),
            "not a raf session",
        ),
    ],
)
def test_every_mistake_is_one_line_and_status_2(
    args: tuple[str, ...],
    says: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [n for n in os.environ if n.startswith("OPENAI_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(ROOT)
    assert main(list(args)) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"raf {args[0]}: ") and says in captured.err
    assert captured.err.count("\n") == 1 and captured.out == ""


@pytest.mark.anyio
async def test_ctrl_c_cancels_a_run_at_once_despite_a_blocked_tool_thread() -> None:
    process = await anyio.open_process(
        [RAF, "run", "tests.cli.targets:slow", "go"],
        cwd=ROOT,
        env=offline_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    async with process:
        assert process.stdout is not None and process.stderr is not None
        lines = BufferedByteReceiveStream(process.stdout)
        with anyio.fail_after(TIMEOUT):
            while STARTED.encode() not in await lines.receive_until(b"\n", 65536):
                pass
        process.send_signal(signal.SIGINT)
        # The tool sleeps for a minute: the process must not wait for its thread. It exits
        # in a fraction of a second; the bound leaves room for a busy machine.
        with anyio.fail_after(5):
            status = await process.wait()
        err = (await process.stderr.receive()).decode()
    assert status == 130
    assert err == "raf run: cancelled\n"
