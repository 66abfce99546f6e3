"""A checkpointed run killed inside a tool call, then resumed and answered in new processes.

`python -m tests.reliability.tool_crash_workflow STORE MODE TOOL LOG OUT BACKEND [ANSWER]` runs
a sequential of [plan, mailer] on the scripted model with checkpoints in STORE (`sqlite:PATH`
or `postgres:DSN#SCHEMA`). The mailer calls `note` (not idempotent), then TOOL (`send`, not
idempotent, or `fetch`, idempotent), then answers with the last tool result it saw. Each
tool appends its name to LOG as its effect. MODE:

- `start`: run; TOOL, once its effect is made, prints `AT tool` and blocks the process on
  stdin (its end not recorded), so the test kills it there;
- `resume`: resume the session's latest checkpoint;
- `answer`: resume the latest checkpoint answering its pending request with ANSWER (JSON).

Every mode but `start` writes OUT: the status, the requests (id and payload), the mailer's
answer and the error of a failed run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from raf import ChatMessage, ReactAgent, SequentialBuilder, Session, Workflow, tool
from raf.testing import ScriptedProvider, Turn, text, tool_calls
from tests.reliability.processes import open_store

SESSION = "tool-crash-session"


def build(target: str, log: Path, *, stop: bool) -> Workflow:
    def effect(name: str) -> None:
        with log.open("a") as file:
            file.write(name + "\n")

    def at_tool() -> None:
        if stop:
            print("AT tool", flush=True)
            sys.stdin.readline()  # blocks the event loop itself: the end is never recorded
            raise SystemExit("tool: stdin closed before the kill")

    @tool
    async def note(text: str) -> str:
        """Write a note."""
        effect("note")
        return f"noted {text}"

    @tool
    async def send(to: str) -> str:
        """Send the mail."""
        effect("send")
        at_tool()
        return f"sent to {to}"

    @tool(idempotent=True)
    async def fetch(url: str) -> str:
        """Fetch a page."""
        effect("fetch")
        at_tool()
        return f"fetched {url}"

    arguments = {"send": {"to": "ann"}, "fetch": {"url": "example.org"}}

    def mailer(messages: list[ChatMessage]) -> Turn:
        results = [c.result for m in messages for c in m.contents if c.type == "tool_result"]
        if not results:
            return tool_calls(("note", {"text": "draft"}))
        if len(results) == 1:
            return tool_calls((target, arguments[target]))
        return text(f"done: {results[-1]}")

    plan = ReactAgent("plan", ScriptedProvider([text("plan: mail ann")]), "Plan.")
    worker = ReactAgent("mailer", ScriptedProvider(mailer), "Mail.", [note, send, fetch])
    return SequentialBuilder(id="mail").add_agent(plan).add_agent(worker).build()


def answer_of(outputs: list[Any]) -> str:
    """The mailer's last message among the run's outputs."""
    found = ""
    pending: list[Any] = list(outputs)
    while pending:
        item = pending.pop(0)
        if isinstance(item, ChatMessage) and item.author == "mailer":
            found = item.text
        elif isinstance(item, list):
            pending[:0] = item
        elif hasattr(item, "messages"):
            pending[:0] = list(item.messages)
    return found


async def main(spec: str, mode: str, target: str, log: Path, out: Path, answer: str) -> None:
    workflow = build(target, log, stop=mode == "start")
    async with open_store(spec) as store:
        session = Session(id=SESSION, store=store)
        if mode == "start":
            await workflow.run("go", session)
            raise SystemExit("the run ended: the tool was to stop it")
        latest = await store.latest(SESSION)
        assert latest is not None, "no checkpoint to resume"
        responses: dict[str, Any] = {}
        if mode == "answer":
            checkpoint = await store.load(latest)
            requests = checkpoint.data["requests"]
            responses = {requests[0]["request_id"]: json.loads(answer)}
        result = await workflow.resume(latest, store, responses, session, on_busy="wait")
        error = result.error
        await anyio.Path(out).write_text(
            json.dumps(
                {
                    "status": result.status,
                    "requests": [[r.request_id, r.payload] for r in result.requests],
                    "answer": answer_of(result.outputs),
                    "error": None if error is None else f"{type(error).__name__}: {error}",
                }
            )
        )


if __name__ == "__main__":
    store_spec, run_mode, tool_name, log_file, out_file, backend = sys.argv[1:7]
    given = sys.argv[7] if len(sys.argv) > 7 else ""
    anyio.run(
        main,
        store_spec,
        run_mode,
        tool_name,
        Path(log_file),
        Path(out_file),
        given,
        backend=backend,
    )
