"""Every Python example of the docs runs as written.

The convention: a block fenced `python` runs (the blocks of a page run in order, in one
namespace, in a fresh folder, offline); a block that shows Python without running it (a
signature, a stub, a fragment) is fenced `pyi`; every other block names its language (`text`,
`bash`, `json`...), so nothing that looks like Python escapes the test unlabelled.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
README = DOCS.parent / "README.md"
PAGES = sorted(p.stem for p in DOCS.glob("*.md") if "```python" in p.read_text())
"""Every guide page with a Python example; the API reference pages have none of their own."""
ALL_PAGES = sorted([*DOCS.glob("**/*.md"), README])
LANGUAGES = {"python", "pyi", "text", "bash", "json", "js", "nginx", "toml", "yaml"}


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_the_pages_that_run_include_every_guide_with_python() -> None:
    assert {"engine", "react", "event-mapping", "index", "agents"} <= set(PAGES)


@pytest.mark.parametrize("page", ALL_PAGES, ids=lambda p: str(p.relative_to(DOCS.parent)))
def test_every_code_block_names_its_language(page: Path) -> None:
    fences = re.findall(r"^```(\S*)", page.read_text(), re.M)
    assert len(fences) % 2 == 0, f"{page.name}: a code block is not closed"
    for language in fences[0::2]:
        assert language in LANGUAGES, (
            f"{page.name}: a block fenced {language!r}; fence Python `python` (runs in "
            "tests/test_docs_examples.py) or `pyi` (shown, not run), anything else by its language"
        )


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [n for n in os.environ if n.startswith("OPENAI_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks((DOCS / f"{page}.md").read_text())
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
    block = python_blocks(text)[0]
    exec(compile(block, "composition.md[0]", "exec"), {"__name__": "docs_check"})
    assert "['a draft', 'A DRAFT']" in capsys.readouterr().out


def test_readme_example_prints_the_answers_then_the_tree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = README.read_text()
    block = python_blocks(text)[0]
    exec(compile(block, "README.md[0]", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    shown = re.findall(r"```python\n.*?```\n\nprints\n\n```text\n(.*?)```", text, re.S)[0]
    assert out == shown
    assert out.startswith("team/writing/edit: A FIRST DRAFT.\nteam/review: Looks good.\n")


def test_the_readmes_links_lead_to_files_of_the_repository() -> None:
    # The docs pages' links and anchors are checked by `mkdocs build --strict` (.ci/run).
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    assert links
    missing = [link for link in links if "://" not in link and not (README.parent / link).exists()]
    assert missing == []
