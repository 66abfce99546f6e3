"""The core imports nothing above it (DESIGN §1): no engine, builder, front, durable, tool or
tracing module, not even for type checking; where it needs one it declares a `Protocol` that
the package above implements (`raf.run.OuterRun`, `raf.steps`, `raf.traced`). No import
cycle passes through the core and out of it."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import raf

CORE = ("messages", "updates", "errors", "agent", "run", "session")
ABOVE = (
    "raf.engine",
    "raf.builders",
    "raf.serve",
    "raf.cli",
    "raf.durable",
    "raf.tools",
    "raf.tracing",
)
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


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package under `root`, by dotted name (a package by its own)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph(files: Mapping[str, Path]) -> dict[str, set[str]]:
    """Which modules of `files` each one imports, anywhere in it (the longest module a name
    denotes: `from raf.run import Turn` imports `raf.run`). The root package is left out:
    it is the public face that imports everything, and importing any module runs it."""
    top = next(iter(files)).partition(".")[0]
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                named = [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for dotted in named:
                while dotted and dotted not in files:
                    dotted = dotted.rpartition(".")[0]
                if dotted and dotted not in (name, top):
                    edges.add(dotted)
        graph[name] = edges
    return graph


def cycles(graph: Mapping[str, set[str]]) -> Iterator[set[str]]:
    """The strongly connected components of `graph` with more than one module: each module
    of one reaches every other by imports (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    yield component


def core(graph: Mapping[str, set[str]]) -> set[str]:
    """The core modules and the modules at the top of the package they import, and so on."""
    found = {f"raf.{name}" for name in CORE} & graph.keys()
    todo = list(found)
    while todo:
        for module in graph.get(todo.pop(), ()):
            if module.count(".") == 1 and module not in found:
                found.add(module)
                todo.append(module)
    return found


def crossing(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The import cycles that hold a core module and a module outside the core (a cycle
    inside the core, as `raf.run` and `raf.agent` typing each other, stays in one layer)."""
    inner = core(graph)
    return sorted(sorted(c) for c in cycles(graph) if c & inner and not c <= inner)


def test_no_module_the_core_imports_at_the_top_imports_above_it() -> None:
    files = modules()
    inner = core(import_graph(files))
    assert {"raf.traced", "raf.steps", "raf._tool_data"} <= inner
    offending = [
        f"{files[name].name}:{line} {mod}"
        for name in sorted(inner)
        for line, mod in imported(files[name].read_text())
        if upward(mod)
    ]
    assert offending == []


def test_no_import_cycle_leaves_the_core_and_comes_back() -> None:
    assert crossing(import_graph(modules())) == []


def test_the_cycle_check_finds_a_cycle_through_the_core(tmp_path: Path) -> None:
    package = tmp_path / "raf"
    (package / "tracing").mkdir(parents=True)
    (package / "__init__.py").write_text("from raf.run import Turn\n")
    (package / "run.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from raf.tracing.t import T\n"
    )
    (package / "tracing" / "__init__.py").write_text("")
    (package / "tracing" / "t.py").write_text("from .u import U\n")
    (package / "tracing" / "u.py").write_text("def f():\n    from raf import run\n")
    (package / "apart.py").write_text("import raf.tracing\n")
    (package / "session.py").write_text("from raf._writer import W\n")
    (package / "_writer.py").write_text("from raf import session\n")
    graph = import_graph(modules(package))
    assert graph["raf.run"] == {"raf.tracing.t"}
    assert graph["raf.tracing.t"] == {"raf.tracing.u"}
    assert graph["raf.apart"] == {"raf.tracing"}
    assert core(graph) == {"raf.run", "raf.session", "raf._writer"}
    assert len(list(cycles(graph))) == 2
    assert crossing(graph) == [["raf.run", "raf.tracing.t", "raf.tracing.u"]]


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


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from raf.tools.journal import ToolJournal\n", "raf.tools.journal"),
        ("from raf.durable import seam\n", "raf.durable"),
        ("import raf.tracing.settings\n", "raf.tracing.settings"),
    ],
)
def test_the_check_sees_the_durable_tool_and_tracing_packages(source: str, found: str) -> None:
    assert found in [mod for _, mod in imported(source) if upward(mod)]


def test_the_engine_run_implements_the_cores_protocol() -> None:
    from raf.engine.protocol import RootRun
    from raf.run import OuterRun
    from raf.session import Session

    run: OuterRun = RootRun(Session(), None)
    assert run.checkpoints is False


def test_a_run_finds_the_telemetry_raf_tracing_decides() -> None:
    """`import raf` installs `raf.tracing`'s decision in the core's registration point."""
    from raf.traced import telemetry_at_start
    from raf.tracing import instrument

    with instrument(enabled=False):
        assert telemetry_at_start() is None
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider

    from raf.tracing.telemetry import Telemetry

    with instrument(tracer_provider=TracerProvider()):
        assert isinstance(telemetry_at_start(), Telemetry)
