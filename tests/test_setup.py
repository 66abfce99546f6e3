"""The README's two set-up commands: what they install, and that CI runs exactly them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRAS: dict[str, list[str]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "optional-dependencies"
]


def requirements(extra: str) -> set[str]:
    """The distributions an extra brings in, following `raf[...]` references."""
    names: set[str] = set()
    for requirement in EXTRAS[extra]:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement)
        assert name is not None
        if name.group() == "raf":
            for inner in re.findall(r"[a-z]+", requirement.split("[", 1)[1]):
                names |= requirements(inner)
        else:
            names.add(name.group().lower())
    return names


def readme_commands() -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)


def test_all_holds_every_runtime_part_and_no_test_tool() -> None:
    everything = requirements("all")
    for part in ("server", "acp", "mcp", "postgres"):
        assert requirements(part) <= everything
    assert {"starlette", "uvicorn", "sse-starlette", "ag-ui-protocol"} <= everything
    assert {"agent-client-protocol", "mcp", "psycopg"} <= everything
    assert everything.isdisjoint({"pytest", "ruff", "pyright", "hypothesis", "trio"})


def test_dev_adds_the_test_tools_to_everything() -> None:
    assert requirements("all") | {"pytest", "ruff", "pyright"} <= requirements("dev")


def test_the_readme_has_two_pasteable_commands_and_ci_runs_them_in_order() -> None:
    setup, tests = readme_commands()
    assert "\n" not in setup and "\n" not in tests
    assert setup.endswith("pip install -e '.[all]' && raf demo")
    assert tests == "pip install -e '.[dev]' && pytest"
    ci = (ROOT / ".ci" / "run").read_text().replace(" --quiet", "")
    installed = ci.index("pip install -e '.[all]' && raf demo\n")
    assert ci.index(f"\n{tests}\n") > installed
