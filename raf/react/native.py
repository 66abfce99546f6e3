"""Native structured output: a JSON-schema response format instead of the `resolve` tool.

With `output_mode="native"` every model call carries a strict `json_schema` response format
(servers such as llama.cpp, Ollama and vLLM constrain generation to it) and the text answer is
validated against the output schema; an invalid answer gets a correction message.

Example:
    >>> from pydantic import BaseModel
    >>> class Answer(BaseModel):
    ...     city: str
    ...     note: str | None = None
    >>> native_format(Answer)["json_schema"]["schema"]["required"]
    ['city', 'note']
    >>> check_answer(Answer, '```json\\n{"city": "Oslo"}\\n```')[0]
    Answer(city='Oslo', note=None)
"""

from __future__ import annotations

import copy
import re
from typing import Any, cast

from pydantic import BaseModel

from raf.messages import ChatMessage
from raf.react.resolve import validate_output

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def json_answer(text: str) -> str:
    """The JSON of a text answer: the text, or the inside of its ```json fence."""
    fenced = _FENCE.match(text)
    return fenced.group(1) if fenced else text


def response_format(schema: type[BaseModel], *, strict: bool = False) -> dict[str, Any]:
    """The chat-completions `json_schema` response format for `schema`.

    With `strict`, the JSON schema is put in the form strict structured output requires.
    """
    name = _NAME_UNSAFE.sub("_", schema.__name__)[:64] or "output"
    body = schema.model_json_schema()
    return {
        "type": "json_schema",
        "json_schema": {
            "name": name,
            "schema": strict_schema(body) if strict else body,
            "strict": strict,
        },
    }


def native_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The strict response format native mode sends on every call."""
    return response_format(schema, strict=True)


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a JSON schema in strict form: every object closed, all its properties required.

    Optional fields stay nullable (pydantic writes them as `anyOf [..., null]`), so making
    them required only asks the model to write `null`; `null` defaults are dropped.
    """
    strict = copy.deepcopy(schema)
    _close(strict)
    return strict


def _close(node: object) -> None:
    if isinstance(node, list):
        for item in cast(list[object], node):
            _close(item)
        return
    if not isinstance(node, dict):
        return
    schema = cast(dict[str, Any], node)
    if "default" in schema and schema["default"] is None:
        del schema["default"]
    properties = schema.get("properties")
    if isinstance(properties, dict) or schema.get("type") == "object":
        props = cast(dict[str, Any], properties or {})
        schema["additionalProperties"] = False
        schema["required"] = list(props)
        for sub in props.values():
            _close(sub)
    for key in ("items", "anyOf", "allOf", "oneOf", "prefixItems"):
        if key in schema:
            _close(schema[key])
    for key in ("$defs", "definitions"):
        defs = schema.get(key)
        if isinstance(defs, dict):
            for sub in cast(dict[str, Any], defs).values():
                _close(sub)


def check_answer(schema: type[BaseModel], text: str) -> tuple[Any, ChatMessage | None]:
    """Validate a native-mode text answer: (the value, None), or (None, a correction message)."""
    value, problem = validate_output(schema, json_answer(text))
    if value is not None:
        return value, None
    return None, ChatMessage.user(
        f"Your answer is not a JSON object matching the required schema: {problem}. "
        "Answer again with only the corrected JSON object."
    )
