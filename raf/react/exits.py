"""Exit tools: tools whose call ends a ReAct loop, so that a pattern takes control back.

A pattern that moves control between agents (a handoff) offers the model one exit tool per
way out. A call to an exit runs no code: its result is the exit's `result` text, and the loop
ends after that round (the other tools the model called in the round still run). Only the
first exit call of a round takes effect; every later one gets an error result saying so, so
two exits in one answer are never both taken nor silently dropped.

Example:
    >>> from raf.tools import ToolDefinition
    >>> leave = ExitTool(ToolDefinition(name="handoff_to_billing"), "Transferred to billing.")
    >>> leave.name
    'handoff_to_billing'
    >>> second_exit(leave.name, "handoff_to_sales").is_error
    True
"""

from __future__ import annotations

from dataclasses import dataclass

from raf.tools.definition import ToolDefinition
from raf.tools.tool import ToolResult

__all__ = ["ExitTool", "second_exit"]


@dataclass(frozen=True, slots=True)
class ExitTool:
    """A tool the model may call to end the loop; its call runs no code."""

    definition: ToolDefinition
    """What the model sees: name, description, parameters."""
    result: str
    """The result the model gets for the call that takes effect."""

    @property
    def name(self) -> str:
        """The tool name."""
        return self.definition.name


def second_exit(taken: str, ignored: str) -> ToolResult:
    """The error result of exit call `ignored` made after `taken` in the same round."""
    return ToolResult(
        f"Not carried out: {taken} was called first in this turn and took effect; only the "
        f"first of these calls counts, so {ignored} was ignored.",
        is_error=True,
    )
