"""Moderated roles on an event log: an architect plans, a coder writes and runs the code, a
reviewer reads it; the moderator sends the work back to the coder until the review passes.

The coder is a command-line coding agent run in a `Workspace` (a temporary folder) as a role
(`create_command_role`): by default `_coder_cli.py` beside this file, a small scripted
stand-in; set `RAF_CODER_COMMAND` to run a real one, say `claude -p` or `codex exec` (see
docs/adapters.md). The architect and the reviewer are models; the reviewer reads the code
through the workspace's tools. Every step is an event in the session store's event log
(SQLite here), its whole output stored once by sha256 and its small signals in the event's
meta; the log is printed at the end.

Run: python examples/coding_roles.py (or, from the repository root, python -m
examples.coding_roles). A model that cannot give structured output ends the run early with an
error; the event log printed at the end shows how far it got.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from raf import (
    END,
    AdapterBinding,
    AgentError,
    ChatMessage,
    RoleEvent,
    RoleResult,
    RoleWorkflowBuilder,
    Session,
    SqliteCheckpointStore,
    ThreadContext,
    ToolResultContent,
    Workspace,
    create_command_role,
    create_react_adapter,
    tool_handler,
)
from raf.testing import Turn, text, tool_calls

if __package__:  # python -m examples.coding_roles
    from examples._models import provider_for
else:  # python examples/coding_roles.py
    from _models import provider_for


class Plan(BaseModel):
    """What to build."""

    files: list[str]
    steps: list[str]


class Change(BaseModel):
    """What the coder did."""

    summary: str
    files: list[str]


class Review(BaseModel):
    """The reviewer's verdict."""

    approved: bool
    notes: str


def moderator(chain: list[RoleEvent], topic_id: str) -> Any:
    """architect -> coder -> reviewer, back to the coder until approved (three tries)."""
    last = chain[-1]
    if last.role == "__start__":
        return "architect"
    if last.role in ("architect", "coder"):
        return "coder" if last.role == "architect" else "reviewer"
    tries = sum(1 for event in chain if event.role == "coder")
    return END if last.meta["approved"] or tries >= 3 else "coder"


CODER = shlex.split(os.environ.get("RAF_CODER_COMMAND", "")) or [
    sys.executable,
    str(Path(__file__).with_name("_coder_cli.py")),
]
"""The coding agent's command line; its task comes on stdin."""


def coder_task(prompt: str, thread: ThreadContext) -> str:
    """What the coding agent is told: its role, the request, and the plan and reviews so far."""
    lines = [prompt, "", "Request:", *(m.text for m in thread.start)]
    for step in thread.steps:
        lines += ["", f"{step.role}:", json.dumps(step.value)]
    lines += ["", 'End with one line of JSON: {"summary": "...", "files": ["..."]}.']
    return "\n".join(lines)


def coder_result(stdout: str, stderr: str, exit_code: int) -> RoleResult:
    """The last JSON line the agent printed is its `Change`; the whole output is kept too."""
    report: dict[str, Any] = {"summary": stderr.strip()[-200:] or "no report", "files": []}
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            report = json.loads(line)
            break
    return RoleResult(content=Change(**report), meta={"exit_code": exit_code})


def answer(value: dict[str, Any]) -> Turn:
    """A typed answer as a small model gives it in native mode: the JSON itself."""
    return text(json.dumps(value))


def _architect(messages: list[ChatMessage]) -> Turn:
    return answer({"files": ["calc.py"], "steps": ["write add()", "print add(2, 3)"]})


def _reviewer(messages: list[ChatMessage]) -> Turn:
    results = [m for m in messages if m.role == "tool"]
    if not results:
        return tool_calls(("read_file", {"path": "calc.py"}))
    read = results[-1].contents[0]
    wrong = isinstance(read, ToolResultContent) and "a - b" in read.result
    notes = "add() subtracts: make it return a + b" if wrong else "add() is right and prints 5"
    return answer({"approved": not wrong, "notes": notes})


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Workspace(folder)
        tools = workspace.tools()
        readers = [t for t in tools if t.name in ("read_file", "list_files", "search_files")]
        async with (
            provider_for(_architect) as architect,
            provider_for(_reviewer) as reviewer,
            SqliteCheckpointStore(Path(folder) / "roles.db") as store,
        ):

            def react(provider: Any, role_tools: list[Any]) -> Any:
                # As docs/local-models.md advises: typed answers by the server's JSON schema
                # mode, and tool calls that a small model writes as text still run.
                definitions = [t.definition for t in role_tools]
                return create_react_adapter(
                    provider,
                    definitions,
                    tool_handler(role_tools),
                    output_mode="native",
                    text_tool_calls=True,
                )

            coder = create_command_role(CODER, coder_task, coder_result, workspace=workspace)
            binding = AdapterBinding(
                react(architect, readers),
                overrides={"coder": coder, "reviewer": react(reviewer, readers)},
            )
            workflow = (
                RoleWorkflowBuilder("coding")
                .add_role("architect", "Plan the files and steps for the request.", Plan)
                .add_role("coder", "Write the code of the plan; run it to check.", Change)
                .add_role("reviewer", "Read the code; approve it or say what to fix.", Review)
                .with_moderator(moderator)
                .build(binding)
            )
            session = Session(id="calc-task", store=store)
            agent = workflow.as_agent()
            task = "Write calc.py with add(a, b); print add(2, 3)."
            try:
                async with agent.run(task, session) as stream:
                    async for update in stream:
                        if update.type == "tool_call_start":
                            print(f"[{'/'.join(update.path)}] calls {update.name}")
                        elif update.type == "executor_invoked" and update.value is not None:
                            print(f"  {update.executor_id}: {update.value!r}")
            except AgentError as error:
                print(f"the run stopped: {error}")
            code = Path(folder) / "calc.py"
            if code.exists():
                print("calc.py:", code.read_text().splitlines()[1].strip())
            print("\nevent log of topic", session.id)
            for event in await store.events(key=session.id):
                content = await store.get(event.hash or "")
                print(
                    f"  {event.id}  {event.kind:<20} sha256:{(event.hash or '')[:12]}  "
                    f"{len(content):>4} bytes  {json.dumps(event.meta)[:70]}"
                )


if __name__ == "__main__":
    anyio.run(main)
