"""What a streamed token costs on the AG-UI route, end to end over a real uvicorn.

    python -m bench.sse                 # instructions per token (callgrind) and time per token
    python -m bench.sse --against REV   # the same at another revision too, side by side
    python -m bench.sse run 1000        # one workload: 3 runs of 1000 tokens (for valgrind)

A `ReactAgent` on a scripted model that streams `TOKENS` text chunks in one answer is served by
`raf.serve.agui.create_app` under uvicorn on 127.0.0.1, in this process; a client on the same
event loop posts a `RunAgentInput` over a plain TCP socket and reads the SSE body to its end,
checking that every token arrived as a `TEXT_MESSAGE_CONTENT` event. So a token's cost is the
whole way: the provider's chunk, the ReAct loop, the agent stream, the AG-UI mapper, the SSE
encoding, the response's writes through uvicorn and the socket, and the client's reads.

Two models: `paced` lets the event loop run between chunks (a chunk read off the network, one
at a time: nothing else is ready when a token goes out), `burst` yields every chunk at once
(a model faster than the server: every token is ready behind the one being sent).

The count is `valgrind --tool=callgrind python -m bench.sse run N --model M` minus the same
with 0 tokens (imports, the server's start and each run's fixed cost cancel out), divided by
the tokens counted, with `PYTHONHASHSEED=0`. The time is the same difference of the best of
several timed runs, on a clock: it moves with whatever else the machine runs.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from bench.instructions import callgrind_total, trees_against
from bench.suites.base import PlayedCall

ROOT = Path(__file__).resolve().parent.parent
RUNS = 3
"""Runs of the route per counted workload."""
TOKENS = 1000
"""Tokens per run when counting."""
MODELS = ("paced", "burst")


class ScriptedModel:
    """An `LlmProvider` answering every call with `tokens` text chunks, then usage and the
    completion; `paced` lets the event loop run once before each chunk."""

    def __init__(self, tokens: int, paced: bool) -> None:
        self.tokens = tokens
        self.paced = paced

    @property
    def model(self) -> str:
        """The model name."""
        return "scripted"

    def stream(
        self, messages: Sequence[Any], *, tools: Sequence[Any] = (), response_format: Any = None
    ) -> _Call:
        """One call; see `raf.providers.base.LlmProvider.stream`."""
        return _Call(self)


class _Call(PlayedCall[Any]):
    def __init__(self, model: ScriptedModel) -> None:
        self._model = model
        self._events = None

    async def _play(self) -> AsyncGenerator[Any]:
        from raf.providers.base import Completion, TextChunk, UsageReport

        tokens, paced = self._model.tokens, self._model.paced
        for _ in range(tokens):
            if paced:
                await anyio.lowlevel.checkpoint()
            yield TextChunk("tok ")
        yield UsageReport(1, tokens)
        yield Completion(text="tok " * tokens, input_tokens=1, output_tokens=tokens)


def _request(port: int, thread: str) -> bytes:
    body = json.dumps(
        {
            "threadId": thread,
            "runId": f"run-{thread}",
            "state": None,
            "messages": [{"id": f"m-{thread}", "role": "user", "content": "go"}],
            "tools": [],
            "context": [],
            "forwardedProps": None,
        }
    ).encode()
    head = (
        f"POST /agents/writer/run HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


async def _post(port: int, thread: str) -> bytes:
    """The whole response to one run, read off the socket until the server closes it."""
    async with await anyio.connect_tcp("127.0.0.1", port) as client:
        await client.send(_request(port, thread))
        parts: list[bytes] = []
        try:
            while True:
                parts.append(await client.receive(1 << 20))
        except anyio.EndOfStream:
            pass
    return b"".join(parts)


async def workload(tokens: int, model: str, runs: int, timed: bool = False) -> list[float]:
    """Serve the agent, run it `runs` times (after one warm-up run); each run's seconds when
    `timed`."""
    import uvicorn

    from raf.react import ReactAgent
    from raf.serve.agui import create_app
    from raf.stores import MemoryCheckpointStore

    agent = ReactAgent("writer", ScriptedModel(tokens, model == "paced"), "Write.")
    app = create_app(agent, store=MemoryCheckpointStore())
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    started = anyio.Event()

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            started.set()

    server = Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    seconds: list[float] = []
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: server.serve(sockets=[sock]))
        await started.wait()
        for index in range(1 + runs):
            start = time.perf_counter()
            body = await _post(port, f"t{index}")
            if index and timed:
                seconds.append(time.perf_counter() - start)
            sent = body.count(b'"type":"TEXT_MESSAGE_CONTENT"')
            if b"RUN_FINISHED" not in body or sent != tokens:
                raise SystemExit(
                    f"run {index} streamed {sent} of {tokens} tokens:\n{body[-500:]!r}"
                )
        server.should_exit = True
    sock.close()
    return seconds


def _total(tree: Path, tokens: int, model: str) -> int:
    return callgrind_total(tree, ["bench.sse", "run", str(tokens), "--model", model], model)


def _seconds(tree: Path, tokens: int, model: str) -> float:
    """The best time of one run of `tokens` tokens in a fresh process of `tree`."""
    command = [sys.executable, "-m", "bench.sse", "time", str(tokens), "--model", model]
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        command, cwd=tree, env=environment, capture_output=True, text=True, check=True
    )
    return float(done.stdout.split()[-1])


def measure(trees: Sequence[Path], tokens: int) -> dict[tuple[Path, str], tuple[float, float]]:
    """Instructions and microseconds per token of each model in each tree."""
    for tree in trees:
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(tree / "raf"), str(tree / "bench")],
            check=True,
            capture_output=True,
        )
    jobs = [(t, n, m) for t in trees for m in MODELS for n in (tokens, 0)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        totals = dict(zip(jobs, pool.map(lambda job: _total(*job), jobs), strict=True))
    found: dict[tuple[Path, str], tuple[float, float]] = {}
    for tree in trees:
        for model in MODELS:
            counted = (totals[(tree, tokens, model)] - totals[(tree, 0, model)]) / (RUNS * tokens)
            timed = _seconds(tree, tokens, model) - _seconds(tree, 0, model)
            found[(tree, model)] = (counted, timed / tokens * 1e6)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Measure (the default), or run one workload (`run`) or time one (`time`)."""
    parser = argparse.ArgumentParser(prog="python -m bench.sse")
    parser.add_argument("action", nargs="?", choices=["measure", "run", "time"], default="measure")
    parser.add_argument("tokens", nargs="?", type=int, default=TOKENS)
    parser.add_argument("--model", choices=MODELS, default="paced")
    parser.add_argument("--against", metavar="REV", help="a git revision to compare with")
    args = parser.parse_args(argv)
    if args.action == "run":
        anyio.run(workload, args.tokens, args.model, RUNS)
        return 0
    if args.action == "time":
        seconds = anyio.run(workload, args.tokens, args.model, 2 * RUNS, True)
        print(min(seconds))
        return 0
    with trees_against(args.against) as trees:
        found = measure(trees, args.tokens)
    other = trees[1] if len(trees) > 1 else None
    for model in MODELS:
        count, micros = found[(ROOT, model)]
        line = f"{model}: {count:,.0f} instructions, {micros:.1f} us per token"
        if other is not None:
            there, there_micros = found[(other, model)]
            line += (
                f"; {args.against}: {there:,.0f} instructions, {there_micros:.1f} us"
                f" (ratio {count / there:.3f})"
            )
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
