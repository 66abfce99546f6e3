"""File helpers of the workspace tools: reading ranges of lines, walking folders."""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from raf.errors import ToolError
from raf.tools.cancellation import check_not_cancelled
from raf.tools.tool import DEFAULT_MAX_OUTPUT_CHARS

SNIFF_BYTES = 8192
"""A NUL byte in the first 8 KiB marks a file as binary."""
_READ_BUDGET = DEFAULT_MAX_OUTPUT_CHARS - 200  # room for the continuation note
_LINE_CHARS = 200  # search results show at most this much of a line


def read_lines(file: BinaryIO, path: str, offset: int, limit: int | None) -> str:
    """Lines offset.. of `file`, at most `limit` and about `_READ_BUDGET` characters."""
    skipped = 0
    while skipped < offset:
        piece = file.readline(65536)
        if not piece:
            raise ToolError(
                f"offset {offset} is past the end of {path!r}, which has {skipped} lines"
            )
        skipped += piece.endswith(b"\n")
    decoder = codecs.getincrementaldecoder("utf-8")()
    taken: list[str] = []
    used = 0
    while limit is None or len(taken) < limit:
        wanted = _READ_BUDGET - used + 1
        raw = file.readline(wanted)
        if not raw:
            decoder.decode(b"", final=True)  # a truncated character at the end raises
            break
        line = decoder.decode(raw)
        whole = raw.endswith(b"\n") or len(raw) < wanted  # else a piece of a longer line
        if used + len(line) <= _READ_BUDGET and whole:
            taken.append(line)
            used += len(line)
            continue
        if not taken:  # one line longer than the budget: show its start
            return (
                f"{line[:_READ_BUDGET]}\n[line {offset + 1} of {path!r} is too long to show "
                f"whole; read on with offset={offset + 1}]"
            )
        end = offset + len(taken)
        return (
            "".join(taken) + f"\n[showing lines {offset + 1}-{end} of {path!r}; "
            f"read on with offset={end}]"
        )
    return "".join(taken)


def walk(base: Path, depth: int | None) -> Iterator[tuple[tuple[str, ...], bool, Path]]:
    """(parts below `base`, is a folder, path) of everything under `base`, links not followed."""
    for folder, dirnames, filenames in os.walk(base):
        check_not_cancelled()  # an abandoned worker thread stops here
        here = Path(folder)
        prefix = here.relative_to(base).parts
        dirnames.sort()
        for name in dirnames:
            yield (*prefix, name), True, here / name
        for name in sorted(filenames):
            yield (*prefix, name), False, here / name
        if depth is not None and len(prefix) + 1 >= depth:
            dirnames.clear()  # the pattern cannot match anything deeper


def capped(lines: list[str], cap: int, shown: str) -> str:
    """`lines` joined, cut to `cap` with a note saying what is `shown`."""
    if len(lines) <= cap:
        return "\n".join(lines)
    return "\n".join(lines[:cap]) + f"\n[showing {shown}; narrow the path or the pattern]"


def clip(line: str) -> str:
    """`line`, cut to a readable length."""
    return line if len(line) <= _LINE_CHARS else line[:_LINE_CHARS] + "..."


def os_error(action: str, path: str, exc: OSError) -> ToolError:
    """The error result for an `OSError` while doing `action` on `path`."""
    reason = exc.strerror or type(exc).__name__
    return ToolError(f"cannot {action} {path!r}: {reason}")
