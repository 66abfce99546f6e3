"""Builders of orchestration patterns, each compiled onto the graph engine.

Example:
    >>> from raf import FunctionAgent
    >>> a = FunctionAgent("a", lambda messages: "A")
    >>> SequentialBuilder(id="s").add_agent(a).build().as_agent().metadata.kind
    'sequential'
"""

from raf.builders.concurrent import ConcurrentBuilder as ConcurrentBuilder
from raf.builders.sequential import SequentialBuilder as SequentialBuilder

__all__ = ["ConcurrentBuilder", "SequentialBuilder"]
