"""Instructions per agent node (A, B, H, I, K, L) or per run (C), counted by valgrind, here and at
another revision: the hot-path check that does not depend on what else the machine runs.

    python -m bench.instructions A C
    python -m bench.instructions A C --against a9245e8

Each count is `valgrind --tool=callgrind python -m bench.count S RUNS` minus the same with 0
runs (imports and warm-up cancel out), divided by the nodes or runs counted, with
`PYTHONHASHSEED=0` so that counts of one tree repeat. `--against REV`
checks REV out in a temporary git worktree and counts it with the same interpreter, then
prints each count's ratio to it. Needs valgrind (`apt-get install valgrind`).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from bench.patterns import CHAT_ROUNDS, HANDOFF_CHAIN
from bench.suites.base import CHAIN_LENGTH, FAN_OUT, LONG_CHAIN
from bench.teams import VOTERS

ROOT = Path(__file__).resolve().parent.parent

# scenario: (runs counted, units per run, unit)
PLANS: dict[str, tuple[int, int, str]] = {
    "A": (50, CHAIN_LENGTH, "node"),
    "B": (50, FAN_OUT, "node"),
    "C": (5, 1, "run"),
    "H": (50, HANDOFF_CHAIN, "agent"),
    "I": (50, CHAT_ROUNDS, "round"),
    "K": (50, VOTERS, "voter"),
    "L": (10, LONG_CHAIN, "node"),
}

_COLLECTED = re.compile(r"Collected : (\d+)")


def total(tree: Path, scenario: str, runs: int) -> int:
    """Instructions of one `python -m bench.count scenario runs` process run in `tree`."""
    return callgrind_total(tree, ["bench.count", scenario, str(runs)], scenario)


def callgrind_total(tree: Path, module: list[str], what: str) -> int:
    """Instructions of one `python -m MODULE ARGS...` process run in `tree` under callgrind
    (`PYTHONHASHSEED=0`); `what` names it when it fails."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    environment = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [*command, "-m", *module], cwd=tree, env=environment, capture_output=True, text=True
    )
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"counting {what} in {tree} failed:\n{tail}")
    return int(found.group(1))


def per_unit(trees: Sequence[Path], scenarios: Sequence[str]) -> dict[tuple[Path, str], float]:
    """Instructions per node (or run) of each scenario in each tree; the valgrind processes
    run side by side, one per core (counts do not depend on what else runs)."""
    for tree in trees:
        # Compiled first: runs side by side would otherwise race to write the same .pyc files,
        # and a run that finds them compiled counts fewer instructions than one that compiles.
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(tree / "raf"), str(tree / "bench")],
            check=True,
            capture_output=True,
        )
    jobs = [(t, s, n) for t in trees for s in scenarios for n in (PLANS[s][0], 0)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        totals = dict(zip(jobs, pool.map(lambda job: total(*job), jobs), strict=True))
    counts: dict[tuple[Path, str], float] = {}
    for tree in trees:
        for scenario in scenarios:
            runs, units, _ = PLANS[scenario]
            counted = totals[(tree, scenario, runs)] - totals[(tree, scenario, 0)]
            counts[(tree, scenario)] = counted / (runs * units)
    return counts


@contextmanager
def trees_against(revision: str | None) -> Iterator[list[Path]]:
    """This checkout, and (given a git `revision`) a scratch worktree of it, removed after."""
    if revision is None:
        yield [ROOT]
        return
    with tempfile.TemporaryDirectory() as scratch:
        other = Path(scratch) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(other), revision],
            check=True,
            capture_output=True,
        )
        try:
            yield [ROOT, other]
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)],
                check=False,
                capture_output=True,
            )


def main(argv: Sequence[str] | None = None) -> int:
    """Count the scenarios given, here and (with `--against`) at another revision."""
    parser = argparse.ArgumentParser(prog="python -m bench.instructions")
    parser.add_argument("scenarios", nargs="+", choices=sorted(PLANS))
    parser.add_argument("--against", metavar="REV", help="a git revision to compare with")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed: apt-get install valgrind")
    with trees_against(args.against) as trees:
        counts = per_unit(trees, args.scenarios)
    other = trees[1] if len(trees) > 1 else None
    for scenario in args.scenarios:
        unit = PLANS[scenario][2]
        here = counts[(ROOT, scenario)]
        line = f"{scenario}: {here:,.0f} instructions per {unit}"
        if other is not None:
            there = counts[(other, scenario)]
            line += f"; {args.against}: {there:,.0f} (ratio {here / there:.3f})"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
