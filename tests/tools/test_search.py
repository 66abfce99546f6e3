from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from raf.errors import ToolError
from raf.tools import Workspace
from raf.tools.search import line_matcher

pytestmark = pytest.mark.anyio


async def test_a_catastrophic_pattern_returns_within_a_second(tmp_path: Path) -> None:
    # On a backtracking engine `(a+)+$` over 40 a's and a b takes longer than a lifetime.
    (tmp_path / "a.txt").write_text(("a" * 40 + "b\n") * 200 + "aaaa\n")
    search = {t.name: t for t in Workspace(tmp_path).tools()}["search_files"]
    with anyio.fail_after(1):
        result = await search.call(json.dumps({"pattern": "(a+)+$", "regex": True}))
    assert result.text == "a.txt:201: aaaa"


def test_python_syntax_without_backtracking_features_works() -> None:
    assert line_matcher(r"^def (?P<name>\w+)\(", regex=True)("def hello():")
    assert line_matcher(r"\d{3}-\d{4}", regex=True)("call 555-1234")
    assert not line_matcher(r"(?i)HELLO$", regex=True)("hello world")


@pytest.mark.parametrize("pattern", [r"(a)\1", r"foo(?=bar)", r"(?<!x)y", "("])
def test_patterns_re2_cannot_run_are_clear_errors(pattern: str) -> None:
    with pytest.raises(ToolError) as caught:
        line_matcher(pattern, regex=True)
    message = str(caught.value)
    assert repr(pattern) in message and "RE2" in message


def test_plain_text_is_matched_literally() -> None:
    assert line_matcher("a+b", regex=False)("1 a+b 2")
    assert not line_matcher("a+b", regex=False)("aab")
    with pytest.raises(ToolError, match="non-empty pattern"):
        line_matcher("", regex=False)
