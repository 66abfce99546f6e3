"""The core imports nothing above it (DESIGN §1): no engine, builder or front module, not even
for type checking; where it needs the engine it declares a `Protocol` the engine implements."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import raf

CORE = ("messages", "updates", "errors", "agent", "run", "session")
ABOVE = ("raf.engine", "raf.builders", "raf.serve", "raf.cli")
ROOT = Path(raf.__file__).parent


def imported(source: str) -> list[tuple[int, str]]:
    """Every module an import statement of `source` names, anywhere (TYPE_CHECKING and
    function bodies included), with its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.level:
                continue  # the core's modules sit at the top of the package: nothing relative
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return found


def upward(module: str) -> bool:
    return any(module == layer or module.startswith(layer + ".") for layer in ABOVE)


@pytest.mark.parametrize("name", CORE)
def test_a_core_module_imports_no_engine_builder_or_front_module(name: str) -> None:
    path = ROOT / f"{name}.py"
    offending = [
        f"{path.name}:{line} {mod}" for line, mod in imported(path.read_text()) if upward(mod)
    ]
    assert offending == []


def test_the_check_sees_imports_under_type_checking_and_in_functions() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from raf.engine.protocol import RootRun\n"
        "def f():\n    import raf.serve.agui.mapper\n"
        "from raf import builders\n"
    )
    assert sorted(mod for _, mod in imported(source) if upward(mod)) == [
        "raf.builders",
        "raf.engine.protocol",
        "raf.engine.protocol.RootRun",
        "raf.serve.agui.mapper",
    ]


def test_the_engine_run_implements_the_cores_protocol() -> None:
    from raf.engine.protocol import RootRun
    from raf.run import OuterRun
    from raf.session import Session

    run: OuterRun = RootRun(Session(), None)
    assert run.checkpoints is False
