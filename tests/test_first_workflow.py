"""docs/index.md's "Your first workflow in five minutes", saved as one file, runs as promised."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from raf.messages import ChatMessage
from raf.testing import Turn, text
from tests.helpers import endpoint_in_thread

INDEX = Path(__file__).resolve().parent.parent / "docs" / "index.md"


def section() -> str:
    page = INDEX.read_text()
    start = page.index("## Your first workflow in five minutes")
    return page[start : page.index("\n## ", start)]


def save_as_first_py(folder: Path) -> Path:
    code = "\n".join(re.findall(r"```python\n(.*?)```", section(), re.S))
    target = folder / "first.py"
    target.write_text(code)
    return target


def env(**extra: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAF_MODEL"))}
    return kept | extra


def answer_briefly(messages: list[ChatMessage]) -> Turn:
    return text("Bread, daily.")


def test_the_file_prints_what_the_page_shows(tmp_path: Path) -> None:
    first = save_as_first_py(tmp_path)
    done = subprocess.run(
        [sys.executable, str(first)], cwd=tmp_path, env=env(), capture_output=True, timeout=60
    )
    shown = re.findall(r"```text\n(.*?)```", section(), re.S)[0]
    assert done.stdout.decode().startswith(shown)
    assert "from the model" not in done.stdout.decode()


def test_step_five_runs_on_an_openai_compatible_endpoint(tmp_path: Path) -> None:
    first = save_as_first_py(tmp_path)
    with endpoint_in_thread(answer_briefly) as server:
        done = subprocess.run(
            [sys.executable, str(first)],
            cwd=tmp_path,
            env=env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test-key"),
            capture_output=True,
            timeout=60,
        )
    assert "from the model: Bread, daily." in done.stdout.decode()
    assert len(server.requests) == 2  # the writer's call and the editor's
