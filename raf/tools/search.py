"""The pattern matcher of `search_files`: plain text, or a regular expression on RE2.

RE2 (`google-re2`) matches in time linear in the input, so a pattern a model writes, such as
`(a+)+$`, can never backtrack for ever and freeze the event loop. It speaks Python's regex
syntax except backreferences and lookaround, which are refused with a clear error.

Example:
    >>> matcher = line_matcher("(a+)+$", regex=True)
    >>> matcher("a" * 64 + "b"), matcher("aaa")
    (False, True)
    >>> line_matcher("1+1", regex=False)("is 1+1 two?")
    True
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Literal, Protocol, cast

import re2  # pyright: ignore[reportMissingTypeStubs]

from raf.errors import ToolError
from raf.tools._files import capped, clip
from raf.tools.cancellation import check_not_cancelled

__all__ = ["MAX_PATTERN_CHARS", "Re2Pattern", "Search", "SkipReason", "compile_re2", "line_matcher"]

MAX_PATTERN_CHARS = 1000
"""The longest pattern `search_files` takes (its cost grows with pattern times text)."""
SkipReason = Literal["binary", "link", "oversize", "undecodable", "unreadable"]
"""Why `search_files` skipped a file."""
_SKIPPED: dict[SkipReason, tuple[str, str]] = {
    "binary": ("binary file", "binary files"),
    "link": (
        "symlink leading outside the root or broken",
        "symlinks leading outside the root or broken",
    ),
    "oversize": ("file over max_bytes", "files over max_bytes"),
    "undecodable": ("non-UTF-8 file", "non-UTF-8 files"),
    "unreadable": ("unreadable file", "unreadable files"),
}
_CHECK_EVERY = 512  # lines between looks at the clock and at cancellation
_LINE_BREAKS = str.maketrans({c: " " for c in "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


class Re2Pattern(Protocol):
    """The part of a compiled RE2 expression raf uses."""

    def search(self, text: str) -> object | None:
        """A match object when the expression matches somewhere in `text`, else None."""
        ...


# google-re2 ships no type information; these are the parts used, typed.
_re2: Any = re2
_compile = cast(Callable[[str, Any], Re2Pattern], _re2.compile)
_Error = cast(type[Exception], _re2.error)
_OPTIONS: Any = _re2.Options()
_OPTIONS.log_errors = False  # the error is the model's to read, not stderr's


def line_matcher(pattern: str, *, regex: bool) -> Callable[[str], bool]:
    """A test `line -> bool` of whether `pattern` occurs in a line.

    Raises:
        ToolError: when `pattern` is empty, or `regex` and it is not an RE2 expression.
    """
    if not pattern:
        raise ToolError("search_files needs a non-empty pattern")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(
            f"the pattern is {len(pattern):,} characters long, more than search_files takes "
            f"({MAX_PATTERN_CHARS:,}); search for a shorter, distinctive part of it"
        )
    if not regex:
        return lambda line: pattern in line
    try:
        compiled = compile_re2(pattern)
    except ValueError as exc:
        raise ToolError(
            f"pattern {pattern!r} is not a regular expression search_files can run: "
            f"{exc}. Searches run on RE2, which has no backreferences or "
            "lookaround; use plain text (regex=false) or a simpler expression"
        ) from None
    return lambda line: compiled.search(line) is not None


def compile_re2(pattern: str) -> Re2Pattern:
    """`pattern` compiled by RE2.

    Raises:
        ValueError: when RE2 cannot compile it, with RE2's reason.
    """
    try:
        return _compile(pattern, _OPTIONS)
    except _Error as exc:
        raise ValueError(_reason(exc)) from None


def _reason(exc: Exception) -> str:
    message = exc.args[0] if exc.args else exc
    return message.decode(errors="replace") if isinstance(message, bytes) else str(message)


class Search:
    """The matching lines of files, bounded in count and time, stopped when cancelled.

    Example:
        >>> search = Search(line_matcher("b", regex=False), max_results=10, seconds=5)
        >>> search.scan("x.txt", "a\\nb\\nab\\n")
        >>> search.skip("binary")
        >>> print(search.report(".", "b"))
        x.txt:2: b
        x.txt:3: ab
        [skipped 1 binary file]
    """

    __slots__ = ("_deadline", "_matches", "_max_results", "_seconds", "_stopped", "hits", "skipped")

    def __init__(self, matches: Callable[[str], bool], *, max_results: int, seconds: float) -> None:
        self._matches = matches
        self._max_results = max_results
        self._seconds = seconds
        self._deadline = time.monotonic() + seconds
        self._stopped = False
        self.hits: list[str] = []
        """`path:line: text` of each matching line found so far."""
        self.skipped: Counter[SkipReason] = Counter()
        """How many files were skipped, by reason (a key of `SKIP_REASONS`)."""

    def goes_on(self) -> bool:
        """Whether to search another file: results to find and time left.

        Raises:
            ToolError: when the tool call was cancelled.
        """
        check_not_cancelled()
        if time.monotonic() > self._deadline:
            self._stopped = True
        return not self._stopped and len(self.hits) <= self._max_results

    def skip(self, reason: SkipReason) -> None:
        """Count a file skipped for `reason`."""
        self.skipped[reason] += 1

    def scan(self, name: str, text: str) -> None:
        """Add the matching lines of file `name` (lines end at '\\n', as read_file counts)."""
        for number, line in enumerate(text.split("\n"), 1):
            if number % _CHECK_EVERY == 0 and not self.goes_on():
                return
            if self._matches(line):
                self.hits.append(f"{name}:{number}: {clip(line.translate(_LINE_BREAKS))}")

    def report(self, path: str, pattern: str) -> str:
        """The hits, capped, with notes on what was skipped and whether time ran out."""
        notes = ""
        if self.skipped:
            counts = ", ".join(
                f"{count} {_SKIPPED[reason][count > 1]}"
                for reason, count in sorted(self.skipped.items())
            )
            notes += f"\n[skipped {counts}]"
        if self._stopped:
            notes += (
                f"\n[stopped after {self._seconds:g} s, before every file was searched; "
                "narrow the path or the pattern]"
            )
        if not self.hits:
            return f"no line under {path!r} matches {pattern!r}{notes}"
        shown = f"the first {self._max_results} matches"
        return capped(self.hits, self._max_results, shown) + notes
