"""The plain data of tools that the core's types name: a tool's schema as models see it
(`ToolDefinition`) and what a call gives back (`ToolResult`).

They live below the core so that `RunOptions.client_tools` and the Protocols the core declares
for the packages above it (`raf.steps`, `raf.traced`) can name them without importing
`raf.tools`; `raf.tools` re-exports both, and that is where users import them from.

Example:
    >>> d = ToolDefinition(name="add", description="Add two numbers.", parameters={"type": "object"})
    >>> d.to_openai()["function"]["name"]
    'add'
    >>> ToolResult("3")
    ToolResult(text='3', is_error=False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ToolDefinition", "ToolResult"]


class ToolDefinition(BaseModel):
    """A tool's name, description and JSON-schema parameters."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """What the model calls it."""
    description: str = ""
    """What it does, for the model."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON schema of the arguments object."""

    def to_openai(self) -> dict[str, Any]:
        """The chat-completions function-tool dict."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call gives back to the model."""

    text: str
    """The result text."""
    is_error: bool = False
    """True when the call failed or was invalid."""
