"""`AguiMapper`: one run's agent stream translated into AG-UI events, in an order clients accept.

Items of the root agent carry no attribution; an item of a nested agent belongs to a
*subagent* (`SUBAGENT_STARTED` … `SUBAGENT_FINISHED`) named by its path from the root, opened
when its workflow node starts (or at its first item, for agents nested without a node) and
closed when that node ends or the run does. Each workflow node is a step (`STEP_*`), each
streamed message a `TEXT_MESSAGE_*` or `REASONING_*` bracket, each tool call `TOOL_CALL_*`.
A call of a frontend tool (the run's client tools) is a tool call like any other, left open
for the client to run: the request its agent waits on is no interrupt, and the client knows it
by the call's id.
Ids of tool calls and messages are minted here, unique across runs, so nested agents that reuse
a provider's call ids (`call_1` twice) never collide. docs/serving.md has the whole table.

Example:
    >>> from raf import FunctionAgent, TextDelta
    >>> mapper = AguiMapper(FunctionAgent("echo", lambda m: "hi"), thread_id="t", run_id="r")
    >>> [e.type.value for e in mapper.started()]
    ['RUN_STARTED']
    >>> [e.type.value for e in mapper.map(TextDelta(text="hi", path=("echo",)))]
    ['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT']
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic_core
from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    EventType,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from raf._trusted import trusted
from raf.agent import IAgent
from raf.errors import AgentError, AgentPath, UnansweredCalls, UnknownRequest, WorkflowError
from raf.messages import ChatMessage
from raf.react.client_calls import client_call_id
from raf.updates import AgentResponse, AgentUpdate, RequestInfoUpdate, Usage

__all__ = ["USAGE_EVENT", "AguiMapper"]


USAGE_EVENT = "raf.usage"
"""Name of the `CUSTOM` event carrying one `Usage` item: `{path, input_tokens, output_tokens}`."""


def _new_id() -> str:
    return uuid.uuid4().hex


@dataclass(slots=True)
class _Lane:
    """What one agent (one path) has open in the stream."""

    text: str | None = None
    """The open text message's id."""
    reasoning: str | None = None
    """The open reasoning message's id."""
    message: str | None = None
    """The assistant message the agent is writing: the parent of its tool calls."""


@dataclass(slots=True)
class _Call:
    wire_id: str
    open: bool


