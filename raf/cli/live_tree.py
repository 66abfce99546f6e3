"""Render a run's stream as a live tree of agents with their text and tool calls (rich).

Example:
    >>> from raf.updates import TextDelta
    >>> view = LiveTree("team")
    >>> view.apply(TextDelta(text="hi", path=("team", "writer")))
    >>> view.text_of(("team", "writer"))
    'hi'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text
from rich.tree import Tree

from raf._defaults import new_dict, new_list
from raf.agent import IAgent
from raf.session import Session
from raf.updates import AgentPath, AgentResponse, AgentUpdate, RequestInfoUpdate

_PREVIEW = 240


@dataclass(slots=True)
class _Node:
    text: list[str] = field(default_factory=new_list)
    reasoning: list[str] = field(default_factory=new_list)
    tools: dict[str, str] = field(default_factory=new_dict)
    steps: dict[str, str] = field(default_factory=new_dict)
    tokens: int = 0
    children: dict[str, _Node] = field(default_factory=new_dict)


class LiveTree:
    """Accumulates updates by agent path and renders them as a `rich` tree."""

    def __init__(self, root_id: str) -> None:
        self._root_id = root_id
        self._root = _Node()
        self.requests: list[RequestInfoUpdate] = []
        """The requests the run waits on, in the order they came."""

    def _node(self, path: AgentPath) -> _Node:
        node = self._root
        for part in path[1:]:
            node = node.children.setdefault(part, _Node())
        return node

    def apply(self, update: AgentUpdate) -> None:
        """Fold one update into the view."""
        node = self._node(update.path)
        match update.type:
            case "text_delta":
                node.text.append(update.text)
            case "reasoning_delta":
                node.reasoning.append(update.text)
            case "tool_call_start":
                node.tools[update.call_id] = f"{update.name}(…)"
            case "tool_called":
                mark = "✗" if update.is_error else "✓"
                node.tools[update.call_id] = f"{update.name} {mark} {_short(update.result, 60)}"
            case "usage":
                node.tokens += update.total_tokens
            case "executor_invoking":
                node.steps[update.executor_id] = "running"
            case "executor_invoked":
                node.steps[update.executor_id] = "done"
            case "request_info":
                self.requests.append(update)
            case _:
                pass

    def text_of(self, path: AgentPath) -> str:
        """All text streamed by the agent at `path`."""
        return "".join(self._node(path).text)

    def render(self) -> RenderableType:
        """The current view."""
        tree = Tree(Text(self._root_id, style="bold"))
        self._render_into(tree, self._root)
        if self.requests:
            asked = (f"{r.request_id}: {r.payload!r}" for r in self.requests)
            waiting = Text("waiting for: " + "; ".join(asked), style="yellow")
            return Group(tree, waiting)
        return tree

    def _render_into(self, tree: Tree, node: _Node) -> None:
        if node.reasoning:
            tree.add(Text("… " + _short("".join(node.reasoning), _PREVIEW), style="dim italic"))
        for line in node.tools.values():
            tree.add(Text("⚙ " + line, style="cyan"))
        if node.text:
            tree.add(Text(_short("".join(node.text), _PREVIEW)))
        for child_id, child in node.children.items():
            label = Text(child_id, style="bold green")
            if child.tokens:
                label.append(f"  {child.tokens} tokens", style="dim")
            self._render_into(tree.add(label), child)


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
