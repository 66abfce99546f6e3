"""Render a run's stream as a live tree of agents with their text and tool calls (rich).

Each agent's reasoning, tool calls, text and nested agents are drawn in the order they
happened; an agent that a pattern runs again (a group chat's or Magentic's rounds, a handoff
coming back) gets a branch per turn, labelled with its round; a legend under the tree says
what the markers mean.

Example:
    >>> from raf.updates import TextDelta
    >>> view = LiveTree("team")
    >>> view.apply(TextDelta(text="hi", path=("team", "writer")))
    >>> view.text_of(("team", "writer"))
    'hi'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text
from rich.tree import Tree

from raf._defaults import new_dict, new_list
from raf.agent import IAgent
from raf.session import Session
from raf.updates import AgentPath, AgentResponse, AgentUpdate, RequestInfoUpdate

_PREVIEW = 240

Marker = Literal["reasoning", "tool", "failed", "round", "tokens"]

_LEGEND: dict[Marker, str] = {
    "reasoning": "… reasoning",
    "tool": "⚙ tool ◌ running ✓ done",
    "failed": "✗ failed",
    "round": "round N: the Nth turn",
    "tokens": "tokens: model usage",
}
"""What each marker means, shown under the tree for the markers it holds."""


@dataclass(slots=True)
class _Entry:
    """One line of an agent's branch, or a nested agent's branch."""

    kind: Literal["reasoning", "text", "tool", "child"]
    parts: list[str] = field(default_factory=new_list)
    child: _Node | None = None


@dataclass(slots=True)
class _Node:
    """One turn of one agent: what it did, in order."""

    id: str
    entries: list[_Entry] = field(default_factory=new_list)
    tools: dict[str, _Entry] = field(default_factory=new_dict)
    current: dict[str, _Node] = field(default_factory=new_dict)
    """Each child's latest turn, where its updates go."""
    again: set[str] = field(default_factory=set[str])
    """Children started again: their next update opens a new turn."""
    tokens: int = 0
    open_text: bool = False

    def child(self, child_id: str) -> _Node:
        """The turn of `child_id` its updates belong to (a new one when it started again)."""
        turn = self.current.get(child_id)
        if turn is None or child_id in self.again:
            self.again.discard(child_id)
            turn = self.current[child_id] = _Node(child_id)
            self.entries.append(_Entry("child", child=turn))
            self.open_text = False
        return turn

    def write(self, kind: Literal["reasoning", "text"], text: str) -> None:
        """Add streamed `text`, continuing the last line when it is of the same kind."""
        last = self.entries[-1] if self.entries else None
        if last is not None and last.kind == kind and (kind == "reasoning" or self.open_text):
            last.parts.append(text)
        else:
            self.entries.append(_Entry(kind, [text]))
        self.open_text = kind == "text"


class LiveTree:
    """Accumulates updates by agent path and renders them as a `rich` tree."""

    def __init__(self, root_id: str) -> None:
        self._root_id = root_id
        self._root = _Node(root_id)
        self._shown: set[Marker] = set()
        self.requests: list[RequestInfoUpdate] = []
        """The requests the run waits on, in the order they came."""

    def _node(self, path: AgentPath) -> _Node:
        node = self._root
        for part in path[1:]:
            node = node.child(part)
        return node

    def apply(self, update: AgentUpdate) -> None:
        """Fold one update into the view."""
        node = self._node(update.path)
        match update.type:
            case "text_delta":
                node.write("text", update.text)
            case "reasoning_delta":
                node.write("reasoning", update.text)
                self._shown.add("reasoning")
            case "tool_call_start":
                entry = _Entry("tool", [f"{update.name} ◌"])
                node.tools[update.call_id] = entry
                node.entries.append(entry)
                node.open_text = False
                self._shown.add("tool")
            case "tool_called":
                mark = "✗" if update.is_error else "✓"
                line = f"{update.name} {mark} {_short(update.result, 60)}"
                entry = node.tools.get(update.call_id)
                if entry is None:
                    node.entries.append(_Entry("tool", [line]))
                else:
                    entry.parts[:] = [line]
                self._shown.update(("tool", "failed") if update.is_error else ("tool",))
            case "usage":
                node.tokens += update.total_tokens
                self._shown.add("tokens")
            case "executor_invoking" if update.executor_id in node.current:
                node.again.add(update.executor_id)
                self._shown.add("round")
            case "message_completed":
                node.open_text = False
            case "request_info":
                self.requests.append(update)
            case _:
                pass

    def text_of(self, path: AgentPath) -> str:
        """All text streamed by the agent at `path` (in its latest turn)."""
        node: _Node | None = self._root
        for part in path[1:]:
            node = node.current.get(part) if node is not None else None
        if node is None:
            return ""
        return "".join(p for e in node.entries if e.kind == "text" for p in e.parts)

    def render(self) -> RenderableType:
        """The current view: the tree, what the run waits for, and the legend."""
        tree = Tree(Text(self._root_id, style="bold"))
        self._render_into(tree, self._root)
        parts: list[RenderableType] = [tree]
        if self.requests:
            asked = (f"{r.request_id}: {r.payload!r}" for r in self.requests)
            parts.append(Text("waiting for: " + "; ".join(asked), style="yellow"))
        legend = [text for marker, text in _LEGEND.items() if marker in self._shown]
        if legend:
            parts.append(Text("   ".join(legend), style="dim"))
        return Group(*parts)

    def _render_into(self, tree: Tree, node: _Node) -> None:
        turns: dict[str, int] = {}
        for entry in node.entries:
            if entry.child is not None:
                turns[entry.child.id] = turns.get(entry.child.id, 0) + 1
        rounds = any(count > 1 for count in turns.values())
        turn = 0
        for entry in node.entries:
            text = "".join(entry.parts)
            if entry.child is not None:
                turn += 1
                self._render_into(
                    tree.add(_label(entry.child, turn if rounds else None)), entry.child
                )
            elif entry.kind == "reasoning":
                tree.add(Text("… " + _short(text, _PREVIEW), style="dim italic"))
            elif entry.kind == "tool":
                tree.add(Text("⚙ " + text, style="red" if " ✗ " in text else "cyan"))
            elif text:
                tree.add(Text(_short(text, _PREVIEW)))


def _label(node: _Node, round_number: int | None) -> Text:
    label = Text(node.id, style="bold green")
    if round_number is not None:
        label.append(f" · round {round_number}", style="green")
    if node.tokens:
        label.append(f"  {node.tokens} tokens", style="dim")
    return label


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


async def stream_live(
    agent: IAgent, prompt: str, console: Console, session: Session | None = None
) -> AgentResponse:
    """Run `agent` on `prompt`, drawing the live tree on `console`; return the response."""
    view = LiveTree(agent.id)
    run = agent.run(prompt, session=session)
    with Live(view.render(), console=console, refresh_per_second=12) as live:
        async with run as stream:
            async for update in stream:
                view.apply(update)
                live.update(view.render())
    assert run.response is not None  # the stream ended without raising
    return run.response
