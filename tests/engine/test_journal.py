"""The tool-call journal of a checkpointed run, in process: a call cut short (its run
cancelled inside it) is in doubt when the run resumes, whatever the re-run's model asks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from raf import ChatMessage, ReactAgent, SequentialBuilder, Session, Workflow, tool
from raf.stores import Checkpoint, SqliteCheckpointStore
from raf.testing import ScriptedProvider, Turn, text, tool_calls

pytestmark = pytest.mark.anyio


class Mail:
    """A sequential of [plan, mailer]; the mailer sends one mail, and the first call of
    `send` blocks until its run is cancelled."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.started = anyio.Event()
        self.asked = 0

        @tool
        async def send(to: str) -> str:
            """Send the mail."""
            self.sent.append(to)
            if len(self.sent) == 1:
                self.started.set()
                await anyio.sleep_forever()  # cut short by the test
            return f"sent to {to}"

        def mailer(messages: list[ChatMessage]) -> Turn:
            results = [c.result for m in messages for c in m.contents if c.type == "tool_result"]
            if results:
                return text(f"done: {results[-1]}")
            self.asked += 1
            # The re-run's model writes the address otherwise.
            return tool_calls(("send", {"to": "ann" if self.asked == 1 else "Ann"}))

        plan = ReactAgent("plan", ScriptedProvider([text("plan: mail ann")]), "Plan.")
        worker = ReactAgent("mailer", ScriptedProvider(mailer), "Mail.", [send])
        self.workflow: Workflow = (
            SequentialBuilder(id="mail").add_agent(plan).add_agent(worker).build()
        )

    async def cut_short(self, session: Session) -> None:
        """Run until `send` runs, then cancel the run."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.workflow.run, "go", session)
            await self.started.wait()
            tg.cancel_scope.cancel()


def mailer_text(outputs: list[Any]) -> str:
    found = [m.text for m in outputs[-1] if isinstance(m, ChatMessage) and m.author == "mailer"]
    return found[-1]


async def test_a_call_cut_short_is_asked_about_with_its_recorded_arguments(
    tmp_path: Path, anyio_backend: str
) -> None:
    mail = Mail()
    async with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        await mail.cut_short(Session(id="s", store=store))
        latest = await store.latest("s")
        assert latest is not None
        waiting = await mail.workflow.resume(latest, store)
        assert waiting.status == "waiting"
        [request] = waiting.requests
        assert request.request_id == "mailer/mailer[mailer@1#0]#0:send.in-doubt"
        assert request.payload["kind"] == "tool_in_doubt"
        # Asked about the call that may have taken effect, not the re-run's.
        assert json.loads(request.payload["arguments"]) == {"to": "ann"}
        assert mail.sent == ["ann"]
        latest = await store.latest("s")
        assert latest is not None
        skip = {request.request_id: {"decision": "skip", "result": "sent before"}}
        done = await mail.workflow.resume(latest, store, skip)
        assert done.status == "completed"
        assert mailer_text(done.outputs) == "done: sent before"
        assert mail.sent == ["ann"]
        checkpoint: Checkpoint = await store.load(latest)
        events = await store.events(f"raf.tool-calls/{checkpoint.data['run']}")
        assert [e.kind for e in events] == ["tool.started", "tool.ended"]
        assert events[1].meta["result"] == "sent before"


async def test_the_next_run_on_the_session_answers_a_call_in_doubt(
    tmp_path: Path, anyio_backend: str
) -> None:
    mail = Mail()
    agent = mail.workflow.as_agent()
    async with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        session = Session(id="s", store=store)
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.run("go", session).collect)
            await mail.started.wait()
            tg.cancel_scope.cancel()
        latest = await store.latest("s")
        assert latest is not None
        waiting = await agent.workflow.resume(latest, store, session=session)
        assert [r.request_id for r in waiting.requests] == [
            "mail/mailer/mail/mailer[mailer@1#0]#0:send.in-doubt"
        ]
        done = await agent.run("rerun", session).collect()
        assert done.status == "completed"
        assert done.text == "done: sent to Ann"
        assert mail.sent == ["ann", "Ann"]


class CheckpointsOnly:
    """A store of one's own that keeps checkpoints and no event log."""

    def __init__(self, store: SqliteCheckpointStore) -> None:
        self._store = store

    async def save(self, checkpoint: Checkpoint) -> None:
        await self._store.save(checkpoint)

    async def load(self, checkpoint_id: str) -> Checkpoint:
        return await self._store.load(checkpoint_id)

    async def latest(self, session_id: str) -> str | None:
        return await self._store.latest(session_id)

    async def list(self, session_id: str) -> list[str]:
        return await self._store.list(session_id)


async def test_a_store_without_an_event_log_records_nothing_and_runs_the_call_again(
    tmp_path: Path, anyio_backend: str
) -> None:
    mail = Mail()
    async with SqliteCheckpointStore(tmp_path / "runs.db") as sqlite:
        store = CheckpointsOnly(sqlite)
        await mail.cut_short(Session(id="s", store=store))
        latest = await store.latest("s")
        assert latest is not None
        done = await mail.workflow.resume(latest, store)
        assert done.status == "completed"
        assert mailer_text(done.outputs) == "done: sent to Ann"
        assert mail.sent == ["ann", "Ann"]
        assert await sqlite.events() == []


async def test_a_damaged_tool_call_record_is_a_checkpoint_error_naming_it(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from raf import RunOptions
    from raf.errors import CheckpointError
    from raf.messages import ToolCallContent
    from raf.run import RunContext
    from raf.stores import StoredEvent, new_id
    from raf.tools.journal import ENDED, ToolJournal

    async with SqliteCheckpointStore(tmp_path / "runs.sqlite") as store:
        damaged = StoredEvent(
            id=new_id(),
            occurred_at=datetime.now(UTC),
            kind=ENDED,
            key="raf.tool-calls/r1",
            meta={"step": "a[a@0#0]#0:send", "arguments": "{}"},  # no result
        )
        await store.append(damaged)
        journal = ToolJournal(store, "r1", fresh=False)

        async def discard(update: object) -> None:
            pass

        ctx = RunContext(("a",), Session(), RunOptions(), discard)
        call = ToolCallContent(call_id="c1", name="send", arguments="{}")
        with pytest.raises(CheckpointError, match="has no 'result'") as info:
            await journal.check(ctx, [(0, call)], frozenset())
        assert info.value.event_id == damaged.id
