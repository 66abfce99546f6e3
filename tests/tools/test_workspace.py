from __future__ import annotations

import doctest
import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import raf.tools.workspace
from raf.errors import ToolError
from raf.react import ReactAgent
from raf.testing import ScriptedProvider, text, tool_calls
from raf.tools import Tool, ToolResult
from raf.tools.workspace import Workspace, workspace_tools

pytestmark = pytest.mark.anyio


def _tools(workspace: Workspace) -> dict[str, Tool]:
    return {t.name: t for t in workspace.tools()}


async def _call(workspace: Workspace, name: str, **arguments: Any) -> ToolResult:
    return await _tools(workspace)[name].call(json.dumps(arguments))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    (folder / "src" / "pkg").mkdir(parents=True)
    (folder / "README.md").write_text("# Demo\nA small project.\n")
    (folder / "src" / "main.py").write_text("import pkg\n\nprint('hello')\n")
    (folder / "src" / "pkg" / "util.py").write_text("def hello():\n    return 'hello'\n")
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    return folder


def test_the_docstring_examples_run() -> None:
    failed, tried = doctest.testmod(raf.tools.workspace)
    assert failed == 0 and tried > 0


def test_tools_have_schemas_from_their_signatures(root: Path) -> None:
    tools = _tools(Workspace(root))
    assert list(tools) == ["read_file", "write_file", "patch_file", "list_files", "search_files"]
    read = tools["read_file"].definition
    assert read.description.startswith("Read a UTF-8 text file")
    assert read.parameters["required"] == ["path"]
    assert read.parameters["properties"]["offset"]["minimum"] == 0
    assert tools["search_files"].definition.parameters["required"] == ["pattern"]


def test_a_read_only_workspace_has_no_write_tool(root: Path) -> None:
    names = [t.name for t in workspace_tools(root, writable=False)]
    assert names == ["read_file", "list_files", "search_files"]
    with pytest.raises(ToolError, match="read-only"):
        Workspace(root, writable=False).write_file("a.txt", "x")
    assert not (root / "a.txt").exists()


def test_the_root_must_be_an_existing_folder(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="missing"):
        Workspace(tmp_path / "missing")
    with pytest.raises(ValueError, match="max_bytes"):
        Workspace(tmp_path, max_bytes=0)


async def test_read_file_reads_whole_files_and_line_ranges(root: Path) -> None:
    workspace = Workspace(root)
    assert await _call(workspace, "read_file", path="README.md") == ToolResult(
        "# Demo\nA small project.\n"
    )
    assert (await _call(workspace, "read_file", path="src/main.py", offset=2, limit=1)).text == (
        "print('hello')\n"
    )
    past = await _call(workspace, "read_file", path="README.md", offset=5)
    assert past.is_error and "past the end of 'README.md', which has 2 lines" in past.text
    bad = await _call(workspace, "read_file", path="README.md", limit=0)
    assert bad.is_error and "limit" in bad.text


async def test_long_output_stops_at_a_line_with_where_to_read_on(root: Path) -> None:
    lines = [f"line {n:05d} " + "x" * 90 + "\n" for n in range(400)]
    (root / "long.txt").write_text("".join(lines))
    workspace = Workspace(root)
    first = (await _call(workspace, "read_file", path="long.txt")).text
    shown = first.count("\n") - 1
    assert first.startswith(lines[0]) and f"read on with offset={shown}]" in first
    second = (await _call(workspace, "read_file", path="long.txt", offset=shown)).text
    assert second.startswith(lines[shown])
    (root / "wide.txt").write_text("y" * 50_000)
    wide = (await _call(workspace, "read_file", path="wide.txt")).text
    assert "too long to show whole; read on with offset=1" in wide
    assert len(wide) < 20_000


