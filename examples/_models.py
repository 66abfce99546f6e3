"""The model behind the examples: scripted by default, a real endpoint when configured.

Set `OPENAI_BASE_URL` / `OPENAI_API_KEY` (and `RAF_MODEL`) to run the examples on a real
OpenAI-compatible endpoint (a local server at `OPENAI_BASE_URL` needs no key); otherwise each
agent answers from a small script.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager

from raf import LlmProvider, ReactAgent
from raf.messages import ChatMessage
from raf.testing import ScriptedProvider, Turn


@asynccontextmanager
async def provider_for(script: Callable[[list[ChatMessage]], Turn]) -> AsyncGenerator[LlmProvider]:
    """A scripted provider playing `script`, or an OpenAI provider when an endpoint is set."""
    if not (os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_KEY")):
        yield ScriptedProvider(script)
        return
    from raf import OpenAIProvider, create_client

    async with create_client() as client:
        yield OpenAIProvider(client, os.environ.get("RAF_MODEL", "gpt-4o-mini"))


def last_text(messages: list[ChatMessage]) -> str:
    """The text of the last message with any text."""
    for message in reversed(messages):
        if message.text:
            return message.text
    return ""


__all__ = ["ReactAgent", "last_text", "provider_for"]
