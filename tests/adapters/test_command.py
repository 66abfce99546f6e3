"""`create_command_role`: an external coding CLI as a role, in the workspace, bounded."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from raf.adapters import AdapterBinding, RoleResult, ThreadContext, create_command_role
from raf.builders import END, RoleEvent, RoleWorkflowBuilder
from raf.errors import ToolError
from raf.messages import ChatMessage
from raf.session import Session
from raf.stores import MemoryCheckpointStore
from raf.tools import Workspace

pytestmark = pytest.mark.anyio

CLI = str(Path(__file__).with_name("coding_cli.py"))


class Change(BaseModel):
    changed: bool
    file: str
    note: str
    log: str = ""


def _prompt(prompt: str, thread: ThreadContext) -> str:
    return f"{prompt}\n{thread.start[-1].text}"


def _parse(stdout: str, stderr: str, exit_code: int) -> RoleResult:
    report: dict[str, Any] = json.loads(stdout) if stdout.strip() else {}
    content = {"changed": False, "file": "", "note": stderr.strip(), **report, "log": stdout}
    return RoleResult(content=content, meta={"changed": content["changed"], "exit": exit_code})


def _thread(task: str) -> ThreadContext:
    return ThreadContext(thread_id="t", start=[ChatMessage.user(task)])


@pytest.mark.parametrize("prompt_via", ["stdin", "argument"])
async def test_a_command_role_edits_the_workspace_and_parses_what_it_printed(
    tmp_path: Path, prompt_via: Any
) -> None:
    (tmp_path / "calc.py").write_text("return a - b\n")
    role = create_command_role(
        [sys.executable, CLI],
        _prompt,
        _parse,
        workspace=Workspace(tmp_path),
        prompt_via=prompt_via,
    )("You are the coder.", Change)
    result = await role(_thread("fix calc.py: a - b -> a + b"))
    assert isinstance(result, RoleResult)
    assert result.meta == {"changed": True, "exit": 0}
    assert result.content["note"] == "replaced 'a - b'"
    assert (tmp_path / "calc.py").read_text() == "return a + b\n"


async def test_the_exit_code_and_stderr_go_to_parse_result(tmp_path: Path) -> None:
    seen: list[tuple[str, str, int]] = []

    def parse(stdout: str, stderr: str, exit_code: int) -> Change:
        seen.append((stdout, stderr, exit_code))
        return Change(changed=False, file="", note=stderr.strip())

    role = create_command_role([sys.executable, CLI], _prompt, parse, workspace=tmp_path)(
        "coder", Change
    )
    assert await role(_thread("dance")) == Change(changed=False, file="", note="cannot do 'dance'")
    assert seen == [("", "cannot do 'dance'\n", 2)]


def _spawning(tmp_path: Path, **options: Any) -> tuple[Any, Path]:
    """A command role whose command starts a grandchild, writes its pid into a FIFO (the
    path returned) and then runs for ever."""
    pids = tmp_path / "pid"
    os.mkfifo(pids)
    adapter = create_command_role(
        [sys.executable, CLI, "--spawn", str(pids)],
        _prompt,
        _parse,
        workspace=tmp_path,
        prompt_via="argument",
        **options,
    )
    return adapter("coder", Change), pids


async def _pid(pids: Path, into: list[int]) -> None:
    into.append(int(await anyio.to_thread.run_sync(pids.read_text)))


async def test_a_command_that_runs_too_long_is_killed_and_the_role_fails(tmp_path: Path) -> None:
    role, pids = _spawning(tmp_path, timeout=5.0)
    found: list[int] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(_pid, pids, found)
            with pytest.raises(ToolError, match="ran past its timeout of 5 s"):
                await role(_thread("anything"))
    _assert_gone(found[0])


async def test_cancelling_the_role_kills_the_command_and_all_it_started(tmp_path: Path) -> None:
    role, pids = _spawning(tmp_path)
    found: list[int] = []

    async def play() -> None:
        await role(_thread("anything"))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(play)
            await _pid(pids, found)  # the grandchild runs
            group.cancel_scope.cancel()
    _assert_gone(found[0])


def _assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_program_that_is_not_installed_is_a_clear_error(tmp_path: Path) -> None:
    role = create_command_role(["no-such-coder", "-p"], _prompt, _parse, workspace=tmp_path)(
        "coder", Change
    )
    with pytest.raises(ToolError, match="'no-such-coder' is not installed"):
        await role(_thread("fix x: a -> b"))


def test_mistakes_are_refused_when_the_role_is_made(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="argv is empty"):
        create_command_role([], _prompt, _parse, workspace=tmp_path)
    with pytest.raises(ValueError, match="prompt_via"):
        create_command_role(["x"], _prompt, _parse, workspace=tmp_path, prompt_via="file")  # type: ignore[arg-type]


async def test_a_command_role_plays_a_step_of_a_role_workflow_with_meta_apart(
    tmp_path: Path,
) -> None:
    (tmp_path / "calc.py").write_text("return a - b\n")
    coder = create_command_role([sys.executable, CLI], _prompt, _parse, workspace=tmp_path)

    def moderator(chain: list[RoleEvent], topic_id: str) -> Any:
        return "coder" if chain[-1].role == "__start__" else END

    store = MemoryCheckpointStore()
    workflow = (
        RoleWorkflowBuilder("code")
        .add_role("coder", "Fix the file.", Change)
        .with_moderator(moderator)
        .build(AdapterBinding(coder))
    )
    response = await workflow.as_agent().run(
        "fix calc.py: a - b -> a + b", Session(id="s", store=store)
    )
    assert isinstance(response.value, Change) and response.value.changed
    events = await store.events(key="s")
    assert events[-1].meta == {"changed": True, "exit": 0}
    assert events[-1].hash is not None
    content = json.loads(await store.get(events[-1].hash))
    assert content["log"].startswith('{"changed": true')
    assert (tmp_path / "calc.py").read_text() == "return a + b\n"
