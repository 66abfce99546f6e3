"""Hypothesis strategies for nested agent trees, and their reference interpretation."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from raf.agent import IAgent
from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.updates import (
    AgentUpdate,
    MessageCompleted,
    ReasoningDelta,
    TextDelta,
    ToolCallArgs,
    ToolCalled,
    ToolCallEnd,
    ToolCallStart,
)


@dataclass(frozen=True)
class Leaf:
    """A function agent answering `<id>:<messages seen>:<last text>`."""


@dataclass(frozen=True)
class Seq:
    children: tuple[Spec, ...]


@dataclass(frozen=True)
class Con:
    children: tuple[Spec, ...]


Spec = Leaf | Seq | Con


def _children(inner: st.SearchStrategy[Spec]) -> st.SearchStrategy[tuple[Spec, ...]]:
    return st.lists(inner, min_size=1, max_size=4).map(tuple)


def trees(max_leaves: int = 24) -> st.SearchStrategy[Spec]:
    """Random trees of sequential and concurrent workflows over leaves, depth up to 4."""

    def deeper(inner: st.SearchStrategy[Spec]) -> st.SearchStrategy[Spec]:
        return st.one_of(_children(inner).map(Seq), _children(inner).map(Con))

    # Three levels of workflows over leaves: depth 4 at most, width 4 at most.
    return st.recursive(st.just(Leaf()), deeper, max_leaves=max_leaves).filter(
        lambda spec: depth(spec) <= 4
    )


def count_leaves(spec: Spec) -> int:
    if isinstance(spec, Leaf):
        return 1
    return sum(count_leaves(child) for child in spec.children)


def depth(spec: Spec) -> int:
    if isinstance(spec, Leaf):
        return 1
    return 1 + max(depth(child) for child in spec.children)


def leaf_answer(agent_id: str, messages: list[ChatMessage]) -> str:
    return f"{agent_id}:{len(messages)}:{messages[-1].text[:12]}"


def build(spec: Spec) -> IAgent:
    """Build the tree (ids by pre-order position, so two builds of a spec are identical)."""
    counter = itertools.count()
    return _build(spec, counter)


def _build(spec: Spec, counter: itertools.count[int]) -> IAgent:
    n = next(counter)
    if isinstance(spec, Leaf):
        agent_id = f"leaf{n}"
        return FunctionAgent(agent_id, lambda messages: leaf_answer(agent_id, messages))
    children = [_build(child, counter) for child in spec.children]
    if isinstance(spec, Seq):
        seq = SequentialBuilder(id=f"seq{n}")
        for child in children:
            seq.add_agent(child)
        return seq.build().as_agent()
    con = ConcurrentBuilder(id=f"con{n}")
    for child in children:
        con.add_agent(child)
    return con.build().as_agent()


def reference(spec: Spec, conversation: list[ChatMessage]) -> list[ChatMessage]:
    """What the tree adds to `conversation`, computed without raf's engine."""
    return _reference(spec, conversation, itertools.count())


def _reference(
    spec: Spec, conversation: list[ChatMessage], counter: itertools.count[int]
) -> list[ChatMessage]:
    n = next(counter)
    if isinstance(spec, Leaf):
        agent_id = f"leaf{n}"
        return [ChatMessage.assistant(leaf_answer(agent_id, conversation), author=agent_id)]
    if isinstance(spec, Seq):
        added: list[ChatMessage] = []
        for child in spec.children:
            added += _reference(child, conversation + added, counter)
        return added
    results = [_reference(child, conversation, counter) for child in spec.children]
    return [r[-1] for r in results if r]


def tree_paths(agent: IAgent) -> set[tuple[str, ...]]:
    """Every root-to-node path of the tree."""
    from raf.registry import walk

    return {path for path, _ in walk(agent)}


# Group-chat termination conditions: trees of `|` and `&` over the four kinds of leaf, as
# plain tuples, with a reference meaning that does not use raf.
CondSpec = tuple[str, Any]
"""("max", n) | ("text", s) | ("speaker", id) | ("length", n) | ("or" / "and", (child, ...))"""

