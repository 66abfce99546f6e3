from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from raf.errors import ToolError
from raf.tools import Workspace
from raf.tools.cancellation import CallFlag, running_call
from raf.tools.search import MAX_PATTERN_CHARS, line_matcher

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


def test_a_huge_pattern_is_refused_before_it_costs_anything(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("a" * 250_000)
    for regex in (False, True):
        with pytest.raises(ToolError, match="more than search_files takes"):
            Workspace(tmp_path).search_files("a" * (MAX_PATTERN_CHARS + 1), regex=regex)


def test_a_search_out_of_time_answers_with_what_it_found(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    (tmp_path / "b.txt").write_text("needle\n")
    answer = Workspace(tmp_path, search_seconds=1e-9).search_files("needle")
    assert answer.endswith(
        "[stopped after 1e-09 s, before every file was searched; narrow the path or the pattern]"
    )


def test_a_cancelled_search_stops(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    flag = CallFlag()
    flag.cancel()
    with running_call(flag), pytest.raises(ToolError, match="cancelled"):
        Workspace(tmp_path).search_files("needle")


def test_links_out_are_named_and_every_match_is_one_line(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("needle\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.txt").symlink_to(outside)
    (root / "bin.dat").write_bytes(b"needle\0")
    (root / "a.txt").write_text("one needle\rtwo\u2028three\nneedle\r\n")
    answer = Workspace(root).search_files("needle")
    assert answer.split("\n") == [
        "a.txt:1: one needle two three",
        "a.txt:2: needle ",
        "[skipped 1 binary file, 1 symlink leading outside the root or broken]",
    ]
