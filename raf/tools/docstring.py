"""Read a Google-style docstring: the summary paragraph and the `Args:` descriptions.

Example:
    >>> doc = parse_docstring('''Add two numbers.
    ...
    ... Args:
    ...     a: the first number.
    ...     b (int): the second
    ...         number.
    ... ''')
    >>> doc.summary, doc.params["b"]
    ('Add two numbers.', 'the second number.')
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

from raf._defaults import new_dict

_ARGS_HEADERS = frozenset({"args", "arguments", "parameters", "params", "keyword args"})
_SECTION = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_PARAM = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class Docstring:
    """What a tool needs from its function's docstring."""

    summary: str = ""
    params: dict[str, str] = field(default_factory=new_dict)


def parse_docstring(doc: str | None) -> Docstring:
    """Parse `doc`: the first paragraph as the summary, and the `Args:` section by name.

    Lines of one paragraph or one parameter are joined with single spaces.
    """
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary.append(line.strip())
    return Docstring(summary=" ".join(summary), params=_args_section(lines))


def _args_section(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    inside = False
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        header = _SECTION.match(line) if indent == 0 else None
        if header:
            inside = header.group(1).strip().lower() in _ARGS_HEADERS
            entry_indent = None
            current = None
            continue
        if not inside or not stripped:
            continue
        if entry_indent is None:
            entry_indent = indent
        if indent <= entry_indent:
            match = _PARAM.match(stripped)
            if match:
                name = match.group(1)
                params[name] = match.group(2).strip()
                current = name
            else:
                current = None
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return params
