from __future__ import annotations

import json
import os
import sys
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


async def _pids_of_a_cancelled_run(root: Path, command: str) -> list[int]:
    """Run `command` (which writes pids to the pipe `ready`) in an agent, cancel the run once
    the pids are written, and return them."""
    fifo = root / "ready"
    os.mkfifo(fifo)
    provider = ScriptedProvider([tool_calls(("shell_exec", {"command": command})), text("done")])
    agent = ReactAgent("coder", provider, "Run it.", tools=Workspace(root, shell=True).tools())
    with anyio.fail_after(20):
        async with agent.run("go") as stream:
            async for update in stream:
                if isinstance(update, ToolCallEnd):
                    return [int(p) for p in (await _read_fifo(fifo)).split()]
    raise AssertionError("the command was never called")


async def test_cancelling_the_run_kills_the_command_and_its_children(tmp_path: Path) -> None:
    pids = await _pids_of_a_cancelled_run(tmp_path, "sleep 60 & echo $$ $! > ready; wait")
    assert len(pids) == 2
    assert [await _alive(pid) for pid in pids] == [False, False]


async def test_a_command_sees_only_the_allow_listed_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("PGPASSWORD", "hunter2")
    monkeypatch.setenv("LANG", "C.UTF-8")
    shell = _shell(tmp_path, env={"PROJECT_MODE": "test"})
    result = await shell.call(json.dumps({"command": "env"}))
    seen = dict(line.split("=", 1) for line in result.text.split("--- stdout ---\n")[1].split("\n"))
    assert "sk-secret" not in result.text and "hunter2" not in result.text
    assert seen["PROJECT_MODE"] == "test" and seen["LANG"] == "C.UTF-8"
    assert seen["PATH"] == os.environ["PATH"]


_DOUBLE_FORK = """
import os, sys, time
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(write, str(os.getpid()).encode())
        os.close(write)
        if sys.argv[1] == "detach":
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
        time.sleep(60)
    os._exit(0)
os.close(write)
print(os.read(read, 20).decode(), flush=True)
"""


@pytest.mark.parametrize("detach", ["detach", "keep-pipes"])
async def test_a_double_forked_new_session_is_killed_when_the_command_ends(
    tmp_path: Path, detach: str
) -> None:
    with anyio.fail_after(20):
        result = await _run(tmp_path, command=[sys.executable, "-c", _DOUBLE_FORK, detach])
    assert not result.is_error, result.text
    pid = int(result.text.split("--- stdout ---\n")[1])
    assert not await _alive(pid)


async def test_setsid_does_not_escape_the_timeout(tmp_path: Path) -> None:
    command = "setsid sleep 60 > /dev/null 2>&1 & echo $! > child.pid; sleep 60"
    with anyio.fail_after(20):
        result = await _run(tmp_path, command=command, timeout=0.5)
    assert "timed out after 0.5 s" in result.text
    assert not await _alive(int((tmp_path / "child.pid").read_text()))


async def test_cancelling_the_run_kills_a_process_in_a_new_session(tmp_path: Path) -> None:
    command = "setsid sleep 60 > /dev/null 2>&1 & echo $! > ready; wait"
    [pid] = await _pids_of_a_cancelled_run(tmp_path, command)
    assert not await _alive(pid)


async def test_a_command_killed_by_a_signal_reports_it(tmp_path: Path) -> None:
    result = await _run(tmp_path, command="kill -TERM $$")
    assert result.is_error and "exit code -15" in result.text
