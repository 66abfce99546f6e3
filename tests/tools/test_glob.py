"""The linear-time glob of `list_files`: `raf/tools/_glob.py`."""

from __future__ import annotations

import doctest
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

import raf.tools._glob
from raf.errors import ToolError
from raf.tools import Workspace
from raf.tools._glob import MAX_GLOB_CHARS, Glob
from raf.tools.cancellation import CallFlag, running_call

pytestmark = pytest.mark.anyio


def _reference(parts: Sequence[str], globs: Sequence[str]) -> bool:
    """The obvious (exponential) matcher: every split of the path against every '**'."""
    if not globs:
        return not parts
    if globs[0] == "**":
        return any(_reference(parts[i:], globs[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], globs[0]) and _reference(parts[1:], globs[1:])


def test_the_docstring_examples_run() -> None:
    assert doctest.testmod(raf.tools._glob).failed == 0


_names = st.sampled_from(["a", "b", "ab", "a.py", "[x]", "b?c"])
_segments = st.sampled_from(["**", "*", "a", "a*", "*.py", "?", "[ab]", "[!a]*", "[[]x]", "b?c"])


@given(st.lists(_names, min_size=1, max_size=6), st.lists(_segments, min_size=1, max_size=6))
def test_the_glob_matches_as_fnmatch_does_part_by_part(
    parts: list[str], segments: list[str]
) -> None:
    folded = [
        s for i, s in enumerate(segments) if not (s == "**" and segments[i - 1 : i] == ["**"])
    ]
    assert Glob("/".join(segments)).matches(parts) == _reference(parts, folded)


async def test_many_double_stars_on_a_deep_tree_answer_at_once(tmp_path: Path) -> None:
    folder = tmp_path
    for _ in range(40):
        folder = folder / "d"
        folder.mkdir()
        (folder / "f.txt").write_text("x")
    workspace = Workspace(tmp_path)
    pattern = "**/*/**/*/**/*/**/*/**/*/**/zzz"
    with anyio.fail_after(10):  # the old matcher took minutes here
        listed = await anyio.to_thread.run_sync(workspace.list_files, ".", pattern)
        found = await anyio.to_thread.run_sync(workspace.list_files, ".", "**/*/d/f.txt")
    assert listed == f"nothing under '.' matches {pattern!r}"
    assert "d/d/f.txt" in found.splitlines() and len(found.splitlines()) == 39


def test_a_cancelled_listing_stops(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    flag = CallFlag()
    flag.cancel()
    with running_call(flag), pytest.raises(ToolError, match="cancelled"):
        Workspace(tmp_path).list_files(".", "**")


def test_long_globs_and_bad_classes_are_refused(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    with pytest.raises(ToolError, match="more than list_files takes"):
        workspace.list_files(".", "*" * (MAX_GLOB_CHARS + 1))
    with pytest.raises(ToolError, match="list_files cannot use"):
        workspace.list_files(".", "[z-a]")
