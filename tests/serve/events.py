"""Reading AG-UI events off an SSE body."""

from __future__ import annotations

import json
from typing import Any


def parse(body: str) -> list[dict[str, Any]]:
    """The JSON of every `data:` line of an SSE body, in order."""
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]


def types(events: list[dict[str, Any]]) -> list[str]:
    """The event types, in order."""
    return [e["type"] for e in events]


def text_of(events: list[dict[str, Any]], name: str) -> str:
    """The text every message of the agent `name` streamed."""
    ids = {
        e["messageId"]
        for e in events
        if e["type"] == "TEXT_MESSAGE_START" and e.get("name") == name
    }
    return "".join(
        e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT" and e["messageId"] in ids
    )
