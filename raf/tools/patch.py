"""The text replacement of `patch_file`: exactly one occurrence, or an error showing where.

Example:
    >>> replace_once("a = 1\\nb = 2\\n", "b = 2", "b = 3", "x.py")
    'a = 1\\nb = 3\\n'
    >>> replace_once("x\\nx\\n", "x", "y", "x.py")
    Traceback (most recent call last):
    ...
    raf.errors.ToolError: 'x' occurs 2 times in 'x.py' (at lines 1, 2); include more of the surrounding text in old_text so that it matches exactly once
"""

from __future__ import annotations

from raf.errors import ToolError

__all__ = ["replace_once"]

_SHOWN_LINES = 10  # at most this many line numbers are listed for repeated matches
_PREVIEW_CHARS = 60


def replace_once(text: str, old: str, new: str, path: str) -> str:
    """`text` with its one occurrence of `old` replaced by `new`.

    Raises:
        ToolError: when `old` is empty, absent (with the lines where its first line does
            occur, if any) or occurs more than once (with the line of each occurrence).
    """
    if not old:
        raise ToolError("patch_file needs a non-empty old_text; use write_file to create a file")
    first = text.find(old)
    if first < 0:
        raise ToolError(f"{_preview(old)} does not occur in {path!r}{_near(text, old)}")
    second = text.find(old, first + 1)
    if second >= 0:
        starts = _occurrences(text, old)
        lines = [text.count("\n", 0, start) + 1 for start in starts[:_SHOWN_LINES]]
        more = ", ..." if len(starts) > _SHOWN_LINES else ""
        raise ToolError(
            f"{_preview(old)} occurs {len(starts)} times in {path!r} "
            f"(at lines {', '.join(map(str, lines))}{more}); include more of the surrounding "
            "text in old_text so that it matches exactly once"
        )
    return text[:first] + new + text[first + len(old) :]


def _occurrences(text: str, old: str) -> list[int]:
    starts: list[int] = []
    start = text.find(old)
    while start >= 0:
        starts.append(start)
        start = text.find(old, start + 1)
    return starts


def _near(text: str, old: str) -> str:
    """Where the first line of `old` occurs, to help the model see what differs."""
    head = old.strip().splitlines()[0].strip() if old.strip() else ""
    if not head:
        return "; read the file and copy the text exactly"
    lines = [n for n, line in enumerate(text.splitlines(), 1) if head in line][:_SHOWN_LINES]
    if not lines:
        return "; read the file and copy the text exactly, whitespace included"
    return (
        f"; its first line {_preview(head)} is at line(s) {', '.join(map(str, lines))}: "
        "read the file there and copy the text exactly, whitespace included"
    )


def _preview(text: str) -> str:
    return repr(text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "...")
