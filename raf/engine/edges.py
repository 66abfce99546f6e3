"""Edges: how a message a node sends reaches the nodes after it.

Each builder call (`add_edge`, `add_fan_out`, `add_fan_in`, `add_switch`) becomes one route
owned by its source node. When a node sends, each of its routes puts `(target, message)` pairs
in the node's outbox; the runner delivers the outboxes at the end of the superstep. A fan-in
route's target is the `FanIn` itself: the runner buffers its messages until every source sent.
A source has at most one route to each target (the builder refuses a second), so no message
is delivered twice.

Example:
    >>> outbox = []
    >>> Direct("b", condition=lambda m: m > 0).deliver(1, None, outbox)
    >>> outbox
    [('b', 1)]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = ["Condition", "Direct", "Edge", "EdgeKind", "FanIn", "FanOut", "Route", "Switch"]

Condition: TypeAlias = Callable[[Any], bool]
"""`condition(message) -> bool`: whether a message takes an edge."""

Outbox: TypeAlias = list[tuple["str | FanIn", Any]]
"""Messages a node sent in a superstep, with their targets, in send order."""

EdgeKind = Literal["direct", "conditional", "fan_out", "fan_in", "case", "default"]
"""How an edge was declared (shown when the graph is rendered)."""


@dataclass(frozen=True, slots=True)
class Edge:
    """One source-to-target pair of the graph, for validation and rendering."""

    source: str
    target: str
    kind: EdgeKind
    label: str = ""


def condition_label(condition: Condition) -> str:
    """A short name for `condition` (its function name, or `condition` for a lambda)."""
    name = getattr(condition, "__name__", "")
    return name if name and name != "<lambda>" else "condition"


class Route:
    """A source node's outgoing route; `deliver` picks the targets of one message."""

    __slots__ = ()

    def targets(self) -> tuple[str, ...]:
        """Every node this route can deliver to."""
        raise NotImplementedError

    def declared_by(self) -> str:
        """The builder call that made this route, for error messages."""
        raise NotImplementedError

    def deliver(self, message: Any, to: str | None, outbox: Outbox) -> None:
        """Append `(target, message)` for each target taken (only `to`, when given)."""
        raise NotImplementedError


class Direct(Route):
    """`add_edge(src, dst, condition)`: to `target` when the condition holds (or is None)."""

    __slots__ = ("condition", "target")

    def __init__(self, target: str, condition: Condition | None = None) -> None:
        self.target = target
        self.condition = condition

    def targets(self) -> tuple[str, ...]:
        return (self.target,)

    def declared_by(self) -> str:
        if self.condition is None:
            return "add_edge"
        return f"add_edge with condition {condition_label(self.condition)!r}"

    def deliver(self, message: Any, to: str | None, outbox: Outbox) -> None:
        if to is not None and to != self.target:
            return
        condition = self.condition
        if condition is None or condition(message):
            outbox.append((self.target, message))


class FanOut(Route):
    """`add_fan_out(src, [dst, ...])`: to every target."""

    __slots__ = ("_targets",)

    def __init__(self, targets: tuple[str, ...]) -> None:
        self._targets = targets

    def targets(self) -> tuple[str, ...]:
        return self._targets

    def declared_by(self) -> str:
        return "add_fan_out"

    def deliver(self, message: Any, to: str | None, outbox: Outbox) -> None:
        for target in self._targets:
            if to is None or to == target:
                outbox.append((target, message))


class FanIn(Route):
    """`add_fan_in([src, ...], dst)`: buffered until every source sent, then one list to `target`.

    `index` numbers the fan-ins of a workflow (checkpoints key their buffers by it).
    """

    __slots__ = ("index", "sources", "target")

    def __init__(self, index: int, sources: tuple[str, ...], target: str) -> None:
        self.index = index
        self.sources = sources
        self.target = target

    def targets(self) -> tuple[str, ...]:
        return (self.target,)

    def declared_by(self) -> str:
        return "add_fan_in"

    def deliver(self, message: Any, to: str | None, outbox: Outbox) -> None:
        if to is None or to == self.target:
            outbox.append((self, message))


class Switch(Route):
    """`add_switch(src, [(condition, dst), ...], default=dst)`: the first matching case wins."""

    __slots__ = ("cases", "default")

    def __init__(self, cases: tuple[tuple[Condition, str], ...], default: str | None) -> None:
        self.cases = cases
        self.default = default

    def targets(self) -> tuple[str, ...]:
        found = [target for _, target in self.cases]
        if self.default is not None:
            found.append(self.default)
        return tuple(found)

    def declared_by(self) -> str:
        return "add_switch"

    def deliver(self, message: Any, to: str | None, outbox: Outbox) -> None:
        chosen = self.default
        for condition, target in self.cases:
            if condition(message):
                chosen = target
                break
        if chosen is not None and (to is None or to == chosen):
            outbox.append((chosen, message))
