"""What a provider streams, checked where raf takes it in.

A provider of one's own (any `LlmProvider`) that yields something else than the events of
`raf.providers.base`, or one with a field of the wrong type, fails the call with a
`ProviderError` naming the model, the event, the field and the agent's path, instead of an
error from deep inside raf. Past this check raf builds its stream items from the events
without validating them again.

Example:
    >>> from raf.errors import ProviderError
    >>> try:
    ...     check_event(UsageReport(input_tokens="3", output_tokens=1), "my-model", ("a",))
    ... except ProviderError as error:
    ...     print(str(error).split(";")[0])
    model 'my-model' streamed a UsageReport whose input_tokens is '3' (a str), not an int
"""

from __future__ import annotations

from raf.errors import AgentPath, ProviderError
from raf.messages import ToolCallContent
from raf.providers.base import (
    Completion,
    ReasoningChunk,
    TextChunk,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)

__all__ = ["check_event"]

_EVENTS = (
    "an LlmProvider yields TextChunk(text), ReasoningChunk(text), ToolCallStarted(call_id, "
    "name), ToolCallDelta(call_id, delta) and UsageReport(input_tokens, output_tokens), then "
    "one Completion (see raf.providers.base)"
)

# Each event's fields and the type each must have ("int" never takes a bool).
_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {
    TextChunk: (("text", "str"),),
    ReasoningChunk: (("text", "str"),),
    ToolCallStarted: (("call_id", "str"), ("name", "str")),
    ToolCallDelta: (("call_id", "str"), ("delta", "str")),
    UsageReport: (("input_tokens", "int"), ("output_tokens", "int")),
    Completion: (
        ("text", "str"),
        ("reasoning", "str"),
        ("tool_calls", "list of ToolCallContent"),
        ("input_tokens", "int"),
        ("output_tokens", "int"),
        ("finish_reason", "str or None"),
        ("model", "str or None"),
        ("response_id", "str or None"),
    ),
}


def check_event(event: object, model: str, path: AgentPath) -> None:
    """Raise `ProviderError` unless `event` is a provider event with fields of their types."""
    # The events of every call, their fields checked by exact types first (a few instructions).
    if isinstance(event, (TextChunk, ReasoningChunk)):
        if type(event.text) is str:
            return
    elif isinstance(event, ToolCallDelta):
        if type(event.call_id) is str and type(event.delta) is str:
            return
    elif isinstance(event, ToolCallStarted):
        if type(event.call_id) is str and type(event.name) is str:
            return
    elif isinstance(event, UsageReport):
        if type(event.input_tokens) is int and type(event.output_tokens) is int:
            return
    elif isinstance(event, Completion):
        calls = event.tool_calls
        if (
            type(event.text) is str
            and type(event.reasoning) is str
            and type(event.input_tokens) is int
            and type(event.output_tokens) is int
            and (event.finish_reason is None or type(event.finish_reason) is str)
            and (event.model is None or type(event.model) is str)
            and (event.response_id is None or type(event.response_id) is str)
            and type(calls) is list
            and (not calls or all(type(c) is ToolCallContent for c in calls))
        ):
            return
    _check_fields(event, model, path)


def _check_fields(event: object, model: str, path: AgentPath) -> None:
    """The check of any event, field by field, with what is wrong in the error."""
    fields = _FIELDS.get(type(event))
    if fields is None:
        fields = next((f for kind, f in _FIELDS.items() if isinstance(event, kind)), None)
    if fields is None:
        raise ProviderError(
            f"model {model!r} streamed {_shown(event)}, which is not a provider event; {_EVENTS}",
            model=model,
            path=path,
        )
    for name, expected in fields:
        value = getattr(event, name)
        if not _fits(value, expected):
            raise ProviderError(
                f"model {model!r} streamed a {type(event).__name__} whose {name} is "
                f"{_shown(value)}, not {_article(expected)}; {_EVENTS}",
                model=model,
                path=path,
            )


def _fits(value: object, expected: str) -> bool:
    if expected == "str":
        return isinstance(value, str)
    if expected == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "str or None":
        return value is None or isinstance(value, str)
    return isinstance(value, list) and all(
        isinstance(item, ToolCallContent)
        for item in value  # pyright: ignore[reportUnknownVariableType]
    )


def _shown(value: object) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({_article(type(value).__name__)})"


def _article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in ("a", "e", "i", "o", "u") else f"a {noun}"