async def test_missing_binary_undecodable_and_oversize_files_are_error_results(
    root: Path,
) -> None:
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    (root / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    (root / "big.log").write_text("event\n" * 100)
    workspace = Workspace(root, max_bytes=100)
    results = {
        name: await _call(workspace, "read_file", path=name)
        for name in ["nope.txt", "logo.png", "latin1.txt", "big.log", "src"]
    }
    assert all(r.is_error for r in results.values())
    assert "'nope.txt' does not exist in the workspace" in results["nope.txt"].text
    assert "'logo.png' is a binary file" in results["logo.png"].text
    assert "'latin1.txt' is not UTF-8 text" in results["latin1.txt"].text
    assert "'big.log' is 600 bytes, more than this workspace reads at once (100)" in (
        results["big.log"].text
    )
    assert "'src' is not a file" in results["src"].text
    ranged = await _call(workspace, "read_file", path="big.log", offset=10, limit=2)
    assert ranged == ToolResult("event\nevent\n")


async def test_write_file_creates_folders_and_replaces_files(root: Path) -> None:
    workspace = Workspace(root)
    result = await _call(workspace, "write_file", path="out/deep/notes.txt", content="héllo\n")
    assert result == ToolResult("wrote 7 bytes to 'out/deep/notes.txt'")
    assert (root / "out" / "deep" / "notes.txt").read_text() == "héllo\n"
    await _call(workspace, "write_file", path="out/deep/notes.txt", content="bye")
    assert (root / "out" / "deep" / "notes.txt").read_text() == "bye"
    onto_folder = await _call(workspace, "write_file", path="src", content="x")
    assert onto_folder.is_error and "'src' exists and is not a regular file" in onto_folder.text
    under_file = await _call(workspace, "write_file", path="README.md/x.txt", content="x")
    assert under_file.is_error and "cannot write 'README.md/x.txt'" in under_file.text


async def test_list_files_gives_sorted_relative_paths_with_folders_marked(root: Path) -> None:
    workspace = Workspace(root)
    assert (await _call(workspace, "list_files")).text == "README.md\nsrc/"
    assert (await _call(workspace, "list_files", path="src")).text == "src/main.py\nsrc/pkg/"
    deep = await _call(workspace, "list_files", pattern="**/*.py")
    assert deep.text == "src/main.py\nsrc/pkg/util.py"
    none = await _call(workspace, "list_files", pattern="*.rs")
    assert none == ToolResult("nothing under '.' matches '*.rs'")
    on_file = await _call(workspace, "list_files", path="README.md")
    assert on_file.is_error and "'README.md' is a file, not a folder" in on_file.text


async def test_list_files_is_capped_with_a_note(tmp_path: Path) -> None:
    for n in range(12):
        (tmp_path / f"f{n:02d}.txt").write_text("")
    listed = (await _call(Workspace(tmp_path, max_results=5), "list_files")).text.splitlines()
    assert listed[:5] == [f"f{n:02d}.txt" for n in range(5)]
    assert listed[5] == "[showing 5 of 12 entries; narrow the path or the pattern]"


async def test_search_files_finds_text_and_regex_matches(root: Path) -> None:
    (root / "logo.png").write_bytes(b"hello\0binary")
    workspace = Workspace(root)
    found = await _call(workspace, "search_files", pattern="hello")
    assert found.text.splitlines() == [
        "src/main.py:3: print('hello')",
        "src/pkg/util.py:1: def hello():",
        "src/pkg/util.py:2:     return 'hello'",
        "[skipped 1 binary file]",
    ]
    regex = await _call(workspace, "search_files", pattern=r"^def \w+", regex=True, path="src")
    assert regex == ToolResult("src/pkg/util.py:1: def hello():")
    one_file = await _call(workspace, "search_files", pattern="Demo", path="README.md")
    assert one_file == ToolResult("README.md:1: # Demo")
    literal = await _call(workspace, "search_files", pattern="hello()", path="src")
    assert literal == ToolResult("src/pkg/util.py:1: def hello():")
    none = await _call(workspace, "search_files", pattern="absent", path="src")
    assert none == ToolResult("no line under 'src' matches 'absent'")
    bad = await _call(workspace, "search_files", pattern="(", regex=True)
    assert bad.is_error and "'(' is not a regular expression search_files can run" in bad.text


async def test_search_files_is_capped_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hit\n" * 10)
    (tmp_path / "b.txt").write_text("hit\n")
    found = (await _call(Workspace(tmp_path, max_results=3), "search_files", pattern="hit")).text
    assert found.splitlines() == [
        "a.txt:1: hit",
        "a.txt:2: hit",
        "a.txt:3: hit",
        "[showing the first 3 matches; narrow the path or the pattern]",
    ]


@pytest.mark.parametrize("path", ["../secret.txt", "src/../../secret.txt", "SECRET_ABSOLUTE"])
async def test_paths_leading_outside_are_error_results_naming_path_and_root(
    root: Path, path: str
) -> None:
    path = str(root.parent / "secret.txt") if path == "SECRET_ABSOLUTE" else path
    workspace = Workspace(root)
    for name, extra in [("read_file", {}), ("write_file", {"content": "x"})]:
        result = await _call(workspace, name, path=path, **extra)
        assert result.is_error
        assert f"path {path!r} is outside the workspace root {str(root)!r}" in result.text
    for name, extra in [("list_files", {}), ("search_files", {"pattern": "SECRET"})]:
        result = await _call(workspace, name, path=path, **extra)
        assert result.is_error and "outside the workspace root" in result.text
    assert (root.parent / "secret.txt").read_text() == "TOP SECRET\n"


async def test_paths_that_stay_inside_are_fine_even_with_dots_or_absolute(root: Path) -> None:
    workspace = Workspace(root)
    for path in ["src/../README.md", "./README.md", str(root / "README.md")]:
        assert (await _call(workspace, "read_file", path=path)).text.startswith("# Demo")


async def test_symlinks_inside_are_followed_and_links_leading_out_are_refused(
    root: Path,
) -> None:
    (root / "alias.md").symlink_to(root / "README.md")
    (root / "leak.txt").symlink_to(root.parent / "secret.txt")
    (root / "outside").symlink_to(root.parent, target_is_directory=True)
    (root / "loop").symlink_to(root / "loop")
    workspace = Workspace(root)
    assert (await _call(workspace, "read_file", path="alias.md")).text.startswith("# Demo")
    for path in ["leak.txt", "outside/secret.txt"]:
        read = await _call(workspace, "read_file", path=path)
        assert read.is_error and f"path {path!r} is outside the workspace root" in read.text
    write = await _call(workspace, "write_file", path="outside/new.txt", content="x")
    assert write.is_error and not (root.parent / "new.txt").exists()
    listed = await _call(workspace, "list_files", pattern="**/*")
    assert "secret" not in listed.text and "outside/" in listed.text
    searched = await _call(workspace, "search_files", pattern="SECRET")
    assert "TOP SECRET" not in searched.text
    loop = await _call(workspace, "read_file", path="loop")
    assert loop.is_error


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
async def test_a_named_pipe_is_an_error_result_not_a_hang(root: Path) -> None:
    os.mkfifo(root / "pipe")
    workspace = Workspace(root)
    with anyio.fail_after(5):
        read = await _call(workspace, "read_file", path="pipe")
        write = await _call(workspace, "write_file", path="pipe", content="x")
        searched = await _call(workspace, "search_files", pattern="hello")
    assert read.is_error and "'pipe' is not a file" in read.text
    assert write.is_error and "'pipe' exists and is not a regular file" in write.text
    assert "src/main.py:3" in searched.text


async def test_a_model_reading_outside_gets_an_error_and_recovers(root: Path) -> None:
    model = ScriptedProvider(
        [
            tool_calls(("read_file", {"path": "../secret.txt"})),
            tool_calls(("read_file", {"path": "README.md"})),
            text("The project is called Demo."),
        ]
    )
    agent = ReactAgent("reader", model, "Read files.", tools=workspace_tools(root))
    response = await agent.run("What is the project called?").collect()
    results = [c for m in response.messages for c in m.contents if c.type == "tool_result"]
    assert [r.is_error for r in results] == [True, False]
    assert "outside the workspace root" in results[0].result
    assert "TOP SECRET" not in results[0].result
    assert results[1].result.startswith("# Demo")
    assert response.text == "The project is called Demo."


_SEGMENTS = st.sampled_from(
    ["a", "b/c", "..", ".", "", "src", "leak.txt", "outside", "secret.txt", "~", "a\0b", "x" * 300]
)


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    prefix=st.sampled_from(["", "/", "ROOT", "OUTSIDE", "//"]),
    segments=st.lists(_SEGMENTS, max_size=6),
    name=st.sampled_from(
        ["read_file", "write_file", "patch_file", "list_files", "search_files", "shell_exec"]
    ),
)
async def test_any_path_stays_inside_or_is_an_error_and_never_touches_outside(
    tmp_path: Path, prefix: str, segments: list[str], name: str
) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    if not root.exists():
        (root / "src").mkdir(parents=True)
        outside.mkdir()
        (outside / "secret.txt").write_text("SENTINEL\n")
        (root / "leak.txt").symlink_to(outside / "secret.txt")
        (root / "outside").symlink_to(outside, target_is_directory=True)
    prefix = {"ROOT": f"{root}/", "OUTSIDE": f"{outside}/"}.get(prefix, prefix)
    path = prefix + "/".join(segments)
    extra: dict[str, dict[str, Any]] = {
        "write_file": {"path": path, "content": "written"},
        "patch_file": {"path": path, "old_text": "SENTINEL", "new_text": "patched"},
        "search_files": {"path": path, "pattern": "SENTINEL"},
        "shell_exec": {"cwd": path, "command": ["pwd"]},
    }
    arguments = extra.get(name, {"path": path})
    result = await _call(Workspace(root, shell=True), name, **arguments)
    assert "SENTINEL" not in result.text.replace(repr("SENTINEL"), "")
    if result.is_error:
        assert not result.text.startswith(f"tool {name!r} raised"), result.text
    elif name == "write_file":
        written = result.text.removeprefix("wrote 7 bytes to ").strip("'")
        assert (root / written).resolve().is_relative_to(root)
    elif name == "shell_exec":
        ran_in = Path(result.text.split("--- stdout ---\n")[1].strip())
        assert ran_in.is_relative_to(Workspace(root).root)  # pwd shows the resolved folder
    assert sorted(os.listdir(tmp_path)) == ["outside", "root"]
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "SENTINEL\n"


