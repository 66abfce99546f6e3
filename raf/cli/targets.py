"""Load the agent a command names as `MODULE:ATTR`.

`MODULE` is a dotted module name or a path to a `.py` file; `ATTR` may be an `IAgent`, a `Workflow`,
or a zero-argument factory of either.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, cast

from raf.agent import IAgent


def load_target(spec: str) -> Any:
    """Import `MODULE:ATTR` and return the attribute, calling it when it is a factory.

    Raises:
        SystemExit: with a message saying what was wrong.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not attr:
        raise SystemExit(f"expected MODULE:ATTR, got {spec!r}")
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.exists():
            raise SystemExit(f"no file {module_name!r}")
        # A private module name: the file's own (say `concurrent`) may shadow a standard one.
        name = f"_raf_target_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise SystemExit(f"cannot import {module_name!r}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        # Its neighbours import as they would when the file runs as a script.
        sys.path.insert(0, str(path.resolve().parent))
        loader_spec.loader.exec_module(module)
    else:
        sys.path.insert(0, str(Path.cwd()))
        module = importlib.import_module(module_name)
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise SystemExit(f"module {module_name!r} has no attribute {attr!r}") from None
    if not isinstance(target, IAgent) and not hasattr(target, "as_agent") and callable(target):
        target = target()
    return target


def as_agent(target: Any) -> IAgent:
    """An `IAgent` from an agent or a workflow.

    Raises:
        SystemExit: when `target` is neither.
    """
    if isinstance(target, IAgent):
        return target
    if hasattr(target, "as_agent"):
        return cast(IAgent, target.as_agent())
    raise SystemExit(f"{type(target).__name__} is neither an IAgent nor a Workflow")
