"""One suite per framework: the same scenarios written against each framework's own API."""

from __future__ import annotations

import importlib

from bench.suites.base import Suite, Unavailable

SUITES: dict[str, str] = {
    "raf": "bench.suites.raf_suite:RafSuite",
    "floor": "bench.suites.floor:FloorSuite",
    "maf": "bench.suites.maf_suite:MafSuite",
    "langgraph": "bench.suites.langgraph_suite:LangGraphSuite",
    "langgraph-invoke": "bench.suites.langgraph_suite:LangGraphInvokeSuite",
}
"""Framework name -> `module:class` of its suite, in table order."""

PEERS = ("maf", "langgraph", "langgraph-invoke")
"""The frameworks raf is compared with: LangGraph twice, streamed (`astream`, what raf's runs
always do) and through its cheapest path (`ainvoke`, nothing streamed)."""

LABELS = {
    "raf": "raf",
    "floor": "floor (anyio)",
    "maf": "MS Agent Framework",
    "langgraph": "LangGraph",
    "langgraph-invoke": "LangGraph ainvoke",
}
"""Column titles."""

SHORT = {
    "raf": "raf",
    "floor": "floor",
    "maf": "MAF",
    "langgraph": "LangGraph",
    "langgraph-invoke": "LangGraph ainvoke",
}
"""Names in the ratio columns."""


def load(name: str) -> Suite:
    """The suite of framework `name`.

    Raises:
        Unavailable: when the framework is not installed.
        KeyError: for an unknown name.
    """
    module_name, class_name = SUITES[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise Unavailable(f"{name} is not installed: {exc}") from exc
    suite: Suite = getattr(module, class_name)()
    return suite


__all__ = ["LABELS", "PEERS", "SHORT", "SUITES", "Suite", "Unavailable", "load"]
