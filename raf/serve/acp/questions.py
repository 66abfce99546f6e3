"""Put a waiting run's request to an ACP user.

A request whose payload offers choices — `{"options": [...]}` or `{"choices": [...]}`, a list of
strings, with an optional `"question"` (or `"prompt"`) — fits the client's permission request: one
option per choice, and the chosen one's text answers it. Any other request is asked as an agent
message, and the user's next prompt answers it.

Example:
    >>> choices_of({"question": "Publish?", "options": ["approve", "reject"]})
    ['approve', 'reject']
    >>> [o.kind for o in permission_options(["approve", "reject"])]
    ['allow_once', 'reject_once']
    >>> choices_of("What title?") is None
    True
"""

from __future__ import annotations

import json
from typing import Any, cast

from acp.schema import PermissionOption, PermissionOptionKind

from raf.updates import RequestInfoUpdate

_REFUSALS = frozenset({"reject", "deny", "no", "decline", "refuse", "cancel", "abort", "stop"})


def choices_of(payload: Any) -> list[str] | None:
    """The choices a request offers, or None when it asks for free text."""
    if not isinstance(payload, dict):
        return None
    fields = cast(dict[str, Any], payload)
    for key in ("options", "choices"):
        offered = fields.get(key)
        if isinstance(offered, list) and offered:
            items = cast(list[Any], offered)
            if all(isinstance(c, str) and c for c in items):
                return cast(list[str], items)
    return None


def permission_options(choices: list[str]) -> list[PermissionOption]:
    """One ACP permission option per choice; refusals (`reject`, `no`, ...) as such."""
    return [
        PermissionOption(option_id=str(index), name=choice, kind=_kind(choice))
        for index, choice in enumerate(choices)
    ]


def question_of(request: RequestInfoUpdate) -> str:
    """A one-line title for the request: its question, or its payload as JSON."""
    payload = request.payload
    if isinstance(payload, str):
        return payload
    if isinstance(payload, dict):
        fields = cast(dict[str, Any], payload)
        for key in ("question", "prompt", "message"):
            if isinstance(fields.get(key), str):
                return cast(str, fields[key])
    return json.dumps(payload, ensure_ascii=False, default=str)


def as_message(request: RequestInfoUpdate) -> str:
    """The request asked as a message, saying how to answer."""
    asker = request.path[-1] if request.path else "the workflow"
    return f"**{asker} asks** (`{request.request_id}`): {question_of(request)}\n\nReply to answer."


def _kind(choice: str) -> PermissionOptionKind:
    return "reject_once" if choice.strip().lower() in _REFUSALS else "allow_once"
