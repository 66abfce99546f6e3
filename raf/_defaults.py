"""Typed factories of empty containers, for field defaults.

`default_factory=lambda: list[ChatMessage]()` builds a generic alias on every call (several
times the cost of the empty list); these build only the container, and their `Any` element
type lets the field's own annotation stand.

Example:
    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class Log:
    ...     lines: list[str] = field(default_factory=new_list)
    >>> Log().lines
    []
"""

from __future__ import annotations

from typing import Any


def new_list() -> list[Any]:
    """An empty list."""
    return []


def new_dict() -> dict[Any, Any]:
    """An empty dict."""
    return {}


def new_set() -> set[Any]:
    """An empty set."""
    return set()
