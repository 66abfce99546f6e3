"""Instructions of a scenario's run, by the component whose Python code runs them.

`python -m bench.attribution A 10` builds `frames.c` (a PEP 523 frame evaluator, CPython 3.11)
with the C compiler, then runs the scenario under callgrind: two warm-up runs, then for each
component the same `RUNS` runs with callgrind collecting only while the innermost Python frame
is that component's (C code counts to the frame that called it; the standard library's frames
count to their caller's), each dumped apart. It prints instructions per unit (a node of A, an
agent of B, a run of E0 and E5: a nested chain `E<depth>`, `python -m bench` scenario E).

The evaluator makes every Python call a C call of its own (about 10% more instructions in all,
spread over the components): compare components as shares, and scale them to the plain count
of `python -m bench.count`.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import sysconfig
import tempfile
from types import CodeType
from typing import Any

COMPONENTS: list[tuple[str, tuple[str, ...]]] = [
    ("ReAct loop", ("raf/react/",)),
    ("scripted model (harness)", ()),  # by name, see _MODEL
    ("seat", ("raf/providers/seat.py",)),
    ("provider checks", ("raf/providers/",)),
    ("pydantic", ("/pydantic/", "/pydantic_core/")),
    ("raf._trusted", ("raf/_trusted.py",)),
    ("messages and updates", ("raf/messages.py", "raf/updates.py")),
    ("stream and run", ("raf/_streaming.py", "raf/run.py")),
    ("engine mapping", ("raf/engine/mapping.py",)),
    ("engine runner", ("raf/engine/runner.py",)),
    ("engine context", ("raf/engine/context.py",)),
    ("engine, other", ("raf/engine/",)),
    ("origins", ("raf/_origins.py",)),
    ("sessions", ("raf/session.py", "raf/_single_writer.py")),
    ("builders", ("raf/builders/",)),
    ("agent base and other raf", ("raf/",)),
    ("anyio", ("/anyio/", "/sniffio/")),
    ("asyncio", ("/asyncio/",)),
    ("consumer (harness)", ("/bench/",)),
    ("no Python frame", ()),
]
_MODEL = ("ZeroLatencyProvider", "_Answer", "PlayedCall", "conversation_size", "_is_system")
_NO_FRAME = len(COMPONENTS) - 1


def classify(code: CodeType) -> int:
    """The index of `code`'s component, or -1: its caller's."""
    path = code.co_filename
    if "/bench/" in path and code.co_qualname.split(".")[0] in _MODEL:
        return 1
    for index, (_, parts) in enumerate(COMPONENTS):
        if any(part in path for part in parts):
            return index
    return -1


def _build(directory: str) -> None:
    paths = sysconfig.get_paths()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    source = os.path.join(os.path.dirname(__file__), "frames.c")
    include = paths["include"]
    target = os.path.join(directory, f"frames{suffix}")
    command = ["cc", "-O2", "-shared", "-fPIC", f"-I{include}", f"-I{include}/internal"]
    subprocess.run([*command, source, "-o", target], check=True)


async def _measure(scenario: str, runs: int) -> None:
    import frames  # pyright: ignore[reportMissingImports]

    from bench.suites import load
    from bench.suites.base import CHAIN_LENGTH, FAN_OUT

    suite: Any = load("raf")
    if scenario.startswith("E"):
        run = await suite.nested(int(scenario[1:]))
    else:
        run = await (suite.chain(CHAIN_LENGTH) if scenario == "A" else suite.fan_out(FAN_OUT))
    for _ in range(2):
        await run()
    frames.dump("warm-up")
    for index in ["all", *range(len(COMPONENTS))]:
        mask = (1 << 64) - 1 if index == "all" else 1 << index
        frames.start(mask, classify, _NO_FRAME)
        for _ in range(runs):
            await run()
        frames.stop()
        frames.dump(f"component {index}")


def _report(prefix: str, units: float) -> None:
    parts = glob.glob(prefix + ".*")
    for part in sorted(parts, key=lambda p: int(p.rsplit(".", 1)[1])):
        name = total = None
        with open(part) as lines:
            for line in lines:
                if line.startswith("desc: Trigger: Client Request: component "):
                    index = line.rsplit(" ", 1)[1].strip()
                    name = "all" if index == "all" else COMPONENTS[int(index)][0]
                elif line.startswith(("summary:", "totals:")):
                    total = int(line.split()[1])
        if name is not None and total is not None:
            print(f"{name:28} {total / units:12,.0f}")


def main() -> None:
    """Parse `SCENARIO RUNS`, build the evaluator and count each component under callgrind."""
    parser = argparse.ArgumentParser(prog="python -m bench.attribution")
    parser.add_argument("scenario", help="A, B, or E<depth> (E0, E5)")
    parser.add_argument("runs", type=int)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        import anyio

        anyio.run(_measure, args.scenario, args.runs)
        return
    with tempfile.TemporaryDirectory() as directory:
        _build(directory)
        out = os.path.join(directory, "callgrind.out")
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        env["PYTHONPATH"] = os.pathsep.join([directory, os.getcwd(), env.get("PYTHONPATH", "")])
        command = ["valgrind", "--tool=callgrind", "--collect-atstart=no"]
        command += [f"--callgrind-out-file={out}", sys.executable, "-m", "bench.attribution"]
        command += [args.scenario, str(args.runs), "--measure"]
        subprocess.run(command, check=True, env=env, capture_output=True)
        per_run = 20 if args.scenario in ("A", "B") else 1
        _report(out, args.runs * per_run)


if __name__ == "__main__":
    main()
