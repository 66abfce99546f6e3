"""Profile one scenario of one framework with pyinstrument: `python -m bench.profile A raf`.

Runs the same workload as the worker (scenarios A, B, C or E) for a fixed number of runs under
pyinstrument's statistical profiler and prints the call tree; `--html FILE` writes it as a page.
pyinstrument is not a dependency of raf: install it where the peers go
(`pip install -r bench/requirements-peers.txt`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: bench/profile.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.suites import SUITES, load
from bench.suites.base import CHAIN_LENGTH, DEPTH, FAN_OUT, SESSION_CHAIN, SESSIONS, Suite


async def _workload(suite: Suite, scenario: str, runs: int, profiler: Any) -> None:
    if scenario == "A":
        run = await suite.chain(CHAIN_LENGTH)
    elif scenario == "B":
        run = await suite.fan_out(FAN_OUT)
    elif scenario == "C":
        run = await suite.sessions(SESSIONS, SESSION_CHAIN)
    else:
        nested = await suite.nested(DEPTH)

        async def run_nested() -> None:
            await nested()

        await run_nested()
        profiler.start()
        for _ in range(runs):
            await run_nested()
        profiler.stop()
        return
    await run()
    profiler.start()
    for _ in range(runs):
        await run()
    profiler.stop()


def main(argv: list[str] | None = None) -> int:
    """Profile, then print the call tree (or write it as HTML)."""
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument("scenario", choices=["A", "B", "C", "E"])
    parser.add_argument("framework", choices=list(SUITES), nargs="?", default="raf")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--html", type=Path, help="write the profile as an HTML page")
    args = parser.parse_args(argv)
    try:
        profiler: Any = importlib.import_module("pyinstrument").Profiler(
            interval=0.0001, async_mode="disabled"
        )
    except ImportError:
        parser.error("pyinstrument is not installed: pip install -r bench/requirements-peers.txt")
    import anyio

    anyio.run(_workload, load(args.framework), args.scenario, args.runs, profiler)
    if args.html is not None:
        page: str = profiler.output_html()
        args.html.write_text(page, encoding="utf-8")
    else:
        tree: str = profiler.output_text(unicode=True, show_all=False)
        print(tree)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
