"""Every Python example of docs/react.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).parents[2] / "docs" / "react.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _examples() -> list[str]:
    return [block for block in _BLOCK.findall(DOC.read_text()) if "anyio.run(main)" in block]


def test_the_page_has_runnable_examples() -> None:
    assert len(_examples()) >= 5


@pytest.mark.parametrize(
    "source", _examples(), ids=[f"example-{i}" for i in range(1, len(_examples()) + 1)]
)
def test_example_runs(source: str, capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(source, str(DOC), "exec"), namespace)