class AguiMapper:
    """Translates the updates of one run of `agent` into AG-UI events.

    Call `started()` first, `map(update)` for each update, then `finished(response)` or
    `failed(error)`; each returns the events to send, in order.

    Args:
        agent: the agent being run (the root of every item's path).
        thread_id: the AG-UI thread (the raf session id).
        run_id: the AG-UI run id.
        interrupt_id: the id the client gets for a request id (the request id itself when
            omitted); the server makes them unique across the turns of a thread.
        said: messages (`ChatMessage` JSON) the client was sent by earlier runs of the turn,
            which the response carries again and are not sent twice.
    """

    def __init__(
        self,
        agent: IAgent,
        *,
        thread_id: str,
        run_id: str,
        interrupt_id: Callable[[str], str] | None = None,
        said: Sequence[str] = (),
    ) -> None:
        self._agent = agent
        self._interrupt_id = interrupt_id or _same
        self._said = list(said)
        self._root: AgentPath = (agent.id,)
        self.thread_id = thread_id
        self.run_id = run_id
        self._lanes: dict[AgentPath, _Lane] = {}
        self._subagents: dict[AgentPath, str] = {}
        self._invocations: dict[AgentPath, int] = {}
        self._steps: dict[tuple[str | None, str], list[str]] = {}
        self._calls: dict[tuple[AgentPath, str], _Call] = {}
        self._requests: dict[str, tuple[AgentPath, str | None]] = {}
        self._tool_calls: dict[str, str | None] = {}
        """Requests that are frontend tool calls: their calls' ids, when streamed in this run."""
        self._agents: dict[AgentPath, IAgent | None] = {self._root: agent}
        self._completed: list[ChatMessage] = []
        self.usage = Usage()
        """Tokens of the run so far."""
        self.minted: set[str] = set()
        """Ids of the messages this run put into the thread (text, reasoning, tool results)."""

    # -- the run -------------------------------------------------------------------------------

    def started(self) -> list[BaseEvent]:
        """`RUN_STARTED`, declaring the protocol version."""
        return [
            RunStartedEvent(
                thread_id=self.thread_id, run_id=self.run_id, protocol_version=PROTOCOL_VERSION
            )
        ]

    def finished(self, response: AgentResponse) -> list[BaseEvent]:
        """Close everything still open, then `RUN_FINISHED` (an interrupt when it waits)."""
        waiting = response.status == "waiting"
        events = self._close_under(self._root, suspended=waiting)
        events.extend(self._close_steps())
        events.extend(self._unstreamed(response.messages))
        outcome = None
        asked = [r for r in response.pending if client_call_id(r.payload) is None]
        if waiting and asked:
            outcome = RunFinishedInterruptOutcome(
                interrupts=[self._interrupt(request) for request in asked]
            )
        events.append(
            RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                result=_jsonable(response.value),
                outcome=outcome,
                usage=self._token_usage(),
            )
        )
        return events

    def failed(
        self, error: BaseException, message: str | None = None, *, code: str | None = None
    ) -> list[BaseEvent]:
        """Close the open messages, tool calls and steps; `SUBAGENT_ERROR` for each open
        subagent on the failing path; then `RUN_ERROR` (saying `message`, else the error;
        its code `code`, else the error's class name). An error naming open requests names
        them by the ids the client knows (a frontend tool call's `toolCallId`, an interrupt's
        id), not raf's request ids.

        Its `metadata.path` names the agent where the error happened, from the root.
        """
        path: AgentPath = error.path if isinstance(error, AgentError) else ()
        if not path or path[0] != self._root[0]:
            path = self._root + path if path else self._root
        if isinstance(error, WorkflowError) and self._agent_at((*path, error.executor_id)):
            path = (*path, error.executor_id)  # the failing node is an agent: the error is its
        events: list[BaseEvent] = []
        for (call_path, call_id), call in list(self._calls.items()):
            if call.open:
                events.extend(self._call_end(call_path, call_id))
        for lane_path in list(self._lanes):
            events.extend(self._close_lane(lane_path))
        message = message or self._told(error) or type(error).__name__
        code = code or type(error).__name__
        for sub_path in sorted(self._subagents, key=len, reverse=True):
            if path[: len(sub_path)] == sub_path:
                run_id = self._subagents.pop(sub_path)
                events.extend(self._close_steps(run_id))
                events.append(
                    SubagentErrorEvent(subagent_run_id=run_id, message=message, code=code)
                )
        events.extend(self._close_steps())
        events.append(
            RunErrorEvent(
                message=message,
                code=code,
                usage=self._token_usage(),
                metadata={"path": list(path)},
            )
        )
        return events

    def _told(self, error: BaseException) -> str:
        """What the client is told of `error`: open requests named by the ids it knows."""
        if isinstance(error, UnansweredCalls):
            return error.naming([self.client_id(r) for r in error.request_ids], "toolCallId")
        if isinstance(error, UnknownRequest):
            pending = [self.client_id(r) for r in error.pending]
            return str(UnknownRequest(error.request_id, pending, path=error.path))
        return str(error)

    def _unstreamed(self, messages: list[ChatMessage]) -> list[BaseEvent]:
        """Text messages of the response that no agent streamed (a graph's outputs, say)."""
        events: list[BaseEvent] = []
        for message in messages:
            if message in self._completed or not message.text:
                continue
            said = message.model_dump_json()
            if said in self._said:
                self._said.remove(said)  # sent by an earlier run of the turn
                continue
            message_id = _new_id()
            self.minted.add(message_id)
            events.append(
                TextMessageStartEvent(
                    message_id=message_id, role="assistant", name=message.author or self._root[0]
                )
            )
            events.append(TextMessageContentEvent(message_id=message_id, delta=message.text))
            events.append(TextMessageEndEvent(message_id=message_id))
        return events

    # -- stream items --------------------------------------------------------------------------

    def map(self, update: AgentUpdate) -> list[BaseEvent]:
        """The events for one update."""
        path = update.path or self._root
        match update.type:
            case "text_delta":
                return self._text(path, update.text)
            case "reasoning_delta":
                return self._reasoning(path, update.text)
            case "tool_call_start":
                return self._call_start(path, update.call_id, update.name)
            case "tool_call_args":
                events = self._ensure_call(path, update.call_id, "")
                call = self._calls[(path, update.call_id)]
                owner = self._owner(path, events)
                events.append(
                    ToolCallArgsEvent(
                        tool_call_id=call.wire_id, delta=update.delta, subagent_run_id=owner
                    )
                )
                return events
            case "tool_call_end":
                events = self._ensure_call(path, update.call_id, "")
                events.extend(self._call_end(path, update.call_id))
                return events
            case "tool_called":
                return self._call_result(
                    path, update.call_id, update.name, update.result, update.is_error
                )
            case "usage":
                self.usage = self.usage + update
                return [
                    CustomEvent(
                        name=USAGE_EVENT,
                        value={
                            "path": list(path),
                            "input_tokens": update.input_tokens,
                            "output_tokens": update.output_tokens,
                        },
                    )
                ]
            case "executor_invoking":
                return self._step_start(path, update.executor_id)
            case "executor_invoked":
                return self._step_end(path, update.executor_id, update.status == "waiting")
            case "message_completed":
                self._completed.append(update.message)
                events = self._close_lane(path)
                self._lane(path).message = None
                return events
            case "request_info":
                opened: list[BaseEvent] = []
                self._requests[update.request_id] = (path, self._owner(path, opened))
                call_id = client_call_id(update.payload)
                if call_id is not None:
                    call = self._calls.get((path, call_id))
                    self._tool_calls[update.request_id] = call.wire_id if call else None
                return opened

    def client_id(self, request_id: str) -> str:
        """The id the client knows the request `request_id` by: the tool call's, for a call
        of a frontend tool streamed in this run; else the interrupt's."""
        return self._tool_calls.get(request_id) or self._interrupt_id(request_id)

    # -- text and reasoning --------------------------------------------------------------------

    def _text(self, path: AgentPath, delta: str) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        owner = self._owner(path, events)
        lane = self._lane(path)
        events.extend(self._close_reasoning(path, lane, owner))
        if lane.text is None:
            lane.text = _new_id()
            lane.message = lane.text
            self.minted.add(lane.text)
            events.append(
                TextMessageStartEvent(
                    message_id=lane.text, role="assistant", name=path[-1], subagent_run_id=owner
                )
            )
        events.append(text_content(lane.text, delta, owner))
        return events

    def _reasoning(self, path: AgentPath, delta: str) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        owner = self._owner(path, events)
        lane = self._lane(path)
        events.extend(self._close_text(lane, owner))
        if lane.reasoning is None:
            lane.reasoning = _new_id()
            self.minted.add(lane.reasoning)
            events.append(ReasoningStartEvent(message_id=lane.reasoning, subagent_run_id=owner))
            events.append(
                ReasoningMessageStartEvent(message_id=lane.reasoning, subagent_run_id=owner)
            )
        events.append(
            ReasoningMessageContentEvent(
                message_id=lane.reasoning, delta=delta, subagent_run_id=owner
            )
        )
        return events

    def _close_text(self, lane: _Lane, owner: str | None) -> list[BaseEvent]:
        if lane.text is None:
            return []
        message_id, lane.text = lane.text, None
        return [TextMessageEndEvent(message_id=message_id, subagent_run_id=owner)]

    def _close_reasoning(self, path: AgentPath, lane: _Lane, owner: str | None) -> list[BaseEvent]:
        if lane.reasoning is None:
            return []
        message_id, lane.reasoning = lane.reasoning, None
        return [
            ReasoningMessageEndEvent(message_id=message_id, subagent_run_id=owner),
            ReasoningEndEvent(message_id=message_id, subagent_run_id=owner),
        ]

    def _close_lane(self, path: AgentPath) -> list[BaseEvent]:
        lane = self._lanes.get(path)
        if lane is None:
            return []
        owner = self._subagents.get(path)
        return [*self._close_reasoning(path, lane, owner), *self._close_text(lane, owner)]

    # -- tool calls ----------------------------------------------------------------------------

    def _call_start(self, path: AgentPath, call_id: str, name: str) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        owner = self._owner(path, events)
        lane = self._lane(path)
        events.extend(self._close_reasoning(path, lane, owner))
        events.extend(self._close_text(lane, owner))
        if lane.message is None:
            lane.message = _new_id()
            self.minted.add(lane.message)
        call = _Call(_new_id(), open=True)
        self._calls[(path, call_id)] = call
        events.append(
            ToolCallStartEvent(
                tool_call_id=call.wire_id,
                tool_call_name=name,
                parent_message_id=lane.message,
                subagent_run_id=owner,
            )
        )
        return events

    def _ensure_call(self, path: AgentPath, call_id: str, name: str) -> list[BaseEvent]:
        """Start a call that streams a part without its start (so the order stays valid)."""
        if (path, call_id) in self._calls:
            return []
        return self._call_start(path, call_id, name or "tool")

    def _call_end(self, path: AgentPath, call_id: str) -> list[BaseEvent]:
        call = self._calls[(path, call_id)]
        if not call.open:
            return []
        call.open = False
        return [ToolCallEndEvent(tool_call_id=call.wire_id, subagent_run_id=self._owner(path, []))]

    def _call_result(
        self, path: AgentPath, call_id: str, name: str, result: str, is_error: bool
    ) -> list[BaseEvent]:
        events = self._ensure_call(path, call_id, name)
        events.extend(self._call_end(path, call_id))
        call = self._calls.pop((path, call_id))
        message_id = _new_id()
        self.minted.add(message_id)
        events.append(
            ToolCallResultEvent(
                message_id=message_id,
                tool_call_id=call.wire_id,
                content=result,
                role="tool",
                subagent_run_id=self._owner(path, events),
                metadata={"is_error": True} if is_error else None,
            )
        )
        return events

    # -- steps and subagents -------------------------------------------------------------------

    def _step_start(self, path: AgentPath, executor_id: str) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        owner = self._owner(path, events)
        names = self._steps.setdefault((owner, executor_id), [])
        name = executor_id if not names else f"{executor_id}#{len(names) + 1}"
        names.append(name)
        events.append(StepStartedEvent(step_name=name, subagent_run_id=owner))
        child = (*path, executor_id)
        if child not in self._subagents and self._agent_at(child) is not None:
            events.extend(self._open_subagent(child))
        return events

    def _step_end(self, path: AgentPath, executor_id: str, waiting: bool) -> list[BaseEvent]:
        events = self._close_under((*path, executor_id), suspended=waiting)
        owner = self._owner(path, events)
        names = self._steps.get((owner, executor_id))
        if names:
            events.append(StepFinishedEvent(step_name=names.pop(), subagent_run_id=owner))
        return events

    def _close_steps(self, of: str | None = "") -> list[BaseEvent]:
        """Finish the steps still open (a node that never reported its end): those of the
        subagent run `of` (None: the root's), or all of them."""
        events: list[BaseEvent] = []
        for (owner, _), names in self._steps.items():
            if of != "" and owner != of:
                continue
            events.extend(StepFinishedEvent(step_name=n, subagent_run_id=owner) for n in names)
            names.clear()
        return events

    def _owner(self, path: AgentPath, events: list[BaseEvent]) -> str | None:
        """The subagent run id items at `path` belong to, opening it (into `events`) if new."""
        if len(path) <= len(self._root):
            return None
        found = self._subagents.get(path)
        if found is not None:
            return found
        events.extend(self._open_subagent(path))
        return self._subagents[path]

    def _open_subagent(self, path: AgentPath) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        parent = self._owner(path[:-1], events)
        count = self._invocations.get(path, 0) + 1
        self._invocations[path] = count
        run_id = f"{self.run_id}/{'/'.join(path)}#{count}"
        self._subagents[path] = run_id
        agent = self._agent_at(path)
        metadata: dict[str, Any] = {"path": list(path)}
        if agent is not None:
            metadata["kind"] = agent.metadata.kind
        events.append(
            SubagentStartedEvent(
                subagent_run_id=run_id,
                name="/".join(path),
                description=(agent.metadata.description or None) if agent is not None else None,
                parent_subagent_run_id=parent,
                metadata=metadata,
            )
        )
        return events

    def _close_under(self, prefix: AgentPath, *, suspended: bool) -> list[BaseEvent]:
        """Close what is open at `prefix` and below it; finish its subagents, deepest first."""
        events: list[BaseEvent] = []
        size = len(prefix)
        for (path, call_id), call in list(self._calls.items()):
            if path[:size] == prefix and call.open:
                events.extend(self._call_end(path, call_id))
        for path in list(self._lanes):
            if path[:size] == prefix:
                events.extend(self._close_lane(path))
                del self._lanes[path]
        for path in sorted(self._subagents, key=len, reverse=True):
            if path[:size] != prefix or len(path) <= len(self._root):
                continue
            run_id = self._subagents.pop(path)
            outcome = None
            if suspended:
                asked = [
                    self._interrupt_id(rid)
                    for rid, (p, _) in self._requests.items()
                    if p == path and rid not in self._tool_calls
                ]
                outcome = SubagentFinishedSuspendedOutcome(interrupt_ids=asked or None)
            events.append(SubagentFinishedEvent(subagent_run_id=run_id, outcome=outcome))
        return events

    # -- helpers -------------------------------------------------------------------------------

    def _lane(self, path: AgentPath) -> _Lane:
        lane = self._lanes.get(path)
        if lane is None:
            lane = self._lanes[path] = _Lane()
        return lane

    def _agent_at(self, path: AgentPath) -> IAgent | None:
        if path in self._agents:
            return self._agents[path]
        found: IAgent | None = None
        if len(path) > 1:
            *above, name = path
            parent = self._agent_at(tuple(above))
            found = parent.get_subagent(name) if parent is not None else None
        self._agents[path] = found
        return found

    def _interrupt(self, request: RequestInfoUpdate) -> Interrupt:
        path, owner = self._requests.get(request.request_id, (request.path, None))
        payload = _jsonable(request.payload)
        return Interrupt(
            id=self._interrupt_id(request.request_id),
            reason="input_required",
            message=_prompt(payload),
            subagent_run_id=owner,
            metadata={"path": list(path or self._root), "payload": payload},
        )

    def _token_usage(self) -> list[TokenUsage] | None:
        if self.usage.total_tokens == 0:
            return None
        return [
            TokenUsage(
                input_tokens=self.usage.input_tokens,
                output_tokens=self.usage.output_tokens,
                total_tokens=self.usage.total_tokens,
            )
        ]


def text_content(message_id: str, delta: str, owner: str | None) -> TextMessageContentEvent:
    """`TextMessageContentEvent(message_id=message_id, delta=delta, subagent_run_id=owner)`,
    built without validating again (`raf._trusted`): the mapper made the ids and the delta
    is a `TextDelta`'s checked text. One is made per streamed token."""
    values = {
        "type": EventType.TEXT_MESSAGE_CONTENT,
        "timestamp": None,
        "raw_event": None,
        "metadata": None,
        "subagent_run_id": owner,
        "message_id": message_id,
        "delta": delta,
    }
    event = trusted(TextMessageContentEvent, values, {"message_id", "delta", "subagent_run_id"})
    object.__setattr__(event, "__pydantic_extra__", {})  # the model allows extra fields
    return event


def _same(request_id: str) -> str:
    return request_id


def _jsonable(value: Any) -> Any:
    return pydantic_core.to_jsonable_python(value, fallback=repr)


def _prompt(payload: Any) -> str:
    """A human-readable question from a request's payload."""
    if isinstance(payload, str):
        return payload
    if isinstance(payload, dict):
        for key in ("prompt", "question", "message"):
            text = payload.get(key)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(text, str):
                return text
    return json.dumps(payload, ensure_ascii=False)
