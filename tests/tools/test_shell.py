from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from raf.react import ReactAgent
from raf.testing import ScriptedProvider, text, tool_calls
from raf.tools import Tool, ToolResult, Workspace
from raf.updates import ToolCallEnd

pytestmark = pytest.mark.anyio


def _shell(root: Path, **options: Any) -> Tool:
    return {t.name: t for t in Workspace(root, shell=True, **options).tools()}["shell_exec"]


async def _run(root: Path, **arguments: Any) -> ToolResult:
    return await _shell(root).call(json.dumps(arguments))


async def _alive(pid: int) -> bool:
    """Whether `pid` still runs once a SIGKILL sent to it has had time to land."""
    try:
        handle = os.pidfd_open(pid)  # readable once the process has ended
    except ProcessLookupError:
        return False
    try:
        with anyio.move_on_after(5):
            await anyio.wait_readable(handle)
            return False
        return True
    finally:
        os.close(handle)


async def _read_fifo(path: Path) -> str:
    """What a command writes to the named pipe `path` (blocks until it writes)."""
    return await anyio.to_thread.run_sync(path.read_text)


def test_shell_exec_is_offered_only_when_enabled(tmp_path: Path) -> None:
    assert "shell_exec" not in [t.name for t in Workspace(tmp_path).tools()]
    assert [t.name for t in Workspace(tmp_path, writable=False, shell=True).tools()][-1] == (
        "shell_exec"
    )


async def test_exit_code_stdout_and_stderr_are_reported(tmp_path: Path) -> None:
    ok = await _run(tmp_path, command="echo hello")
    assert ok == ToolResult("$ echo hello\nexit code 0\n--- stdout ---\nhello")
    failed = await _run(tmp_path, command="echo out; echo 'bad thing' >&2; exit 3")
    assert failed.is_error
    assert "exit code 3" in failed.text
    assert "--- stdout ---\nout\n--- stderr ---\nbad thing" in failed.text


async def test_an_argv_list_runs_without_a_shell_in_the_given_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    result = await _run(tmp_path, command=["sh", "-c", "pwd; echo $0", "a;b"], cwd="sub")
    assert result.text.endswith(f"--- stdout ---\n{Workspace(tmp_path).root / 'sub'}\na;b")
    missing = await _run(tmp_path, command=["no-such-program-here"])
    assert missing.is_error and "cannot run ['no-such-program-here']" in missing.text
    empty = await _run(tmp_path, command=" ")
    assert empty.is_error and "the command is empty" in empty.text
    not_folder = await _run(tmp_path, command="pwd", cwd="nowhere")
    assert not_folder.is_error and "does not exist" in not_folder.text


async def test_long_output_is_cut_and_the_cut_is_said(tmp_path: Path) -> None:
    shell = _shell(tmp_path, max_output_bytes=1000)
    result = await shell.call(json.dumps({"command": "head -c 100000 /dev/zero | tr '\\0' x"}))
    assert not result.is_error
    assert result.text.endswith("\n[stdout truncated: showing 1,000 of 100,000 bytes]")
    assert "x" * 1000 in result.text and "x" * 1001 not in result.text


async def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    command = "sleep 60 & echo $! > child.pid; echo started; sleep 60"
    with anyio.fail_after(20):
        result = await _run(tmp_path, command=command, timeout=0.5)
    assert result.is_error
    assert "timed out after 0.5 s; its process group was killed" in result.text
    assert "--- stdout ---\nstarted" in result.text
    assert not await _alive(int((tmp_path / "child.pid").read_text()))


async def test_what_a_finished_command_left_running_is_killed(tmp_path: Path) -> None:
    result = await _run(tmp_path, command="sleep 60 & echo $!")
    assert not result.is_error
    pid = int(result.text.split("--- stdout ---\n")[1])
    assert not await _alive(pid)


async def test_cancelling_the_run_kills_the_command_and_its_children(tmp_path: Path) -> None:
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    command = "sleep 60 & echo $$ $! > ready; wait"
    provider = ScriptedProvider([tool_calls(("shell_exec", {"command": command})), text("done")])
    agent = ReactAgent("coder", provider, "Run it.", tools=Workspace(tmp_path, shell=True).tools())
    pids: list[int] = []
    with anyio.fail_after(20):
        async with agent.run("go") as stream:
            async for update in stream:
                if isinstance(update, ToolCallEnd):
                    pids = [int(p) for p in (await _read_fifo(fifo)).split()]
                    break
    assert len(pids) == 2
    assert [await _alive(pid) for pid in pids] == [False, False]
