"""What an AG-UI `RunAgentInput` adds to a thread, as raf messages.

AG-UI clients send the whole conversation on every run; raf keeps it in the session. So only
messages whose ids the thread has not seen become input: user text, system and developer
messages, assistant messages a client brings from elsewhere, and tool messages. Resume entries
answer open requests, each as a tool message whose `call_id` is the request id (raf's typed
answer); an entry naming no open request is refused. Reasoning and activity messages are the
client's own record and are skipped. The input's `context` (things the client wants the agent
to know) becomes a system message whenever it changes; so does its shared `state`, which the
thread keeps: a run whose input carries none (an empty one) uses the thread's, and each run
tells the client the state it uses with a `STATE_SNAPSHOT` (raf agents read it; they do not
change it).

Frontend `tools` become the run's client tools (`RunOptions.client_tools`): every ReAct agent
in the tree offers them to its model; a call of one streams as `TOOL_CALL_*` and the run ends
with it open, for the client to run. The client's `ToolMessage` for that call (its
`tool_call_id` is the one `TOOL_CALL_START` gave) answers the request raf's agent waits on, so
the model sees it as the call's result; one with an `error` is an error result (its text the
content, then the error), which the model sees marked as one.

Example:
    >>> from ag_ui.core import RunAgentInput, UserMessage
    >>> run = RunAgentInput(thread_id="t", run_id="r", messages=[UserMessage(id="m1", content="hi")],
    ...     tools=[], context=[], state={}, forwarded_props={})
    >>> [m.text for m in new_input(run, seen=set()).messages]
    ['hi']
    >>> new_input(run, seen={"m1"}).messages
    []
    >>> from ag_ui.core import Tool
    >>> tool = Tool(name="show_map", description="Show a city.", parameters={"type": "object"})
    >>> [t.name for t in new_input(run.model_copy(update={"tools": [tool]}), seen=set()).tools]
    ['show_map']
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, cast

from ag_ui.core import (
    AssistantMessage,
    DeveloperMessage,
    Message,
    RunAgentInput,
    SystemMessage,
    TextPart,
    Tool,
    ToolMessage,
    UserMessage,
)
from pydantic import ValidationError

from raf.messages import ChatMessage, Content, TextContent, ToolCallContent
from raf.tools.definition import ToolDefinition

__all__ = ["RunInput", "input_ids", "new_input"]


@dataclass(frozen=True, slots=True)
class RunInput:
    """What one AG-UI run gives its agent."""

    messages: list[ChatMessage]
    """The new messages: the context and the shared state when they changed, then the
    thread's unseen messages, then the answers of the resume entries."""
    context: list[str]
    """The input's context, one JSON entry each (what the thread keeps once the run is done)."""
    state: Any = None
    """The shared state the run uses: the input's, or the thread's when the input has none."""
    tools: tuple[ToolDefinition, ...] = ()
    """The input's frontend tools: the run's client tools (`RunOptions.client_tools`)."""


def input_ids(run: RunAgentInput) -> set[str]:
    """Ids of every message in the input."""
    return {message.id for message in run.messages}


def new_input(
    run: RunAgentInput,
    seen: Set[str],
    asked: Mapping[str, str] | None = None,
    context: Sequence[str] = (),
    state: Any = None,
) -> RunInput:
    """The raf messages `run` adds to a thread that has seen the message ids `seen`, has the
    open requests `asked` (raf request id to the id the client knows: an interrupt's, or a
    frontend tool call's) and took in `context` and the shared `state` last.

    Raises:
        ValueError: for content raf cannot take (media parts, a tool whose name a model
            cannot call), a resume entry that names no open request, or one that cancels a
            request (raf asks until it is answered).
    """
    tools = tuple(_definition(tool) for tool in run.tools or ())
    requests = {wire: raf_id for raf_id, wire in (asked or {}).items()}
    entries = [json.dumps(c.model_dump(mode="json"), sort_keys=True) for c in run.context or ()]
    messages: list[ChatMessage] = []
    if entries and entries != list(context):
        lines = [f"- {c.description}: {c.value}" for c in run.context or ()]
        messages.append(ChatMessage.system("Context from the client:\n" + "\n".join(lines)))
    shared = state
    if run.state not in (None, {}, []):
        shared = run.state
        if _json(shared) != _json(state):
            said = "Shared state from the client (JSON):\n" + _json(shared)
            messages.append(ChatMessage.system(said))
    messages.extend(
        converted
        for message in run.messages
        if message.id not in seen
        for converted in [_convert(message, requests)]
        if converted is not None
    )
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
    return RunInput(messages, entries or list(context), shared, tools)


def _definition(tool: Tool) -> ToolDefinition:
    parameters: object = tool.parameters
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise ValueError(
            f"frontend tool {tool.name!r} has parameters that are not a JSON schema object: "
            'send {"type": "object", "properties": {...}}'
        )
    try:
        return ToolDefinition(
            name=tool.name,
            description=tool.description,
            parameters=cast(dict[str, Any], parameters),
        )
    except ValidationError:
        raise ValueError(
            f"frontend tool {tool.name!r} has a name a model cannot call: use 1 to 64 "
            "letters, digits, '_' or '-'"
        ) from None


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _convert(message: Message, requests: Mapping[str, str]) -> ChatMessage | None:
    match message:
        case UserMessage():
            return ChatMessage.user(_text(message.content, message.id))
        case SystemMessage() | DeveloperMessage():
            return ChatMessage.system(message.content)
        case ToolMessage():
            # A frontend tool's result answers the request the calling agent waits on.
            # One with an `error` is an error result, its text the content and the error.
            said = _text(message.content, message.id)
            error = message.error
            if error and error not in said:
                said = f"{said}\n{error}" if said else error
            return ChatMessage.tool_result(
                requests.get(message.tool_call_id, message.tool_call_id),
                said,
                is_error=error is not None,
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
