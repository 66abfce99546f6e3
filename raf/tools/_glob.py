"""The glob of `list_files`, matched in time linear in the path and the pattern.

A pattern is cut at '/' into segments; '**' stands for any number of path parts, other
segments use `*`, `?` and `[...]` within one part, as `fnmatch` does. Matching runs the
segments as a set of states, one step per path part (never trying every split of the path
against every '**', which is exponential), and each segment is an RE2 expression. The walk
carries the states down the tree and does not enter a folder in which no state survives, and
it stops when the tool call is cancelled.

Example:
    >>> glob = Glob("src/**/*.py")
    >>> glob.matches(("src", "a", "b", "x.py")), glob.matches(("src", "x.txt"))
    (True, False)
    >>> Glob("**/*/**/*/**/*/**/*/**/zzz").matches(("a",) * 60)
    False
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from raf.errors import ToolError
from raf.tools.cancellation import check_not_cancelled
from raf.tools.search import Re2Pattern, compile_re2

__all__ = ["MAX_GLOB_CHARS", "Glob"]

MAX_GLOB_CHARS = 1000
"""The longest glob `list_files` takes."""

_States = frozenset[int]


class Glob:
    """A compiled glob over '/'-separated relative paths.

    Raises:
        ToolError: when the pattern is longer than `MAX_GLOB_CHARS` or has a bad `[...]`.
    """

    __slots__ = ("_segments", "pattern")

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_GLOB_CHARS:
            raise ToolError(
                f"the pattern is {len(pattern):,} characters long, more than list_files takes "
                f"({MAX_GLOB_CHARS:,}); give a shorter glob"
            )
        self.pattern = pattern
        self._segments = [
            None if part == "**" else _segment_matcher(part, pattern) for part in _split(pattern)
        ]

    def matches(self, parts: Sequence[str]) -> bool:
        """Whether the path `parts` match the whole glob."""
        states = self.start()
        for part in parts:
            states = self.step(states, part)
            if not states:
                return False
        return self.accepts(states)

    def start(self) -> _States:
        """The states before any part."""
        return self._closure({0})

    def step(self, states: _States, part: str) -> _States:
        """The states after `part`; empty when nothing below it can match."""
        after: set[int] = set()
        for index in states:
            if index == len(self._segments):
                continue
            segment = self._segments[index]
            if segment is None:
                after.add(index)  # '**' takes this part and may take more
            elif segment.search(part) is not None:
                after.add(index + 1)
        return self._closure(after)

    def accepts(self, states: _States) -> bool:
        """Whether a path that led to `states` matches."""
        return len(self._segments) in states

    def walk(self, base: Path) -> Iterator[tuple[Path, bool]]:
        """(path, is a folder) of what is under `base` and matches, links not followed."""
        todo: list[tuple[Path, _States]] = [(base, self.start())]
        while todo:
            folder, states = todo.pop()
            try:
                with os.scandir(folder) as entries:
                    found = list(entries)
            except OSError:
                continue  # unreadable or gone: nothing to list in it
            for entry in found:
                check_not_cancelled()
                after = self.step(states, entry.name)
                if not after:
                    continue
                is_dir = _is_dir(entry)
                if self.accepts(after):
                    yield Path(entry.path), is_dir
                if is_dir and not entry.is_symlink():
                    todo.append((Path(entry.path), after))

    def _closure(self, states: set[int]) -> _States:
        """`states` with every state reachable by letting a '**' take no part."""
        done = set(states)
        for index in states:
            while index < len(self._segments) and self._segments[index] is None:
                index += 1
                done.add(index)
        return frozenset(done)


def _split(pattern: str) -> list[str]:
    """The '/'-separated parts of a glob, with runs of '**' folded into one."""
    found: list[str] = []
    for segment in pattern.strip("/").split("/"):
        if segment == "**" and found[-1:] == ["**"]:
            continue
        found.append(segment)
    return found


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _segment_matcher(segment: str, pattern: str) -> Re2Pattern:
    try:
        return compile_re2(_translate(segment))
    except ValueError as exc:
        raise ToolError(
            f"glob {pattern!r} has a segment {segment!r} list_files cannot use ({exc}); "
            "use *, ? and [...] within a part, ** for any number of parts"
        ) from None


def _translate(segment: str) -> str:
    """`segment` (`*`, `?`, `[...]`, `[!...]`) as an anchored RE2 expression."""
    out: list[str] = []
    i, end = 0, len(segment)
    while i < end:
        char = segment[i]
        i += 1
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[" and (close := _class_end(segment, i)) > 0:
            body = segment[i:close]
            i = close + 1
            negate = body.startswith("!")
            body = body[1:] if negate else body
            escaped = "".join("\\" + c if c in "\\^[]" else c for c in body)
            out.append(f"[{'^' if negate else ''}{escaped}]")
        else:
            out.append(_escape(char))
    return "(?s)^" + "".join(out) + "$"


def _class_end(segment: str, start: int) -> int:
    """The index of the ']' closing a class that opens before `start`; -1 when none does."""
    i = start
    if i < len(segment) and segment[i] == "!":
        i += 1
    if i < len(segment) and segment[i] == "]":
        i += 1  # a ']' first is a member
    return segment.find("]", i)


def _escape(char: str) -> str:
    return "\\" + char if char.isascii() and not char.isalnum() and char not in " _" else char
