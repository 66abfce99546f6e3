"""Structured output on servers that refuse a `json_schema` response format.

Some OpenAI-compatible servers answer `response_format={"type": "json_schema", ...}` with HTTP
400 but do accept `{"type": "json_object"}` (JSON mode). The request is then made again in
JSON mode, with the schema written into the system message so that the model still knows the
shape to produce; the answer is validated against the schema as before.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from raf.errors import ProviderError
from raf.messages import ChatMessage

REFUSAL_STATUSES = frozenset({400, 422})
"""HTTP statuses with which servers refuse a response format they do not support."""

JSON_OBJECT: dict[str, Any] = {"type": "json_object"}


def is_json_schema(response_format: dict[str, Any] | None) -> bool:
    """True for a `json_schema` response format."""
    return response_format is not None and response_format.get("type") == "json_schema"


def in_json_mode(
    messages: Sequence[ChatMessage], response_format: dict[str, Any]
) -> list[ChatMessage]:
    """`messages` with the schema of `response_format` added to the system message."""
    spec = cast(dict[str, Any], response_format.get("json_schema") or {})
    schema = json.dumps(spec.get("schema", {}), separators=(",", ":"))
    hint = f"Answer with one JSON object that matches this JSON schema: {schema}"
    if messages and messages[0].role == "system":
        first = ChatMessage.system(f"{messages[0].text}\n\n{hint}")
        return [first, *messages[1:]]
    return [ChatMessage.system(hint), *messages]


def refused(model: str, base_url: str, error: ProviderError) -> ProviderError:
    """The error for a server that refused both the `json_schema` and `json_object` formats."""
    return ProviderError(
        f"the server at {base_url} cannot constrain model {model!r} to a JSON schema: it refused "
        f"response_format json_schema and json_object alike ({error}); use output_mode='tool' "
        "(the resolve tool) or a server with structured output (llama.cpp, Ollama, vLLM)",
        model=model,
        status=error.status,
        attempts=error.attempts,
    )
