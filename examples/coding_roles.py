"""Moderated roles on an event log: an architect plans, a coder writes and runs the code, a
reviewer reads it; the moderator sends the work back to the coder until the review passes.

The coder and the reviewer work in a `Workspace` (a temporary folder) through its tools. Every
step is an event in the session store's event log (SQLite here), its output stored by sha256;
the log is printed at the end.

Run: python examples/coding_roles.py (or, from the repository root, python -m
examples.coding_roles). A model that cannot give structured output ends the run early with an
error; the event log printed at the end shows how far it got.
"""

from __future__ import annotations

import json
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
    RoleWorkflowBuilder,
    Session,
    SqliteCheckpointStore,
    ToolResultContent,
    Workspace,
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


CODE = "def add(a, b):\n    return a - b\n\nprint(add(2, 3))\n"
FIXED = "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n"


def answer(value: dict[str, Any]) -> Turn:
    """A typed answer as a small model gives it in native mode: the JSON itself."""
    return text(json.dumps(value))


def _tool_results(messages: list[ChatMessage]) -> int:
    return sum(1 for m in messages if m.role == "tool")


def _architect(messages: list[ChatMessage]) -> Turn:
    return answer({"files": ["calc.py"], "steps": ["write add()", "print add(2, 3)"]})


def _coder(messages: list[ChatMessage]) -> Turn:
    fixing = "subtracts" in " ".join(m.text for m in messages)
    done = _tool_results(messages)
    if done == 0 and not fixing:
        return tool_calls(("write_file", {"path": "calc.py", "content": CODE}))
    if done == 0:
        edit = {"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}
        return tool_calls(("patch_file", edit))
    if done == 1:
        return tool_calls(("shell_exec", {"command": [sys.executable, "calc.py"]}))
    return answer({"summary": "calc.py prints add(2, 3)", "files": ["calc.py"]})


def _reviewer(messages: list[ChatMessage]) -> Turn:
    results = [m for m in messages if m.role == "tool"]
    if not results:
        return tool_calls(("read_file", {"path": "calc.py"}))
    read = results[-1].contents[0]
    wrong = isinstance(read, ToolResultContent) and "a - b" in read.result
    notes = "add() subtracts: return a + b" if wrong else "add() is right and prints 5"
    return answer({"approved": not wrong, "notes": notes})


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Workspace(folder, shell=True)
        tools = workspace.tools()
        readers = [t for t in tools if t.name in ("read_file", "list_files", "search_files")]
        async with (
            provider_for(_architect) as architect,
            provider_for(_coder) as coder,
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

            binding = AdapterBinding(
                react(architect, readers),
                overrides={"coder": react(coder, tools), "reviewer": react(reviewer, readers)},
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
