"""The examples in docs/engine.md run and print what the page says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).parents[2] / "docs"


def test_the_engine_page_example_runs() -> None:
    text = (DOCS / "engine.md").read_text()
    example = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    out = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, check=True
    )
    lines = out.stdout.splitlines()
    assert lines[0] == "completed [21]"
    assert lines[1] == "NodeInvoking(node_id='split')"
    assert lines[-1] == "HELLO"


def test_the_worked_event_mapping_example_matches_the_page() -> None:
    text = (DOCS / "event-mapping.md").read_text()
    example = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    table = text.split("yields, in order:")[1]
    rows = re.findall(r"^\| `([^`]+)`\s+\| `(\w+)\((.*?)\)`\s+\|$", table, re.M)
    expected = [(path, kind, args) for path, kind, args in rows]
    script = example + (
        "\nimport anyio\n"
        "async def main():\n"
        "    async with team.run('Write about tea') as stream:\n"
        "        async for item in stream:\n"
        "            detail = getattr(item, 'executor_id', None) or getattr(item, 'text', None)\n"
        "            if detail is None and hasattr(item, 'message'):\n"
        "                detail = item.message.text\n"
        "            print('/'.join(item.path), type(item).__name__, detail, sep='|')\n"
        "    print((await team.run('Write about tea').collect()).text)\n"
        "anyio.run(main)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    *items, answer = out.stdout.splitlines()
    assert len(items) == len(expected) == 15
    for line, (path, kind, args) in zip(items, expected, strict=True):
        got_path, got_kind, detail = line.split("|")
        assert (got_path, got_kind) == (path, kind)
        assert repr(detail) in args.replace('"', "'") or f"'{detail}'" in args.replace('"', "'")
    assert answer == "FINE."


def test_the_human_in_the_loop_examples_print_what_the_page_shows() -> None:
    text = (DOCS / "engine.md").read_text()
    section = text.split("## Human in the loop")[1].split("## As an agent")[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    script = "\n".join(block for block in blocks if "import" in block)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    shown = re.findall(r"prints\n\n```(?:text)?\n(.*?)```", section, re.S)[0].splitlines()
    assert out[: len(shown)] == shown
    assert out[len(shown)] == "completed ['a draft', 'verdict: ship it']"
