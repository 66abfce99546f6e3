"""One measurement in a fresh process: `python -m bench.worker SCENARIO FRAMEWORK --iterations N`.

Prints one JSON object: the scenario's value for the framework (`status` "ok"), or why there is
none ("unavailable": not implemented or not applicable, "missing": not installed, "error": the
run failed or did different work than expected). `python -m bench.worker probe FRAMEWORK`
reports whether the framework loads, its version and how the suite maps onto it.
"""

from __future__ import annotations


def _status_kib(field: str) -> int:
    """A `VmRSS`/`VmHWM`-style field of /proc/self/status, in KiB (0 where there is none)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


_START_RSS_KIB = _status_kib("VmRSS")
"""Resident memory right after interpreter start, before anything is imported."""

# Heavier standard modules (subprocess, tempfile, traceback) are imported where they are used,
# so that memory measured by scenario D is the framework's, not the worker's.
import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from typing import Any, cast  # noqa: E402

from bench import patterns, teams  # noqa: E402
from bench.patterns import PatternRun, wrong_work  # noqa: E402
from bench.scenarios import SCENARIOS, Scenario  # noqa: E402
from bench.suites import SUITES, Unavailable, load  # noqa: E402
from bench.suites.base import (  # noqa: E402
    CHAIN_LENGTH,
    CHECKPOINT_CHAIN,
    DEPTH,
    FAN_OUT,
    SESSION_CHAIN,
    SESSIONS,
    Checkpointed,
    ClockKind,
    Outcome,
    PreparedRun,
    Run,
    Suite,
    now,
    use_clock,
)

_HARNESS_RSS_KIB = _status_kib("VmRSS")
"""Resident memory once the worker's own modules are loaded."""

_LANGGRAPH = ("langgraph.graph", "langchain_core.language_models")
_IMPORTS: dict[str, tuple[str, ...]] = {
    "raf": ("raf",),
    "floor": ("anyio",),
    "maf": ("agent_framework", "agent_framework_orchestrations"),
    "langgraph": _LANGGRAPH,
    "langgraph-invoke": _LANGGRAPH,
}
"""What scenario G imports per framework (kept here so G loads no framework itself)."""


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


class WrongWork(Exception):
    """A run did different logical work than the scenario asks for."""


def _check(outcome: Outcome, tokens: int, replies: int, suite: Suite, largest: int) -> None:
    seen = suite.model.largest_input
    if outcome.tokens != tokens or outcome.replies != replies or seen != largest:
        raise WrongWork(
            f"expected {tokens} tokens streamed, {replies} replies and a largest model input of "
            f"{largest} messages; got {outcome.tokens}, {outcome.replies} and {seen}"
        )


class _Clock:
    """Repeats timed runs within the scenario's iteration count and time budget."""

    def __init__(self, scenario: Scenario, iterations: int, warmup: int, cpu: bool) -> None:
        self.cpu = cpu
        self.iterations = iterations
        self.warmup = warmup
        self.seconds = scenario.seconds

    def enough(self, started: float, done: int) -> bool:
        if done >= self.iterations:
            return True
        return done >= min(5, self.iterations) and time.perf_counter() - started > self.seconds


async def _timed(run: Run) -> float:
    if isinstance(run, PreparedRun):
        await run.prepare()
    started = now()
    await run()
    return now() - started


async def _samples(run: Run, clock: _Clock) -> list[float]:
    for _ in range(clock.warmup):
        await _timed(run)
    samples: list[float] = []
    started = time.perf_counter()
    while not clock.enough(started, len(samples)):
        samples.append(await _timed(run))
    return samples


def _summary(samples: list[float], scale: float) -> dict[str, Any]:
    scaled = [s * scale for s in samples]
    return {
        "n": len(scaled),
        "median": _median(scaled),
        "min": min(scaled),
        "max": max(scaled),
    }


async def _chain(suite: Suite, clock: _Clock) -> dict[str, Any]:
    run = await suite.chain(CHAIN_LENGTH)
    _check(await run(), CHAIN_LENGTH, CHAIN_LENGTH, suite, CHAIN_LENGTH)
    samples = _summary(await _samples(run, clock), 1000 / CHAIN_LENGTH)
    return {"value": samples["median"], "within": samples}


async def _fan_out(suite: Suite, clock: _Clock) -> dict[str, Any]:
    run = await suite.fan_out(FAN_OUT)
    _check(await run(), FAN_OUT, FAN_OUT, suite, 1)
    samples = _summary(await _samples(run, clock), 1000)
    return {"value": samples["median"], "within": samples}


async def _sessions(suite: Suite, clock: _Clock) -> dict[str, Any]:
    run = await suite.sessions(SESSIONS, SESSION_CHAIN)
    if isinstance(run, PreparedRun):
        await run.prepare()
    total = SESSIONS * SESSION_CHAIN
    _check(await run(), total, total, suite, SESSION_CHAIN)
    seconds = await _samples(run, clock)
    rates = sorted(SESSIONS / s for s in seconds)
    return {
        "value": SESSIONS / _median(seconds),
        "within": {"n": len(rates), "median": _median(rates), "min": rates[0], "max": rates[-1]},
    }


