from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from raf.errors import ToolError
from raf.tools import Workspace, tool
from raf.tools.cancellation import check_not_cancelled

pytestmark = pytest.mark.anyio


async def test_an_abandoned_sync_tool_writes_nothing_after_cancellation(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    started, release, finished = threading.Event(), threading.Event(), threading.Event()
    outcome: list[str] = []

    @tool
    def slow_write(path: str, content: str) -> str:
        """Wait for the test, then write through the workspace."""
        started.set()
        release.wait(10)
        try:
            return workspace.write_file(path, content)
        except ToolError as exc:
            outcome.append(str(exc))
            raise
        finally:
            finished.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_write.call, '{"path": "late.txt", "content": "x"}')
            await anyio.to_thread.run_sync(started.wait)
            tg.cancel_scope.cancel()
        release.set()
        await anyio.to_thread.run_sync(finished.wait)
    assert outcome == ["the tool call was cancelled; nothing was written"]
    assert not (tmp_path / "late.txt").exists()


async def test_a_live_call_writes(tmp_path: Path) -> None:
    write = Workspace(tmp_path).tools()[1]
    result = await write.call('{"path": "now.txt", "content": "x"}')
    assert not result.is_error and (tmp_path / "now.txt").read_text() == "x"


def test_outside_a_tool_call_nothing_is_cancelled() -> None:
    check_not_cancelled()
