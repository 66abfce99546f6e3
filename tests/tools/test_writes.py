"""Writes that cannot be lost, torn, or turned against the user: `raf/tools/_writes.py`."""

from __future__ import annotations

import doctest
import json
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

import raf.tools._writes
from raf.errors import ToolError
from raf.tools import ToolResult, Workspace
from raf.tools.cancellation import CallFlag, running_call

pytestmark = pytest.mark.anyio


async def _call(workspace: Workspace, name: str, **arguments: Any) -> ToolResult:
    tools = {t.name: t for t in workspace.tools()}
    return await tools[name].call(json.dumps(arguments))


def test_the_docstring_example_runs() -> None:
    assert doctest.testmod(raf.tools._writes).failed == 0


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/pre-commit", "sub/.HG/hgrc", ".svn"])
async def test_version_control_folders_are_not_written(tmp_path: Path, path: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    workspace = Workspace(tmp_path)
    written = await _call(workspace, "write_file", path=path, content="[core]\nfsmonitor = x\n")
    assert written.is_error and "version-control folder" in written.text
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert not (tmp_path / ".git" / "hooks").exists()
    patched = await _call(workspace, "patch_file", path=".git/config", old_text="[", new_text="x")
    assert patched.is_error and "version-control folder '.git'" in patched.text


async def test_a_link_into_git_is_refused_and_vcs_writable_allows_it(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "cfg").symlink_to(tmp_path / ".git")
    refused = await _call(Workspace(tmp_path), "write_file", path="cfg/config", content="x")
    assert refused.is_error and "version-control folder" in refused.text
    allowed = await _call(
        Workspace(tmp_path, vcs_writable=True), "write_file", path="cfg/config", content="x"
    )
    assert not allowed.is_error
    assert (tmp_path / ".git" / "config").read_text() == "x"


async def test_a_hard_linked_file_is_not_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    root = tmp_path / "root"
    root.mkdir()
    os.link(outside, root / "linked.txt")
    workspace = Workspace(root)
    written = await _call(workspace, "write_file", path="linked.txt", content="gone\n")
    assert written.is_error and "has 2 hard links" in written.text
    patched = await _call(workspace, "patch_file", path="linked.txt", old_text="keep", new_text="x")
    assert patched.is_error and "has 2 hard links" in patched.text
    assert outside.read_text() == "keep me\n"


async def test_concurrent_patches_of_one_file_are_all_kept(tmp_path: Path) -> None:
    count = 40
    (tmp_path / "list.txt").write_text("".join(f"item {n}: todo\n" for n in range(count)))
    workspace = Workspace(tmp_path)
    results: list[ToolResult] = []

    async def patch(n: int) -> None:
        edit = {"old_text": f"item {n}: todo", "new_text": f"item {n}: done"}
        results.append(await _call(workspace, "patch_file", path="list.txt", **edit))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            for n in range(count):
                group.start_soon(patch, n)
    assert [r.is_error for r in results] == [False] * count
    assert (tmp_path / "list.txt").read_text() == "".join(f"item {n}: done\n" for n in range(count))


async def test_a_write_replaces_the_file_whole_keeping_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_text("echo old\n")
    target.chmod(0o750)
    before = target.stat().st_ino
    result = await _call(Workspace(tmp_path), "write_file", path="run.sh", content="echo new\n")
    assert result == ToolResult("wrote 9 bytes to 'run.sh'")
    assert target.read_text() == "echo new\n"
    assert target.stat().st_ino != before  # a new file renamed into place, never half-written
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert os.listdir(tmp_path) == ["run.sh"]


def test_a_cancelled_write_changes_nothing_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old")
    flag = CallFlag()
    flag.cancel()
    with running_call(flag), pytest.raises(ToolError, match="cancelled"):
        Workspace(tmp_path).write_file("a.txt", "new")
    with running_call(flag), pytest.raises(ToolError, match="cancelled"):
        Workspace(tmp_path).patch_file("a.txt", "old", "new")
    assert [(p.name, p.read_text()) for p in tmp_path.iterdir()] == [("a.txt", "old")]