async def _memory(suite: Suite, clock: _Clock) -> dict[str, Any]:
    imported = _status_kib("VmHWM")
    run = await suite.sessions(SESSIONS, SESSION_CHAIN)
    for _ in range(max(1, clock.iterations)):
        await _timed(run)
    peak = _status_kib("VmHWM")
    return {
        "value": (peak - _START_RSS_KIB) / 1024,
        "within": {
            "start_rss_mib": _START_RSS_KIB / 1024,
            "worker_modules_mib": (_HARNESS_RSS_KIB - _START_RSS_KIB) / 1024,
            "after_import_mib": (imported - _START_RSS_KIB) / 1024,
            "peak_mib": peak / 1024,
            "batches": max(1, clock.iterations),
        },
    }


async def _nesting(suite: Suite, clock: _Clock) -> dict[str, Any]:
    """Token latency at depths 0, 1 and `DEPTH`; per level = (at DEPTH - at 1) / (DEPTH - 1).

    Depth 1 is the reference rather than depth 0: a leaf run on its own streams the token as
    the first item of a fresh stream, which also waits for the consumer to start; from depth 1
    on, the root is a workflow either way, so the difference is what the nesting adds.
    """
    depths = (0, 1, DEPTH)
    runs = [await suite.nested(depth) for depth in depths]
    for run in runs:
        if await run() <= 0:
            raise WrongWork("the token did not reach the consumer")
    for _ in range(clock.warmup):
        for run in runs:
            await run()
    latencies: list[list[float]] = [[] for _ in depths]
    started = time.perf_counter()
    while not clock.enough(started, len(latencies[-1])):
        for run, samples in zip(runs, latencies, strict=True):
            samples.append(await run())
    medians = [_median(samples) * 1e6 for samples in latencies]
    return {
        "value": (medians[-1] - medians[1]) / (DEPTH - 1),
        "within": {"n": len(latencies[-1])}
        | {f"depth{depth}_us": round(m, 2) for depth, m in zip(depths, medians, strict=True)},
    }


async def _checkpoint(suite: Suite, clock: _Clock) -> dict[str, Any]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="raf-bench-") as directory:
        variants = await suite.checkpointed(CHECKPOINT_CHAIN, directory)
        try:
            checkpoints, plain, stored = await _checkpoint_samples(variants, suite, clock)
        finally:
            if variants.close is not None:
                await variants.close()
    plain_ms = _median(plain) * 1000
    stored_ms = _median(stored) * 1000
    return {
        "value": (stored_ms - plain_ms) / checkpoints,
        "within": {
            "n": len(stored),
            "checkpoints_per_run": checkpoints,
            "run_ms_without": plain_ms,
            "run_ms_with": stored_ms,
        },
    }


async def _checkpoint_samples(
    variants: Checkpointed, suite: Suite, clock: _Clock
) -> tuple[int, list[float], list[float]]:
    """Checkpoints per run, and run times without and with the store, interleaved."""
    n = CHECKPOINT_CHAIN
    _check(await variants.plain(), n, n, suite, n)
    _check(await variants.checkpointed(), n, n, suite, n)
    checkpoints = await variants.checkpoints()
    if checkpoints < 1:
        raise WrongWork("the checkpointed run wrote no checkpoint")
    for _ in range(clock.warmup):
        await _timed(variants.plain)
        await _timed(variants.checkpointed)
    plain: list[float] = []
    stored: list[float] = []
    started = time.perf_counter()
    while not clock.enough(started, len(stored)):
        plain.append(await _timed(variants.plain))
        stored.append(await _timed(variants.checkpointed))
    return checkpoints, plain, stored


async def _pattern(
    workload: PatternRun, *, tokens: int, replies: int, least_input: int, per: int, clock: _Clock
) -> dict[str, Any]:
    """Time a pattern run after checking its work; the value is ms per `per` (agent or round)."""
    problem = wrong_work(
        await _timed_outcome(workload.run),
        tokens=tokens,
        replies=replies,
        largest=workload.largest_input(),
        least_input=least_input,
    )
    if problem is not None:
        raise WrongWork(problem)
    samples = _summary(await _samples(workload.run, clock), 1000 / per)
    return {
        "value": samples["median"],
        "within": samples | {"largest_input": workload.largest_input()},
    }


async def _timed_outcome(run: Run) -> Outcome:
    if isinstance(run, PreparedRun):
        await run.prepare()
    return await run()


async def _handoff(suite: Suite, clock: _Clock) -> dict[str, Any]:
    # The last agent was handed at least the prompt and every earlier agent's reply.
    chain = patterns.HANDOFF_CHAIN
    workload = await patterns.handoff(suite)
    return await _pattern(
        workload, tokens=chain, replies=chain, least_input=chain, per=chain, clock=clock
    )


