"""A griffe extension for the API reference: raf's docstrings title their doctests `Example:`,
which Google style reads as an admonition of prose; renamed `Examples:`, they render as code."""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.M)


class ExampleSections(griffe.Extension):
    """Read every `Example:` section of a docstring as an `Examples:` section."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
