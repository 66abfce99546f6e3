"""The benchmark harness keeps working: a quick run for raf and the floor writes its results.

Numbers are not judged here (timed assertions do not belong in the test suite); the test checks
that every scenario produces a number, or says why it cannot, and that the files are written.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# The quick run happens in a module fixture, which the default 60 s per test also covers.
pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K"]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, str]:
    return _quick(tmp_path_factory.mktemp("bench"), "--frameworks", "raf,floor")


def _quick(out: Path, *arguments: str) -> tuple[dict[str, Any], str, str]:
    """A quick `python -m bench` run writing into `out`: its results, page and printed table."""
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(out), *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / "latest.json").read_text())
    return results, (out / "latest.md").read_text(), done.stdout


def _cells(results: dict[str, Any], framework: str) -> dict[str, dict[str, Any]]:
    return {row["id"]: row["cells"][framework] for row in results["scenarios"]}


def test_every_scenario_has_a_row(quick_run: tuple[dict[str, Any], str, str]) -> None:
    results, _, _ = quick_run
    assert [row["id"] for row in results["scenarios"]] == SCENARIOS
    assert results["frameworks"] == ["raf", "floor"]
    assert results["meta"]["quick"] is True


def test_floor_measures_every_scenario(quick_run: tuple[dict[str, Any], str, str]) -> None:
    results, _, _ = quick_run
    for scenario, cell in _cells(results, "floor").items():
        assert cell["status"] == "ok", (scenario, cell)
        assert isinstance(cell["median"], float)
        assert cell["min"] <= cell["median"] <= cell["max"]


def test_raf_measures_every_scenario(quick_run: tuple[dict[str, Any], str, str]) -> None:
    results, _, _ = quick_run
    rows = {row["id"]: row for row in results["scenarios"]}
    for scenario, cell in _cells(results, "raf").items():
        assert cell["status"] == "ok", (scenario, cell)
        assert isinstance(cell["median"], float)
        assert rows[scenario]["met"] in (True, False)
        if scenario != "E":  # E's floor and raf values may be ~0 or negative noise
            assert cell["median"] > 0
            assert rows[scenario]["ratios"]["floor"] is not None


def test_raf_uses_the_builders_and_react_leaves(
    quick_run: tuple[dict[str, Any], str, str],
) -> None:
    results, _, _ = quick_run
    details = results["probes"]["raf"]["details"]
    assert details["workflows"].startswith("SequentialBuilder / ConcurrentBuilder")
    assert details["leaf"].startswith("ReactAgent")


def test_markdown_table_is_written_and_printed(quick_run: tuple[dict[str, Any], str, str]) -> None:
    _, page, printed = quick_run
    header = "| Scenario | Unit | raf | floor (anyio) | raf/floor | raf target | Met? |"
    assert "error" not in page.split("## How")[0]
    assert header in page
    for scenario in SCENARIOS:
        assert f"| **{scenario}** " in page
    assert header in printed


def test_a_needs_ten_times_the_fastest_peer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.report import judge, summarize
    from bench.scenarios import SCENARIOS as SPECS

    def cell(*values: float) -> dict[str, Any]:
        return summarize([{"status": "ok", "value": v} for v in values])

    fast_peer = {"raf": cell(0.05, 0.04, 0.06), "maf": cell(0.3), "langgraph": cell(0.6)}
    slow_peer = {"raf": cell(0.05, 0.04, 0.06), "maf": cell(0.6), "langgraph": cell(0.9)}
    assert judge(SPECS["A"], fast_peer)["met"] is False
    assert judge(SPECS["A"], slow_peer)["met"] is True
    assert judge(SPECS["A"], slow_peer)["ratios"]["maf"] == pytest.approx(0.05 / 0.6)
    assert judge(SPECS["C"], {"raf": cell(2500.0)})["met"] is False
    assert summarize([{"status": "unavailable", "reason": "later"}]) == {
        "status": "unavailable",
        "reason": "later",
    }


def test_langgraph_invoke_is_a_peer_with_its_own_ratio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.report import judge, markdown, summarize
    from bench.scenarios import SCENARIOS as SPECS

    def cell(value: float) -> dict[str, Any]:
        return summarize([{"status": "ok", "value": value}])

    cells = {"raf": cell(0.05), "langgraph": cell(1.0), "langgraph-invoke": cell(0.4)}
    verdict = judge(SPECS["A"], cells)
    assert verdict["ratios"] == {"langgraph": 0.05, "langgraph-invoke": pytest.approx(0.125)}
    assert verdict["met"] is False  # ainvoke is the fastest peer: 0.05 * 10 > 0.4
    page = markdown(
        {
            "meta": {"date": "-", "machine": "-", "python": "-", "quick": True, "runs": 1},
            "frameworks": list(cells),
            "probes": {},
            "scenarios": [{"id": "A", "cells": cells, **verdict}],
        }
    )
    assert "| raf/LangGraph | raf/LangGraph ainvoke |" in page
    assert "| 0.05 | 0.125 |" in page


def test_langgraph_paths_run_or_are_reported_missing(tmp_path: Path) -> None:
    """Without LangGraph (the test venv) both of its paths say so and the run goes on; with it,
    both measure (each checked for the same work first)."""
    expected = "ok" if importlib.util.find_spec("langgraph") else "missing"
    frameworks = ["raf", "langgraph", "langgraph-invoke"]
    results, _, _ = _quick(tmp_path, "--scenarios", "A", "--frameworks", ",".join(frameworks))
    assert results["frameworks"] == frameworks
    assert _cells(results, "raf")["A"]["status"] == "ok"
    for framework in frameworks[1:]:
        assert _cells(results, framework)["A"]["status"] == expected, framework


def test_workers_run_on_the_chosen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from bench import run

    calls: list[list[str]] = []

    def worker(python: str, arguments: list[str], timeout: float) -> dict[str, Any]:
        calls.append(arguments)
        return {"status": "ok", "value": 1.0, "version": "-", "details": {}}

    monkeypatch.setattr(run, "_worker", worker)
    monkeypatch.setattr(run, "_yardstick_ms", lambda repeats: 1.0)
    results = run.measure(run._arguments(["--quick", "--scenarios", "A", "--clock", "cpu"]))  # pyright: ignore[reportPrivateUsage]
    measured = [c for c in calls if c[0] != "probe"]
    assert measured
    assert all(c[c.index("--clock") + 1] == "cpu" for c in measured)
    assert results["meta"]["clock"] == "cpu"
