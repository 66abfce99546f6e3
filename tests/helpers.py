"""Small shared test utilities."""

from __future__ import annotations

import anyio


def task_count() -> int:
    """How many tasks run on the current event loop (asyncio or trio)."""
    return len(anyio.get_running_tasks())
