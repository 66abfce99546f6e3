"""What an AG-UI `RunAgentInput` adds to a thread, as raf messages.

AG-UI clients send the whole conversation on every run; raf keeps it in the session. So only
messages whose ids the thread has not seen become input: user text, system and developer
messages, assistant messages a client brings from elsewhere, and tool messages. Resume entries
answer open requests, each as a tool message whose `call_id` is the request id (raf's typed
answer); an entry naming no open request is refused. Reasoning and activity messages are the
client's own record and are skipped. The input's `context` (things the client wants the agent
to know) becomes a system message whenever it changes; frontend `tools` and shared `state`,
which raf agents do not take, are refused rather than dropped.

Example:
    >>> from ag_ui.core import RunAgentInput, UserMessage
    >>> run = RunAgentInput(thread_id="t", run_id="r", messages=[UserMessage(id="m1", content="hi")],
    ...     tools=[], context=[], state={}, forwarded_props={})
    >>> [m.text for m in new_input(run, seen=set()).messages]
    ['hi']
    >>> new_input(run, seen={"m1"}).messages
    []
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import cast

from ag_ui.core import (
    AssistantMessage,
    DeveloperMessage,
    Message,
    RunAgentInput,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserMessage,
)

from raf.messages import ChatMessage, Content, TextContent, ToolCallContent

__all__ = ["RunInput", "input_ids", "new_input"]


@dataclass(frozen=True, slots=True)
class RunInput:
    """What one AG-UI run gives its agent."""

    messages: list[ChatMessage]
    """The new messages: the context when it changed, then the thread's unseen messages, then
    the answers of the resume entries."""
    context: list[str]
    """The input's context, one JSON entry each (what the thread keeps once the run is done)."""


def input_ids(run: RunAgentInput) -> set[str]:
    """Ids of every message in the input."""
    return {message.id for message in run.messages}


def new_input(
    run: RunAgentInput,
    seen: Set[str],
    asked: Mapping[str, str] | None = None,
    context: Sequence[str] = (),
) -> RunInput:
    """The raf messages `run` adds to a thread that has seen the message ids `seen`, has the
    open requests `asked` (raf request id to the interrupt id the client knows) and took in
    `context` last.

    Raises:
        ValueError: for content raf cannot take (media parts, frontend tools, shared state),
            a resume entry that names no open request, or one that cancels a request (raf
            asks until it is answered).
    """
    _refuse_tools_and_state(run)
    entries = [json.dumps(c.model_dump(mode="json"), sort_keys=True) for c in run.context or ()]
    messages: list[ChatMessage] = []
    if entries and entries != list(context):
        lines = [f"- {c.description}: {c.value}" for c in run.context or ()]
        messages.append(ChatMessage.system("Context from the client:\n" + "\n".join(lines)))
    messages.extend(
        converted
        for message in run.messages
        if message.id not in seen
        for converted in [_convert(message)]
        if converted is not None
    )
    requests = {wire: raf_id for raf_id, wire in (asked or {}).items()}
    for entry in run.resume or ():
        request_id = requests.get(entry.interrupt_id)
        if request_id is None and entry.interrupt_id in (asked or {}):
            request_id = entry.interrupt_id  # raf's own id of an open request
        if request_id is None:
            open_ = sorted(requests)
            which = f"the open requests are {open_}" if open_ else "no request is open"
            raise ValueError(
                f"no open request {entry.interrupt_id!r} ({which}): answer an interrupt of "
                "the thread's last RUN_FINISHED by its id"
            )
        if entry.status != "resolved":
            raise ValueError(
                f"resume entry for {entry.interrupt_id!r} has status {entry.status!r}: raf cannot "
                "withdraw a request; answer it with status 'resolved' and a payload"
            )
        messages.append(ChatMessage.tool_result(request_id, json.dumps(entry.payload)))
    return RunInput(messages, entries or list(context))


def _refuse_tools_and_state(run: RunAgentInput) -> None:
    if run.tools:
        names = ", ".join(repr(t.name) for t in run.tools)
        raise ValueError(
            f"the input offers frontend tools ({names}): raf agents call only the tools they "
            "were built with, so a client's tools would never be called; send tools: []"
        )
    if run.state not in (None, {}, []):
        raise ValueError(
            "the input carries shared state: raf keeps an agent's state in its thread (the "
            "session) and takes none from the client; send state: {} and put what the agent "
            "should know in a message or in context"
        )


def _convert(message: Message) -> ChatMessage | None:
    match message:
        case UserMessage():
            return ChatMessage.user(_text(message.content, message.id))
        case SystemMessage() | DeveloperMessage():
            return ChatMessage.system(message.content)
        case ToolMessage():
            return ChatMessage.tool_result(
                message.tool_call_id,
                _text(message.content, message.id),
                is_error=message.error is not None,
            )
        case AssistantMessage():
            contents: list[Content] = []
            if message.content:
                contents.append(TextContent(text=message.content))
            for call in message.tool_calls or ():
                contents.append(
                    ToolCallContent(
                        call_id=call.id, name=call.function.name, arguments=call.function.arguments
                    )
                )
            return ChatMessage(role="assistant", contents=contents, author=message.name)
        case _:
            return None


def _text(content: object, message_id: str) -> str:
    if isinstance(content, str):
        return content
    parts = cast(list[object], content) if isinstance(content, list) else [content]
    texts: list[str] = []
    for part in parts:
        if not isinstance(part, TextPart):
            raise ValueError(
                f"message {message_id!r} has a {type(part).__name__}: raf takes text parts only"
            )
        texts.append(part.text)
    return "".join(texts)
