from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from raf.cli.main import main
from raf.cli.targets import as_agent, load_target


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OPENAI_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "120")


def test_demo_streams_the_nested_tree(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for agent_id in ("trip", "itinerary", "researcher", "planner", "logistics", "packer"):
        assert agent_id in out
    assert "find_sights ✓" in out and "forecast ✓" in out
    assert "tokens in the whole tree" in out
    assert "model: scripted, offline" in out


def test_tree_json_is_the_agent_tree(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tree", "examples.registry:build_newsroom", "--json"]) == 0
    tree = json.loads(capsys.readouterr().out)
    assert tree["id"] == "newsroom" and tree["kind"] == "concurrent"
    assert [c["id"] for c in tree["children"]] == ["writing", "check"]


def test_tree_is_drawn(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tree", "examples.registry:build_newsroom"]) == 0
    out = capsys.readouterr().out
    assert "newsroom (concurrent)" in out and "polish (function)" in out


@pytest.mark.parametrize(("fmt", "marker"), [("mermaid", "flowchart"), ("dot", "digraph")])
def test_graph_renders_a_workflow(
    fmt: str, marker: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", "examples.registry:build_newsroom", "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert marker in out and "dispatcher" in out and "aggregator" in out


def test_run_streams_a_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "examples.registry:build_newsroom", "hello"]) == 0
    out = capsys.readouterr().out
    assert "polished" in out and "checked" in out


def test_bad_targets_say_what_is_wrong() -> None:
    with pytest.raises(SystemExit, match="expected MODULE:ATTR"):
        load_target("examples.registry")
    with pytest.raises(SystemExit, match="has no attribute 'nope'"):
        load_target("examples.registry:nope")
    with pytest.raises(SystemExit, match="neither an IAgent nor a Workflow"):
        as_agent(42)


def test_a_file_may_share_its_name_with_a_standard_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "helpers_for_cli.py").write_text("PREFIX = 'both said'\n")
    target = tmp_path / "concurrent.py"
    target.write_text(
        "from helpers_for_cli import PREFIX\n"
        "from raf import ConcurrentBuilder, FunctionAgent\n"
        "agent = (\n"
        "    ConcurrentBuilder(id='pair')\n"
        "    .add_agent(FunctionAgent('a', lambda m: PREFIX + ' A'))\n"
        "    .add_agent(FunctionAgent('b', lambda m: 'B'))\n"
        "    .build()\n"
        ")\n"
    )
    assert main(["run", f"{target}:agent", "hi"]) == 0
    assert "both said A" in capsys.readouterr().out
    assert "concurrent.futures" in sys.modules  # the standard package is untouched


def test_a_failing_run_prints_the_error_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "failing.py"
    target.write_text(
        "from raf import FunctionAgent, SequentialBuilder\n"
        "def broken(messages):\n"
        "    raise RuntimeError('[bold]no[/bold] database')\n"
        "agent = SequentialBuilder(id='s').add_agent(FunctionAgent('b', broken)).build()\n"
    )
    assert main(["run", f"{target}:agent", "hi"]) == 1
    out = capsys.readouterr().out
    assert "WorkflowError: executor 'b' failed" in out and "(at 's')" in out
    assert "RuntimeError: [bold]no[/bold] database" in out
    assert "Traceback" not in out