_WORDS = ("DONE", "ok", "TERMINATE")
_SPEAKERS = ("a", "b", "c")


def condition_specs() -> st.SearchStrategy[CondSpec]:
    """Random termination-condition trees, up to 12 leaves."""
    leaves = st.one_of(
        st.tuples(st.just("max"), st.integers(1, 4)),
        st.tuples(st.just("text"), st.sampled_from(_WORDS)),
        st.tuples(st.just("speaker"), st.sampled_from(_SPEAKERS)),
        st.tuples(st.just("length"), st.integers(0, 5)),
    )

    def deeper(inner: st.SearchStrategy[CondSpec]) -> st.SearchStrategy[CondSpec]:
        children = st.lists(inner, min_size=2, max_size=3).map(tuple)
        return st.tuples(st.sampled_from(["or", "and"]), children)

    return st.recursive(leaves, deeper, max_leaves=12)


def chat_progress() -> st.SearchStrategy[tuple[list[ChatMessage], int, str | None]]:
    """A transcript of one to five messages, the rounds of the run, and its last speaker."""
    message = st.tuples(st.sampled_from(_SPEAKERS), st.sampled_from(("", *_WORDS))).map(
        lambda pair: ChatMessage.assistant(f"said {pair[1]}", author=pair[0])
    )
    return st.tuples(
        st.lists(message, min_size=1, max_size=5),
        st.integers(0, 5),
        st.one_of(st.none(), st.sampled_from(_SPEAKERS)),
    )


def condition_holds(
    spec: CondSpec, transcript: list[ChatMessage], rounds: int, speaker: str | None
) -> bool:
    """What the condition `spec` means, evaluated directly."""
    kind, arg = spec
    if kind == "or":
        return any(condition_holds(c, transcript, rounds, speaker) for c in arg)
    if kind == "and":
        return all(condition_holds(c, transcript, rounds, speaker) for c in arg)
    if kind == "max":
        return rounds >= arg
    if kind == "text":
        return arg in transcript[-1].text
    if kind == "speaker":
        return speaker == arg
    return len(transcript) > arg


def _one_agent_turns(path: tuple[str, ...]) -> st.SearchStrategy[list[AgentUpdate]]:
    """What one agent streams: messages of reasoning, text and tool calls, then the results."""
    pieces = st.lists(st.text(min_size=1, max_size=4), min_size=0, max_size=3)

    @st.composite
    def turn(draw: st.DrawFn, index: int) -> list[AgentUpdate]:
        items: list[AgentUpdate] = [ReasoningDelta(text=t, path=path) for t in draw(pieces)]
        items += [TextDelta(text=t, path=path) for t in draw(pieces)]
        calls = [f"call_{n}" for n in range(draw(st.integers(0, 2)))]
        for call in calls:
            items.append(ToolCallStart(call_id=call, name="tool", path=path))
            items += [ToolCallArgs(call_id=call, delta=t, path=path) for t in draw(pieces)]
            items.append(ToolCallEnd(call_id=call, path=path))
        items.append(MessageCompleted(message=ChatMessage.assistant(f"turn {index}"), path=path))
        items += [ToolCalled(call_id=c, name="tool", result="ok", path=path) for c in calls]
        return items

    return st.integers(1, 3).flatmap(
        lambda n: st.tuples(*(turn(i) for i in range(n))).map(lambda ts: [u for t in ts for u in t])
    )


@st.composite
def agent_streams(draw: st.DrawFn, root: str = "root") -> list[AgentUpdate]:
    """The interleaved stream of several agents of a tree under `root` (each keeps its order).

    Agents reuse their providers' call ids (`call_0` in every agent), as scripted models do.
    """
    nested = st.lists(st.sampled_from(["a", "b", "c"]), max_size=2).map(lambda p: (root, *p))
    paths = draw(st.lists(nested, min_size=1, max_size=4, unique=True))
    lanes = [draw(_one_agent_turns(path)) for path in paths]
    merged: list[AgentUpdate] = []
    while any(lanes):
        lane = draw(st.sampled_from([lane for lane in lanes if lane]))
        merged.append(lane.pop(0))
    return merged
