"""`ToolDefinition`: the plain schema of a tool as models see it.

Example:
    >>> d = ToolDefinition(name="add", description="Add two numbers.", parameters={"type": "object"})
    >>> d.to_openai()["function"]["name"]
    'add'
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
