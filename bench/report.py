"""Summaries of the measurements, and the results files (`latest.json`, `latest.md`)."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

from bench.scenarios import SCENARIOS, TARGET_PEER_FACTOR, Scenario
from bench.suites import LABELS, PEERS, SHORT

Record = dict[str, Any]
"""One worker's JSON answer."""


_CLOCK_TEXT = {"wall": "wall-clock time", "cpu": "CPU time of the worker process"}


def summarize(records: list[Record]) -> Record:
    """Median, quartiles and range over the process runs of one (scenario, framework) cell."""
    values = [float(r["value"]) for r in records if r.get("status") == "ok"]
    if not values:
        failed = records[-1] if records else {"status": "unavailable", "reason": "not run"}
        return {"status": failed.get("status", "error"), "reason": failed.get("reason", "")}
    q1, _, q3 = (
        statistics.quantiles(values, n=4, method="inclusive")
        if len(values) > 1
        else (values[0],) * 3
    )
    return {
        "status": "ok",
        "median": statistics.median(values),
        "q1": q1,
        "q3": q3,
        "min": min(values),
        "max": max(values),
        "runs": len(values),
        "values": values,
        "within": [r.get("within", {}) for r in records if r.get("status") == "ok"],
    }


def _ratio(raf: Record, other: Record) -> float | None:
    if raf.get("status") != "ok" or other.get("status") != "ok":
        return None
    if other["median"] <= 0 or raf["median"] <= 0:
        return None
    return float(raf["median"] / other["median"])


def judge(scenario: Scenario, cells: dict[str, Record]) -> Record:
    """Ratios of raf to the floor and each peer, and whether raf meets its target."""
    raf = cells.get("raf", {"status": "missing"})
    ratios = {name: _ratio(raf, cell) for name, cell in cells.items() if name != "raf"}
    if raf.get("status") != "ok":
        return {"ratios": ratios, "met": None, "why": "raf has no value"}
    met = scenario.met(raf["median"])
    why = f"{raf['median']:.4g} {scenario.unit} {scenario.target_text}"
    peers = [cells[p]["median"] for p in PEERS if cells.get(p, {}).get("status") == "ok"]
    if scenario.id == "A" and peers:
        fastest = min(peers)
        met = met and raf["median"] * TARGET_PEER_FACTOR <= fastest
        why += f"; fastest peer {fastest:.4g} {scenario.unit} (needs {TARGET_PEER_FACTOR:g}x)"
    return {"ratios": ratios, "met": met, "why": why}


def number(value: float) -> str:
    """A value with a sensible number of digits."""
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def _cell(record: Record) -> str:
    if record.get("status") != "ok":
        return {"missing": "not installed", "unavailable": "n/a"}.get(
            record.get("status", ""), "error"
        )
    if record["runs"] == 1:
        return number(record["median"])
    return f"{number(record['median'])} [{number(record['min'])}, {number(record['max'])}]"


def _ratio_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _yardstick_text(meta: Record) -> str:
    yardstick = meta.get("yardstick_ms")
    if yardstick is None:
        return "Machine yardstick: not measured."
    return (
        f"Machine yardstick: {yardstick:.1f} ms for a fixed pure-Python loop (best of 7; lower is "
        "a faster machine). Absolute results scale with it; compare runs on different machines "
        "through it or through the ratios."
    )


def markdown(results: Record) -> str:
    """The results as a Markdown page: the table, then how each number was obtained."""
    frameworks: list[str] = results["frameworks"]
    others = [f for f in frameworks if f != "raf"]
    meta = results["meta"]
    lines = [
        "# raf benchmark results",
        "",
        f"{meta['date']} | {meta['machine']} | Python {meta['python']} | "
        f"{'quick mode' if meta['quick'] else 'full run'}: {meta['runs']} process run(s) per cell, "
        f"frameworks interleaved run by run | {_CLOCK_TEXT[meta.get('clock', 'wall')]} | "
        f"raf {meta.get('raf_commit') or ''}".rstrip(),
        "",
        _yardstick_text(meta),
        "",
        "Cells: median over process runs [min, max] over those runs. raf/x is raf's median divided "
        "by x's: below 1 raf is faster or smaller, except for C (sessions/s), where above 1 raf "
        "serves more. The floor is plain anyio doing the same logical work.",
        "",
    ]
    head = ["Scenario", "Unit", *(LABELS[f] for f in frameworks)]
    head += [f"raf/{SHORT[f]}" for f in others] + ["raf target", "Met?"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in results["scenarios"]:
        scenario = SCENARIOS[row["id"]]
        cells = [_cell(row["cells"].get(f, {"status": "missing"})) for f in frameworks]
        ratios = [_ratio_text(row["ratios"].get(f)) for f in others]
        met = {True: "yes", False: "**no**", None: "-"}[row["met"]]
        title = f"**{scenario.id}** {scenario.title}"
        lines.append(
            "| "
            + " | ".join([title, scenario.unit, *cells, *ratios, scenario.target_text, met])
            + " |"
        )
    lines += ["", "## How each number is obtained", ""]
    for row in results["scenarios"]:
        scenario = SCENARIOS[row["id"]]
        lines.append(f"- **{scenario.id}** ({scenario.unit}): {scenario.method}.")
        for framework in frameworks:
            cell = row["cells"].get(framework, {})
            if cell.get("status") not in ("ok", None):
                lines.append(f"  - {LABELS[framework]}: {cell['status']}: {cell.get('reason', '')}")
            elif cell.get("within"):
                lines.append(f"  - {LABELS[framework]}: {_within(cell['within'][0])}")
    lines += ["", "## Frameworks", ""]
    for framework in frameworks:
        probe = results["probes"].get(framework, {})
        if probe.get("status") == "ok":
            details = "; ".join(f"{k}: {v}" for k, v in probe.get("details", {}).items())
            lines.append(f"- **{LABELS[framework]}** ({probe['version']}): {details}")
        else:
            lines.append(f"- **{LABELS[framework]}**: {probe.get('reason', 'not run')}")
    return "\n".join(lines) + "\n"


def _within(within: Record) -> str:
    """One process run's details, as `key value` pairs (first process run)."""
    parts: list[str] = []
    for key, value in within.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} {v}" for k, v in list(value.items())[:6])  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType, reportUnknownMemberType]
            parts.append(f"{key}: {inner}")
        elif isinstance(value, float):
            parts.append(f"{key} {number(value)}")
        else:
            parts.append(f"{key} {value}")
    return "first process run: " + ", ".join(parts)


def write(results: Record, directory: Path) -> tuple[Path, Path]:
    """Write `latest.json` and `latest.md` into `directory` (each replaced atomically)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = (directory / "latest.json", directory / "latest.md")
    texts = (json.dumps(results, indent=2, sort_keys=False) + "\n", markdown(results))
    for path, text in zip(paths, texts, strict=True):
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    return paths
