from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from raf.agent import BaseAgent, IAgent, invoke_agent
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.registry import AgentRegistry, AgentTree, tree_of, walk
from raf.run import RunContext
from raf.updates import AgentResponse


class Group(BaseAgent):
    """A minimal parent agent running its children one after another."""

    kind = "group"

    def __init__(self, id: str, *children: IAgent) -> None:
        super().__init__(id, description=f"group {id}")
        self._children = children

    def subagents(self) -> Sequence[IAgent]:
        return self._children

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        last = AgentResponse()
        for child in self._children:
            last = await invoke_agent(child, messages, ctx)
        return last


def leaf(agent_id: str) -> FunctionAgent:
    return FunctionAgent(agent_id, lambda messages: agent_id, description=f"leaf {agent_id}")


def sample() -> Group:
    return Group("root", Group("a", leaf("x"), leaf("y")), Group("b", leaf("x")), leaf("z"))


def test_walk_is_depth_first_root_first() -> None:
    paths = ["/".join(p) for p, _ in walk(sample())]
    assert paths == ["root", "root/a", "root/a/x", "root/a/y", "root/b", "root/b/x", "root/z"]


def test_registry_get_find_roots_tree() -> None:
    registry = AgentRegistry()
    root = sample()
    registry.register(root)
    registry.register(leaf("solo"))
    assert registry.roots() == ["root", "solo"]
    assert registry.get("root/b/x").id == "x"
    assert registry.get("/root/a/") is root.get_subagent("a")
    assert registry.find("x") == ["root/a/x", "root/b/x"]
    assert "root/z" in registry and "root/q" not in registry
    tree = registry.tree("root/a")
    assert tree == AgentTree(
        id="a",
        kind="group",
        name="a",
        description="group a",
        children=[
            AgentTree(id="x", kind="function", name="x", description="leaf x"),
            AgentTree(id="y", kind="function", name="y", description="leaf y"),
        ],
    )
    assert AgentTree.model_validate(json.loads(tree.model_dump_json())) == tree


def test_registry_errors_name_the_problem() -> None:
    registry = AgentRegistry()
    registry.register(sample())
    with pytest.raises(ValueError, match="already registered"):
        registry.register(leaf("root"))
    with pytest.raises(KeyError, match="no agent at 'root/nope'"):
        registry.get("root/nope")
    registry.unregister("root")
    assert len(registry) == 0
    with pytest.raises(KeyError, match="no root agent"):
        registry.unregister("root")


def test_tree_of_matches_metadata_children() -> None:
    root = sample()
    tree = tree_of(root)
    assert [c.id for c in tree.children] == list(root.metadata.children)


def test_a_missing_path_suggests_the_closest_registered_ones() -> None:
    registry = AgentRegistry()
    registry.register(sample())
    with pytest.raises(KeyError) as info:
        registry.get("root/a/xx")
    message = str(info.value)
    assert "closest registered paths: root/a/x" in message


class Liar(Group):
    """Lists a child it cannot return."""

    def get_subagent(self, agent_id: str) -> IAgent | None:
        return None


def test_walk_and_tree_of_agree_on_a_child_that_cannot_be_returned() -> None:
    liar = Liar("liar", leaf("ghost"))
    with pytest.raises(LookupError, match="lists child 'ghost'"):
        list(walk(liar))
    with pytest.raises(LookupError, match="lists child 'ghost'"):
        tree_of(liar)
