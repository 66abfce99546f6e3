"""Browse and search agent trees: `walk`, `AgentRegistry`, `AgentTree`.

Example:
    >>> from raf import FunctionAgent
    >>> leaf = FunctionAgent("leaf", lambda messages: "ok")
    >>> [path for path, _ in walk(leaf)]
    [('leaf',)]
    >>> registry = AgentRegistry()
    >>> registry.register(leaf)
    >>> registry.find("leaf")
    ['leaf']
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict, Field

from raf._defaults import new_list
from raf.agent import IAgent

AgentPath = tuple[str, ...]


class AgentTree(BaseModel):
    """A JSON-able view of an agent and its descendants."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    """The agent's id."""
    kind: str
    """Its kind (react, sequential, …)."""
    name: str
    """Display name."""
    description: str = ""
    """What it does."""
    children: list[AgentTree] = Field(default_factory=new_list)
    """Direct subagents, in participant order."""


def walk(agent: IAgent) -> Iterator[tuple[AgentPath, IAgent]]:
    """Every agent of the tree under `agent`, depth-first, root first, with its path.

    Raises:
        LookupError: when an agent lists a child that `get_subagent` cannot return.
    """
    stack: list[tuple[AgentPath, IAgent]] = [((agent.id,), agent)]
    while stack:
        path, node = stack.pop()
        yield path, node
        children: list[tuple[AgentPath, IAgent]] = []
        for child_id in node.metadata.children:
            child = node.get_subagent(child_id)
            if child is None:
                raise LookupError(
                    f"agent {'/'.join(path)!r} lists child {child_id!r} "
                    "but get_subagent returned None"
                )
            children.append(((*path, child_id), child))
        stack.extend(reversed(children))


def tree_of(agent: IAgent) -> AgentTree:
    """The `AgentTree` of `agent` and all its descendants.

    Raises:
        LookupError: when an agent lists a child that `get_subagent` cannot return.
    """
    meta = agent.metadata
    children: list[AgentTree] = []
    for child_id in meta.children:
        child = agent.get_subagent(child_id)
        if child is None:
            raise LookupError(
                f"agent {meta.id!r} lists child {child_id!r} but get_subagent returned None"
            )
        children.append(tree_of(child))
    return AgentTree(
        id=meta.id,
        kind=meta.kind,
        name=meta.name,
        description=meta.description,
        children=children,
    )


class AgentRegistry:
    """An index of agent trees by path (`root/child/leaf`).

    Register roots; every descendant is indexed. The registry holds agents, not state: running an
    agent found here is the same as running it directly.

    Example:
        >>> registry = AgentRegistry()
        >>> registry.roots()
        []
    """

    def __init__(self) -> None:
        self._roots: dict[str, IAgent] = {}
        self._by_path: dict[str, IAgent] = {}

    def register(self, agent: IAgent) -> None:
        """Index `agent` and its whole tree.

        Raises:
            ValueError: when a root with the same id is already registered.
        """
        if agent.id in self._roots:
            raise ValueError(
                f"a root agent {agent.id!r} is already registered; give the new one another id"
            )
        entries = {"/".join(path): node for path, node in walk(agent)}
        self._roots[agent.id] = agent
        self._by_path.update(entries)

    def unregister(self, root_id: str) -> None:
        """Remove the root `root_id` and its tree.

        Raises:
            KeyError: when no such root is registered.
        """
        if root_id not in self._roots:
            raise KeyError(f"no root agent {root_id!r} is registered")
        del self._roots[root_id]
        prefix = root_id + "/"
        for key in [k for k in self._by_path if k == root_id or k.startswith(prefix)]:
            del self._by_path[key]

    def get(self, path: str) -> IAgent:
        """The agent at `path` (`root/child/leaf`).

        Raises:
            KeyError: naming the path, and the closest registered ones.
        """
        agent = self._by_path.get(path.strip("/"))
        if agent is None:
            close = difflib.get_close_matches(path.strip("/"), list(self._by_path), n=5)
            known = ", ".join(close or sorted(self._by_path)[:5]) or "none"
            raise KeyError(f"no agent at {path!r}; the closest registered paths: {known}")
        return agent

    def find(self, agent_id: str) -> list[str]:
        """Paths of every agent whose id is `agent_id`, in registration and tree order."""
        return [p for p in self._by_path if p.rsplit("/", 1)[-1] == agent_id]

    def roots(self) -> list[str]:
        """Ids of the registered roots, in registration order."""
        return list(self._roots)

    def paths(self) -> list[str]:
        """Every indexed path."""
        return list(self._by_path)

    def tree(self, path: str) -> AgentTree:
        """The `AgentTree` of the agent at `path`."""
        return tree_of(self.get(path))

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and path.strip("/") in self._by_path

    def __len__(self) -> int:
        return len(self._by_path)
