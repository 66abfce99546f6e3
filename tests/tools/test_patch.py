from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raf.errors import ToolError
from raf.tools import Workspace
from raf.tools.patch import replace_once

pytestmark = pytest.mark.anyio


def test_one_occurrence_is_replaced() -> None:
    assert replace_once("a = 1\nb = 2\n", "b = 2", "b = 3", "x.py") == "a = 1\nb = 3\n"
    assert replace_once("keep\ndrop\n", "drop\n", "", "x.py") == "keep\n"


def test_absent_text_says_where_its_first_line_is() -> None:
    text = "def f():\n    return 1\n\ndef g():\n    return 2\n"
    with pytest.raises(ToolError) as caught:
        replace_once(text, "def g():\n  return 2", "x", "m.py")
    message = str(caught.value)
    assert "does not occur in 'm.py'" in message
    assert "its first line 'def g():' is at line(s) 4" in message
    with pytest.raises(ToolError, match="copy the text exactly, whitespace included"):
        replace_once(text, "nothing like it", "x", "m.py")


def test_repeated_text_lists_the_line_of_each_occurrence() -> None:
    text = "x = 1\ny = 2\nx = 1\n\nx = 1\n"
    with pytest.raises(ToolError) as caught:
        replace_once(text, "x = 1", "x = 9", "m.py")
    assert "occurs 3 times in 'm.py' (at lines 1, 3, 5)" in str(caught.value)


def test_empty_old_text_is_refused() -> None:
    with pytest.raises(ToolError, match="non-empty old_text"):
        replace_once("abc", "", "x", "m.py")


@given(
    before=st.text(alphabet="ab\n", max_size=20),
    after=st.text(alphabet="ab\n", max_size=20),
    new=st.text(max_size=10),
)
def test_a_unique_marker_is_replaced_like_str_replace(before: str, after: str, new: str) -> None:
    text = before + "<MARK>" + after
    assert replace_once(text, "<MARK>", new, "f") == text.replace("<MARK>", new)


async def test_patch_file_changes_the_file_or_nothing(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\nb = 1\n")
    (tmp_path / "blob.bin").write_bytes(b"\0\1")
    patch = {t.name: t for t in Workspace(tmp_path).tools()}["patch_file"]

    async def call(**arguments: str):
        return await patch.call(json.dumps(arguments))

    done = await call(path="m.py", old_text="b = 1", new_text="b = 2\nc = 3")
    assert not done.is_error
    assert done.text == "patched 'm.py' at line 2: replaced 1 line(s) with 2"
    assert (tmp_path / "m.py").read_text() == "a = 1\nb = 2\nc = 3\n"
    twice = await call(path="m.py", old_text=" = ", new_text="=")
    assert twice.is_error and "occurs 3 times in 'm.py' (at lines 1, 2, 3)" in twice.text
    assert (tmp_path / "m.py").read_text() == "a = 1\nb = 2\nc = 3\n"
    for path in ("blob.bin", "missing.py", "../m.py", "."):
        result = await call(path=path, old_text="a", new_text="b")
        assert result.is_error, path
    assert "not a UTF-8 text file" in (await call(path="blob.bin", old_text="a", new_text="b")).text


def test_a_read_only_workspace_cannot_patch(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path, writable=False)
    assert "patch_file" not in [t.name for t in workspace.tools()]
    with pytest.raises(ToolError, match="read-only"):
        workspace.patch_file("m.py", "a", "b")
