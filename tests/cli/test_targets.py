from __future__ import annotations

import sys
from pathlib import Path

import pytest

from raf.cli.targets import as_agent, load_target


def test_an_agent_a_workflow_and_a_factory_are_targets() -> None:
    assert as_agent(load_target("examples.registry:build_newsroom")).id == "newsroom"
    assert as_agent(load_target("tests.cli.targets:pair")).id == "pair"  # a Workflow
    with pytest.raises(SystemExit, match="neither an IAgent nor a Workflow"):
        as_agent(42)


def test_a_file_may_share_its_name_with_a_standard_module(tmp_path: Path) -> None:
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
    assert as_agent(load_target(f"{target}:agent")).id == "pair"
    assert "concurrent.futures" in sys.modules  # the standard package is untouched


def test_a_missing_dependency_of_the_module_is_named(tmp_path: Path) -> None:
    target = tmp_path / "needs_dep.py"
    target.write_text("import surely_not_installed_anywhere\n")
    with pytest.raises(SystemExit, match="no module 'surely_not_installed_anywhere'"):
        load_target(f"{target}:agent")
