"""Discovery: walk a tree, index it in a registry, look agents up by path or id, dump the tree.

Run: python examples/registry.py (or, from the repository root, python -m examples.registry)
"""

from __future__ import annotations

import anyio

from raf import AgentRegistry, ConcurrentBuilder, FunctionAgent, IAgent, SequentialBuilder, walk


def build_newsroom() -> IAgent:
    """The tree of this example; also `raf tree examples.registry:build_newsroom`."""
    draft = FunctionAgent("draft", lambda m: "draft", description="Writes a draft.")
    polish = FunctionAgent("polish", lambda m: "polished", description="Polishes it.")
    check = FunctionAgent("check", lambda m: "checked", description="Checks facts.")
    writing = SequentialBuilder(id="writing").add_agent(draft).add_agent(polish).build()
    return (
        ConcurrentBuilder(id="newsroom")
        .add_agent(writing.as_agent(description="Drafts and polishes."))
        .add_agent(check)
        .build()
        .as_agent(description="The whole newsroom.")
    )


async def main() -> None:
    newsroom = build_newsroom()

    for path, agent in walk(newsroom):
        print("  " * (len(path) - 1) + f"{agent.id} ({agent.metadata.kind})")

    registry = AgentRegistry()
    registry.register(newsroom)
    print(registry.roots())
    print(registry.find("polish"))
    polisher = registry.get("newsroom/writing/polish")
    print((await polisher.run("make it shine").collect()).text)
    print(registry.tree("newsroom").model_dump_json(indent=2))


if __name__ == "__main__":
    anyio.run(main)