_LINK_PARTS = st.sampled_from(["..", ".", "src", "outside", "root", "secret.txt", "x"])


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    target=st.lists(_LINK_PARTS, min_size=1, max_size=4),
    absolute=st.booleans(),
    below=st.sampled_from(["", "/secret.txt", "/x", "/.."]),
    name=st.sampled_from(
        ["read_file", "write_file", "patch_file", "list_files", "search_files", "shell_exec"]
    ),
)
async def test_a_generated_symlink_never_leads_a_tool_outside_the_root(
    tmp_path_factory: pytest.TempPathFactory,
    target: list[str],
    absolute: bool,
    below: str,
    name: str,
) -> None:
    base = tmp_path_factory.mktemp("links")
    root, outside = base / "root", base / "outside"
    (root / "src").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("SENTINEL\n")
    relative = "/".join(target)
    (root / "src" / "link").symlink_to(f"{base}/{relative}" if absolute else relative)
    path = "src/link" + below
    arguments: dict[str, Any] = {
        "write_file": {"path": path, "content": "written"},
        "patch_file": {"path": path, "old_text": "SENTINEL", "new_text": "patched"},
        "search_files": {"path": path, "pattern": "SENTINEL"},
        "shell_exec": {"cwd": path, "command": ["pwd"]},
    }.get(name, {"path": path})
    result = await _call(Workspace(root, shell=True), name, **arguments)
    assert "SENTINEL" not in result.text.replace(repr("SENTINEL"), "")
    if name == "shell_exec" and not result.is_error:
        ran_in = Path(result.text.split("--- stdout ---\n")[1].strip())
        assert ran_in.is_relative_to(Workspace(root).root)
    assert sorted(os.listdir(base)) == ["outside", "root"]
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "SENTINEL\n"
