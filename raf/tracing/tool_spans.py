"""Which tool call span a task is in, so that a tool's failure marks that span.

Imports nothing of OpenTelemetry: the tools module calls `tool_failed` on every failure,
traced or not.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["TOOL_SPAN", "ToolSpan", "tool_failed"]


@dataclass(slots=True)
class ToolSpan:
    """The `execute_tool` span of a call in progress."""

    span: Span
    typed: bool = False
    """Whether a failure already named the error type."""


TOOL_SPAN: ContextVar[ToolSpan | None] = ContextVar("raf_tool_span", default=None)
"""The tool call span of the task, while the tool runs."""


def tool_failed(error: BaseException) -> None:
    """Record a tool's exception (one that becomes an error result for the model) on its
    `execute_tool` span, when the call is traced."""
    current = TOOL_SPAN.get()
    if current is None:
        return
    current.span.record_exception(error)
    current.span.set_attribute("error.type", type(error).__qualname__)
    current.typed = True
