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

from collections.abc import Callable
from typing import Any, Protocol, cast

import re2  # pyright: ignore[reportMissingTypeStubs]

from raf.errors import ToolError

__all__ = ["Re2Pattern", "compile_re2", "line_matcher"]


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
