"""The benchmark harness: `python -m bench` (or `python bench/run.py`).

Every measurement runs in a fresh `python -m bench.worker` process, so imports and memory start
clean. Process runs are interleaved: for each of K rounds, every scenario runs once per
framework, the frameworks' order rotating round by round. The harness installs nothing: a
framework that is not importable by the chosen interpreter is reported as not installed.

Example:
    python -m bench --quick --frameworks raf,floor
    .venv-bench/bin/python -m bench --scenarios A,C --runs 7
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: bench/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import Record, judge, markdown, summarize, write
from bench.scenarios import SCENARIOS, Scenario
from bench.suites import SUITES

ROOT = Path(__file__).resolve().parent.parent
"""The repository root (where the `bench` package lives)."""
RESULTS = ROOT / "bench" / "results"
"""Where results go unless `--out` says otherwise."""


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark raf against a plain-anyio floor and peer frameworks.",
    )
    parser.add_argument("--quick", action="store_true", help="few iterations, one process run")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="e.g. A,C (default all)")
    parser.add_argument("--frameworks", default=",".join(SUITES), help="e.g. raf,floor")
    parser.add_argument("--runs", type=int, help="process runs per cell (default 5, quick 1)")
    parser.add_argument("--iterations", type=int, help="timed runs per process (overrides)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for latest.*")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the workers")
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="time with perf_counter (wall, default) or process CPU time (steadier on a busy machine)",
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds per worker process")
    args = parser.parse_args(argv)
    args.scenarios = _choices(args.scenarios, list(SCENARIOS), parser)
    args.frameworks = _choices(args.frameworks, list(SUITES), parser)
    if args.runs is None:
        args.runs = 1 if args.quick else 5
    return args


def _choices(text: str, known: list[str], parser: argparse.ArgumentParser) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [c for c in chosen if c not in known]
    if unknown or not chosen:
        parser.error(f"unknown choice(s) {unknown}; pick from {', '.join(known)}")
    return [k for k in known if k in chosen]


def _worker(python: str, arguments: list[str], timeout: float) -> Record:
    """Run one worker process and return its JSON answer (or an error record)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    command = [python, "-m", "bench.worker", *arguments]
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"status": "error", "reason": f"worker timed out after {timeout:g}s"}
    lines = done.stdout.strip().splitlines()
    try:
        record: Record = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (done.stderr or done.stdout).strip()[-600:]
        return {"status": "error", "reason": f"worker exited {done.returncode}: {tail}"}
    return record


def _iterations(scenario: Scenario, args: argparse.Namespace) -> tuple[int, int]:
    if args.iterations is not None:
        return args.iterations, 0 if args.quick else scenario.warmup
    if args.quick:
        return scenario.quick_iterations, min(1, scenario.warmup)
    return scenario.iterations, scenario.warmup


def _commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
    except OSError:
        return None
    return done.stdout.strip() or None


def _machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}"


def _yardstick_ms(repeats: int) -> float:
    """Best time, in ms, of `repeats` runs of a fixed pure-Python workload: how fast this
    machine runs Python (7 runs in a full benchmark, 3 with `--quick`, whose numbers are not
    compared).

    Absolute results scale with it from machine to machine (the ratios much less), so the
    report carries it to compare runs made on different machines.
    """
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        table: dict[int, int] = {}
        total = 0
        for i in range(200_000):
            table[i & 1023] = i
            total += table[i & 511]
        best = min(best, time.perf_counter() - started)
    return best * 1000


def _compile(python: str) -> None:
    """Compile raf's and the harness's sources for the workers' interpreter first.

    The peers are installed, so compiled (`pip install` writes their bytecode); raf runs from
    this tree. Where bytecode is not written (`PYTHONDONTWRITEBYTECODE`, a read-only tree) every
    worker would compile raf again: G would time the compiler (a quarter of `import raf`'s
    instructions) and D would count its memory.
    """
    subprocess.run(
        [python, "-m", "compileall", "-q", str(ROOT / "raf"), str(ROOT / "bench")],
        check=False,
        capture_output=True,
    )


def measure(args: argparse.Namespace) -> Record:
    """Probe the frameworks, run every cell K times interleaved, and summarize."""
    _compile(args.python)
    probes = {f: _worker(args.python, ["probe", f], args.timeout) for f in args.frameworks}
    active = [f for f in args.frameworks if probes[f].get("status") == "ok"]
    for framework in args.frameworks:
        if framework not in active:
            _say(f"{framework}: {probes[framework].get('reason', 'unavailable')}")
    records: dict[tuple[str, str], list[Record]] = {}
    settled: dict[tuple[str, str], Record] = {}
    started = time.perf_counter()
    for round_index in range(args.runs):
        for scenario_id in args.scenarios:
            scenario = SCENARIOS[scenario_id]
            iterations, warmup = _iterations(scenario, args)
            shift = round_index % max(1, len(active))
            for framework in active[shift:] + active[:shift]:
                key = (scenario_id, framework)
                if key in settled:
                    continue
                record = _worker(
                    args.python,
                    [
                        scenario_id,
                        framework,
                        "--iterations",
                        str(iterations),
                        "--warmup",
                        str(warmup),
                        "--clock",
                        args.clock,
                    ],
                    args.timeout,
                )
                records.setdefault(key, []).append(record)
                if record.get("status") in ("unavailable", "missing"):
                    settled[key] = record
                shown = number_text(record)
                _say(f"round {round_index + 1}/{args.runs} {scenario_id} {framework}: {shown}")
    _say(f"measured in {time.perf_counter() - started:.0f}s")
    rows: list[Record] = []
    for scenario_id in args.scenarios:
        cells: dict[str, Record] = {}
        for framework in args.frameworks:
            if framework not in active:
                probe = probes[framework]
                cells[framework] = {"status": probe.get("status"), "reason": probe.get("reason")}
            else:
                cells[framework] = summarize(records.get((scenario_id, framework), []))
        verdict = judge(SCENARIOS[scenario_id], cells)
        rows.append(
            {"id": scenario_id, "unit": SCENARIOS[scenario_id].unit, "cells": cells, **verdict}
        )
    return {
        "meta": {
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": _machine(),
            "yardstick_ms": _yardstick_ms(3 if args.quick else 7),
            "python": platform.python_version(),
            "interpreter": args.python,
            "quick": args.quick,
            "clock": args.clock,
            "runs": args.runs,
            "raf_commit": _commit(),
        },
        "frameworks": args.frameworks,
        "probes": probes,
        "scenarios": rows,
    }


def number_text(record: Record) -> str:
    """A worker record in a few words, for progress lines."""
    if record.get("status") == "ok":
        return f"{record['value']:.4g}"
    return f"{record.get('status')}: {str(record.get('reason', ''))[:160]}"


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, write `latest.json` and `latest.md`, print the table."""
    args = _arguments(argv)
    results = measure(args)
    json_path, md_path = write(results, args.out)
    print(markdown(results))
    _say(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