async def _group_chat(suite: Suite, clock: _Clock) -> dict[str, Any]:
    rounds = patterns.CHAT_ROUNDS
    # At least the prompt and one round of the other members' replies.
    least = patterns.CHAT_MEMBERS
    workload = await patterns.group_chat(suite)
    return await _pattern(
        workload, tokens=rounds, replies=rounds, least_input=least, per=rounds, clock=clock
    )


async def _magentic(suite: Suite, clock: _Clock) -> dict[str, Any]:
    rounds = teams.MAGENTIC_ROUNDS
    # Each participant's token, and the manager's final answer. How much of the team's work a
    # participant is handed differs between frameworks (`largest_input` in the report).
    workload = await teams.magentic(suite)
    return await _pattern(
        workload, tokens=rounds + 1, replies=1, least_input=1, per=rounds, clock=clock
    )


async def _vote(suite: Suite, clock: _Clock) -> dict[str, Any]:
    # Each voter's token, and the answer with the winner.
    workload = await teams.vote(suite)
    return await _pattern(
        workload, tokens=teams.VOTERS + 1, replies=1, least_input=1, per=1, clock=clock
    )


_ASYNC: dict[str, Callable[[Suite, _Clock], Awaitable[dict[str, Any]]]] = {
    "A": _chain,
    "B": _fan_out,
    "C": _sessions,
    "D": _memory,
    "E": _nesting,
    "F": _checkpoint,
    "H": _handoff,
    "I": _group_chat,
    "J": _magentic,
    "K": _vote,
}


def _import_time(framework: str, clock: _Clock) -> dict[str, Any]:
    import subprocess

    modules = _IMPORTS[framework]
    timer = "time.process_time" if clock.cpu else "time.perf_counter"
    code = (
        f"import time\nstarted = {timer}()\n"
        + "".join(f"import {m}\n" for m in modules)
        + f"print({timer}() - started)\n"
    )

    def spawn() -> float:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if done.returncode != 0:
            raise Unavailable(f"{framework} is not importable: {done.stderr.strip()[-300:]}")
        return float(done.stdout.strip())

    for _ in range(clock.warmup):
        spawn()
    samples = [spawn() for _ in range(max(1, clock.iterations))]
    summary = _summary(samples, 1000)
    result: dict[str, Any] = {"value": summary["median"], "within": summary}
    if framework == "raf":
        result["within"]["slowest_imports_ms"] = _slowest_imports(modules)
    return result


def _slowest_imports(modules: tuple[str, ...], top: int = 8) -> dict[str, float]:
    """Modules with the largest cumulative import time (`-X importtime`), in ms.

    Modules the interpreter imports at start-up (`site` and its friends) are left out.
    """
    import subprocess

    def timings(code: str) -> list[tuple[float, str]]:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True
        )
        rows: list[tuple[float, str]] = []
        for line in done.stderr.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[1].strip().isdigit():
                rows.append((int(parts[1]) / 1000, parts[2].strip()))
        return rows

    startup = {name for _, name in timings("pass")}
    rows = sorted(
        (
            row
            for row in timings("".join(f"import {m}\n" for m in modules))
            if row[1] not in startup
        ),
        reverse=True,
    )
    return {name: round(ms, 1) for ms, name in rows[:top]}


def _single(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        if len(group.exceptions) == 1:
            return _single(group.exceptions[0])
        return group
    return exc


def measure(
    scenario_id: str, framework: str, iterations: int, warmup: int, clock_kind: ClockKind = "wall"
) -> dict[str, Any]:
    """Measure one scenario for one framework in this process, on the `clock_kind` clock."""
    import anyio

    use_clock(clock_kind)
    scenario = SCENARIOS[scenario_id]
    clock = _Clock(scenario, iterations, warmup, clock_kind == "cpu")
    if scenario_id == "G":
        return _import_time(framework, clock)
    suite = load(framework)
    return anyio.run(_ASYNC[scenario_id], suite, clock)


def probe(framework: str) -> dict[str, Any]:
    """Whether `framework` loads; its version and how its suite maps the scenarios."""
    suite = load(framework)
    return {"version": suite.version(), "details": suite.details()}


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, measure, print one JSON object."""
    parser = argparse.ArgumentParser(prog="python -m bench.worker")
    parser.add_argument("scenario", choices=[*SCENARIOS, "probe"])
    parser.add_argument("framework", choices=list(SUITES))
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"scenario": args.scenario, "framework": args.framework}
    try:
        if args.scenario == "probe":
            result.update(probe(args.framework))
        else:
            result.update(
                measure(args.scenario, args.framework, args.iterations, args.warmup, args.clock)
            )
        result["status"] = "ok"
    except Unavailable as exc:
        missing = "not installed" in str(exc) or "not importable" in str(exc)
        result.update(status="missing" if missing else "unavailable", reason=str(exc))
    except WrongWork as exc:
        result.update(status="error", reason=f"wrong work: {exc}")
    except Exception as exc:
        import traceback

        cause = _single(exc)
        result.update(status="error", reason=f"{type(cause).__name__}: {cause}")
        result["traceback"] = "".join(traceback.format_exception(cause))[-4000:]
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
