"""Map raf's update stream onto ACP session updates, one prompt turn at a time.

| raf update                          | ACP session update                                         |
|-------------------------------------|------------------------------------------------------------|
| `TextDelta`                         | `agent_message_chunk` (a bold `**agent**:` header when a nested agent starts speaking; while one agent's message streams, another's is held and follows it as a paragraph of its own) |
| `ReasoningDelta`                    | `agent_thought_chunk`                                      |
| `ToolCallStart`                     | `tool_call`, status `pending`                              |
| `ToolCallArgs` + `ToolCallEnd`      | `tool_call_update`, status `in_progress`, `rawInput` the parsed arguments |
| `ToolCalled`                        | `tool_call_update`, status `completed` or `failed`, the result as content and `rawOutput` |
| `ExecutorInvoking` / `ExecutorInvoked` | `plan`: one entry per executor, `in_progress` then `completed` (`pending` while it waits) |

Every update carries the raf agent path in `_meta` (`{"raf": {"path": [...]}}`); tool call ids are
the agent path and the call id (`team/writer:call_1`), unique across the tree.

Example:
    >>> from raf.updates import TextDelta
    >>> turn = TurnUpdates()
    >>> [u.content.text for u in turn.map(TextDelta(text="hi", path=("writer",)))]
    ['hi']
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeVar

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    PlanEntryStatus,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
    UserMessageChunk,
)

from raf._defaults import new_list
from raf.messages import ChatMessage
from raf.updates import AgentPath, AgentUpdate

U = TypeVar("U", AgentMessageChunk, AgentThoughtChunk, ToolCallStart, ToolCallProgress)

SessionUpdate = (
    AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | UserMessageChunk
)
"""The ACP session updates raf sends (a user's message only when a session is loaded)."""


def path_meta(path: AgentPath) -> dict[str, Any]:
    """The `_meta` that names the raf agent an update came from."""
    return {"raf": {"path": list(path)}}


def tool_call_id(path: AgentPath, call_id: str) -> str:
    """An ACP tool call id unique across the agent tree."""
    return f"{'/'.join(path)}:{call_id}"


class TurnUpdates:
    """The ACP session updates of one prompt turn, fed raf updates in stream order."""

    def __init__(self) -> None:
        self._speaker: AgentPath | None = None
        self._speaking = False
        """Whether the speaker's message is still streaming."""
        self._held: dict[AgentPath, _Held] = {}
        """Text of agents that spoke while another's message streamed, in order."""
        self._authors: set[str] = set()
        self._arguments: dict[str, list[str]] = {}
        self._tools: dict[str, str] = {}
        self._running: set[str] = set()
        """Tool calls started and not ended."""
        self._plan: dict[tuple[AgentPath, str], PlanEntryStatus] = {}

    def map(self, update: AgentUpdate) -> list[SessionUpdate]:
        """The ACP updates that say `update` (none for the items ACP has no place for)."""
        path = update.path
        match update.type:
            case "text_delta":
                return [_with_path(u, path) for u in self._speak(path, update.text)]
            case "reasoning_delta":
                return [_with_path(update_agent_thought_text(update.text), path)]
            case "tool_call_start":
                key = tool_call_id(path, update.call_id)
                self._tools[key] = update.name
                self._running.add(key)
                self._arguments[key] = []
                return [_with_path(self._start(key, update.name, path), path)]
            case "tool_call_args":
                self._arguments.setdefault(tool_call_id(path, update.call_id), []).append(
                    update.delta
                )
                return []
            case "tool_call_end":
                key = tool_call_id(path, update.call_id)
                arguments = _parsed("".join(self._arguments.pop(key, [])))
                progress = update_tool_call(key, status="in_progress", raw_input=arguments)
                return [_with_path(progress, path)]
            case "tool_called":
                key = tool_call_id(path, update.call_id)
                started: list[SessionUpdate] = []
                if key not in self._tools:  # a call the stream did not announce
                    self._tools[key] = update.name
                    started.append(_with_path(self._start(key, update.name, path), path))
                self._running.discard(key)
                done = update_tool_call(
                    key,
                    status="failed" if update.is_error else "completed",
                    content=[tool_content(text_block(update.result))],
                    raw_output=update.result,
                )
                return [*started, _with_path(done, path)]
            case "executor_invoking":
                self._plan[(path, update.executor_id)] = "in_progress"
                return [self._plan_update()]
            case "executor_invoked":
                waiting = update.status == "waiting"
                self._plan[(path, update.executor_id)] = "pending" if waiting else "completed"
                return [self._plan_update()]
            case "message_completed":
                return [_with_path(u, p) for p, u in self._completed(path)]
            case _:
                return []

    def rest(self) -> list[AgentMessageChunk]:
        """The text still held (the turn ended while other agents' messages streamed)."""
        said: list[AgentMessageChunk] = []
        while self._held:
            path, held = next(iter(self._held.items()))
            del self._held[path]
            said.append(_with_path(self._turn_to(path, "".join(held.text)), path))
        self._speaking = False
        return said

    def closed(self) -> list[SessionUpdate]:
        """What ends the turn's running tool calls (`failed`) and plan entries (`completed`,
        the only end an ACP plan entry has) when the turn fails or is cancelled, so an editor
        shows nothing running after it."""
        ended: list[SessionUpdate] = [
            update_tool_call(key, status="failed") for key in sorted(self._running)
        ]
        self._running.clear()
        running = [k for k, status in self._plan.items() if status == "in_progress"]
        for key in running:
            self._plan[key] = "completed"
        if running:
            ended.append(self._plan_update())
        return ended

    def unsaid(self, messages: list[ChatMessage]) -> list[AgentMessageChunk]:
        """The response's messages from agents that streamed no text (a graph's outputs)."""
        return [
            self.say(f"**{m.author}**: {m.text}" if m.author else m.text)
            for m in messages
            if m.role == "assistant" and m.text and (m.author or "") not in self._authors
        ]

    def say(self, text: str) -> AgentMessageChunk:
        """A message of raf's own (a question, a structured value), set apart from the text."""
        separator = "\n\n" if self._speaker is not None else ""
        self._speaker = ()
        return update_agent_message_text(separator + text)

    def _speak(self, path: AgentPath, text: str) -> list[AgentMessageChunk]:
        self._authors.add(path[-1] if path else "")
        if path == self._speaker and self._speaking:
            return [update_agent_message_text(text)]
        if self._speaking or path in self._held:  # another agent's message streams: hold it
            self._held.setdefault(path, _Held()).text.append(text)
            return []
        self._speaking = True
        return [self._turn_to(path, text)]

    def _turn_to(self, path: AgentPath, text: str) -> AgentMessageChunk:
        """`text` of `path`, opening a paragraph of its own when another agent spoke last."""
        if path == self._speaker:
            return update_agent_message_text(text)
        header = "\n\n" if self._speaker is not None else ""
        self._speaker = path
        if len(path) > 1:  # a nested agent: say who speaks
            header += f"**{path[-1]}**: "
        return update_agent_message_text(header + text)

    def _completed(self, path: AgentPath) -> list[tuple[AgentPath, AgentMessageChunk]]:
        """An agent finished a message: when it was the speaker's, the held text follows."""
        held = self._held.get(path)
        if held is not None:
            held.done = True
            return []
        if path != self._speaker:
            return []
        self._speaking = False
        said: list[tuple[AgentPath, AgentMessageChunk]] = []
        while self._held and not self._speaking:
            after, held = next(iter(self._held.items()))
            del self._held[after]
            said.append((after, self._turn_to(after, "".join(held.text))))
            self._speaking = not held.done  # it streams on from here
        return said

    def _start(self, key: str, name: str, path: AgentPath) -> ToolCallStart:
        title = name if len(path) <= 1 else f"{name} ({path[-1]})"
        return start_tool_call(key, title, kind=_kind(name), status="pending")

    def _plan_update(self) -> AgentPlanUpdate:
        entries = [
            plan_entry("/".join((*path[1:], executor_id)), status=status)
            for (path, executor_id), status in self._plan.items()
        ]
        return update_plan(entries)


@dataclass(slots=True)
class _Held:
    """What an agent said while another agent's message streamed."""

    text: list[str] = field(default_factory=new_list)
    done: bool = False
    """Whether its message is complete."""


def _with_path(update: U, path: AgentPath) -> U:
    return update.model_copy(update={"field_meta": path_meta(path)})


def _parsed(arguments: str) -> Any:
    """The arguments as JSON when they parse, else the text the model sent."""
    if not arguments:
        return {}
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _kind(name: str) -> ToolKind:
    """The ACP tool kind of a raf workspace tool, `other` for the rest."""
    return _KINDS.get(name, "other")


_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_files": "read",
    "write_file": "edit",
    "search_files": "search",
}
