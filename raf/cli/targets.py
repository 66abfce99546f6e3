"""Load the agent a command names as `MODULE:ATTR`.

`MODULE` is a dotted module name or a path to a `.py` file; `ATTR` may be an `IAgent`, a `Workflow`,
or a zero-argument factory of either. Every mistake raises `SystemExit` with a one-line message
saying what to do, which the `raf` command prints before exiting with status 2.

Example:
    >>> as_agent(load_target("examples.registry:build_newsroom")).id
    'newsroom'
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from raf.agent import IAgent

_USAGE = "MODULE:ATTR (say `examples.nested:agent` or `path/to/file.py:build`)"


def load_target(spec: str) -> Any:
    """Import `MODULE:ATTR` and return the attribute, calling it when it is a factory.

    Raises:
        SystemExit: with a one-line message saying what was wrong and what to do.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"expected {_USAGE}, got {spec!r}")
    module = _import(module_name)
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise SystemExit(
            f"module {module_name!r} has no attribute {attr!r}{_candidates(module)}"
        ) from None
    if _is_target(target) or not callable(target):
        return target
    return _call_factory(target, spec)


def as_agent(target: Any) -> IAgent:
    """An `IAgent` from an agent or a workflow.

    Raises:
        SystemExit: when `target` is neither.
    """
    if isinstance(target, IAgent):
        return target
    if hasattr(target, "as_agent"):
        return cast(IAgent, target.as_agent())
    raise SystemExit(
        f"{type(target).__name__} is neither an IAgent nor a Workflow; point MODULE:ATTR at an "
        "agent, a workflow, or a function that returns one"
    )


def _import(module_name: str) -> ModuleType:
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.is_file():
            raise SystemExit(f"no file {module_name!r}; give the path of a Python file")
        # A private module name: the file's own (say `concurrent`) may shadow a standard one.
        name = f"_raf_target_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise SystemExit(f"cannot import {module_name!r}; give the path of a Python file")
        loader = loader_spec.loader
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        # Its neighbours import as they would when the file runs as a script.
        sys.path.insert(0, str(path.resolve().parent))
        _run_user_code(f"importing {module_name!r}", partial(loader.exec_module, module))
        return module
    sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise SystemExit(_describe_failure(f"importing {module_name!r}", exc)) from None
        raise SystemExit(
            f"no module {module_name!r}; run raf from the directory that contains it, or "
            "give the path of a .py file"
        ) from None
    except Exception as exc:
        raise SystemExit(_describe_failure(f"importing {module_name!r}", exc)) from None


def _run_user_code(what: str, call: Callable[[], Any]) -> Any:
    """Run an import or a factory; its failure becomes one line naming where it happened."""
    try:
        return call()
    except Exception as exc:
        raise SystemExit(_describe_failure(what, exc)) from None


def _describe_failure(what: str, exc: Exception) -> str:
    if isinstance(exc, ModuleNotFoundError) and exc.name is not None:
        return f"{what} failed: no module {exc.name!r} (install it, say `pip install {exc.name}`)"
    if type(exc).__module__.startswith("openai") and "api_key" in str(exc):
        return (
            f"{what}: no API key; set OPENAI_API_KEY (for a local server, set OPENAI_BASE_URL "
            "alone)"
        )
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    message = " ".join(str(exc).split())
    return f"{what} failed{where}: {type(exc).__name__}: {message}"


def _call_factory(factory: Any, spec: str) -> Any:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            signature.bind()
        except TypeError:
            needed = [
                p.name
                for p in signature.parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ]
            raise SystemExit(
                f"{spec} needs arguments ({', '.join(needed)}); raf calls a factory with none: "
                "give them defaults, or point at a function that takes no arguments"
            ) from None
    return _run_user_code(spec, factory)


def _is_target(value: Any) -> bool:
    return isinstance(value, IAgent) or hasattr(value, "as_agent")


def _candidates(module: ModuleType) -> str:
    names = [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not inspect.isclass(value)
        and (_is_target(value) or getattr(value, "__module__", None) == module.__name__)
    ]
    return f"; it has {', '.join(sorted(names))}" if names else ""
