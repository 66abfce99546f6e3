"""The Python examples of the guide pages run as written (stubs are fenced as `pyi`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = [
    "index",
    "agents",
    "composition",
    "discovery",
    "testing",
    "stores",
    "cli",
    "serving",
    "patterns",
    "adapters",
    "tools",
    "local-models",
    "reliability",
]
README = DOCS.parent / "README.md"


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [n for n in os.environ if n.startswith("OPENAI_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / f"{page}.md").read_text(), re.S)
    assert blocks, f"docs/{page}.md has no python example"
    namespace: dict[str, object] = {"__name__": f"docs_{page}"}
    for index, block in enumerate(blocks):
        # An example that only defines its coroutine would pass without running anything.
        defines_main = re.search(r"^async def main\(", block, re.M) is not None
        assert not defines_main or "run(main" in block, f"docs/{page}.md[{index}] never runs main"
        exec(compile(block, f"docs/{page}.md[{index}]", "exec"), namespace)
    capsys.readouterr()


def test_pages_show_what_they_promise(capsys: pytest.CaptureFixture[str]) -> None:
    text = (DOCS / "composition.md").read_text()
    block = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    exec(compile(block, "composition.md[0]", "exec"), {"__name__": "docs_check"})
    assert "['a draft', 'A DRAFT']" in capsys.readouterr().out


def test_readme_example_prints_the_answers_then_the_tree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = README.read_text()
    block = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    exec(compile(block, "README.md[0]", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    shown = re.findall(r"```python\n.*?```\n\nprints\n\n```text\n(.*?)```", text, re.S)[0]
    assert out == shown
    assert out.startswith("team/writing/edit: A FIRST DRAFT.\nteam/review: Looks good.\n")
