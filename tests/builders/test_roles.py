from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from raf.adapters import AdapterBinding, create_llm_adapter, create_react_adapter
from raf.agent import RunOptions
from raf.budget import Budget
from raf.builders import END, RoleEvent, RoleWorkflowBuilder, SequentialBuilder
from raf.errors import BudgetExceeded, GraphValidationError, WorkflowError
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.providers.openai import OpenAIProvider, create_client
from raf.session import Session
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore
from raf.testing import ScriptedOpenAIServer, resolve, text, tool_calls
from raf.tools import Workspace, tool_handler
from raf.updates import (
    ExecutorInvoked,
    ExecutorInvoking,
    TextDelta,
    ToolCalled,
    ToolCallStart,
    Usage,
)

from .roles_support import REVIEW_KINDS, Draft, Review, counting_binding, review_builder

pytestmark = pytest.mark.anyio


async def test_the_thread_is_an_event_log_with_content_by_hash() -> None:
    binding, adapter = counting_binding()
    log = MemoryCheckpointStore()
    workflow = review_builder().build(binding, log=log, code_rev="abc123")
    agent = workflow.as_agent()
    assert agent.metadata.kind == "roles"
    response = await agent.run("Write a haiku.", Session(id="topic-1")).collect()

    events = await log.events(key="topic-1")
    assert [e.kind for e in events] == [
        "review.__start__",
        "review.writer",
        "review.reviewer",
        "review.writer",
        "review.reviewer",
    ]
    assert all(e.key == "topic-1" and e.code_rev == "abc123" for e in events)
    assert [e.id for e in events] == sorted(e.id for e in events)
    assert events[0].meta == {}
    opening = json.loads(await log.get(events[0].hash or ""))
    assert [ChatMessage.model_validate(m) for m in opening] == [ChatMessage.user("Write a haiku.")]
    for event in events[1:]:
        content = await log.get(event.hash or "")
        assert hashlib.sha256(content).hexdigest() == event.hash
        assert json.loads(content) == event.meta
    assert events[-1].meta == {"approved": True, "notes": "saw 2"}
    assert response.value == Review(approved=True, notes="saw 2")
    assert [(m.author, m.text) for m in response.messages][:2] == [
        ("writer", '{"text":"draft 1"}'),
        ("reviewer", '{"approved":false,"notes":"saw 1"}'),
    ]
    assert adapter.calls == {"write": 2, "review": 2}
    last = adapter.threads[-1]
    assert last.thread_id == "topic-1" and last.depth == 3
    assert [s.role for s in last.steps] == ["writer", "reviewer", "writer"]


async def test_the_moderator_sees_the_chain_from_the_start_event_and_the_topic() -> None:
    seen: list[tuple[list[str], str]] = []

    def moderator(chain: list[RoleEvent], topic_id: str) -> Any:
        seen.append(([e.kind for e in chain], topic_id))
        return "writer" if len(chain) == 1 else END

    binding, _ = counting_binding()
    workflow = (
        RoleWorkflowBuilder("w").add_role("writer", "write", Draft).with_moderator(moderator)
    ).build(binding)
    await workflow.as_agent().run("go", Session(id="t9")).collect()
    assert seen == [(["w.__start__"], "t9"), (["w.__start__", "w.writer"], "t9")]


async def test_a_session_store_is_the_event_log_and_the_run_checkpoints(tmp_path: Path) -> None:
    binding, _ = counting_binding()
    agent = review_builder().build(binding).as_agent()
    async with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        session = Session(id="s1", store=store)
        await agent.run("go", session).collect()
        kinds = [e.kind for e in await store.events(key="s1")]
        assert kinds[0] == "review.__start__" and len(kinds) == 5
        assert len(await store.list("s1")) >= 5


async def test_a_second_turn_opens_a_new_thread_on_the_topic() -> None:
    binding, adapter = counting_binding()
    log = MemoryCheckpointStore()
    agent = review_builder().build(binding, log=log).as_agent()
    session = Session(id="t")
    await agent.run("first", session).collect()
    await agent.run("second", session).collect()
    kinds = [e.kind for e in await log.events(key="t")]
    assert kinds.count("review.__start__") == 2 and len(kinds) == 10
    assert [m.text for m in adapter.threads[-1].start][-1] == "second"


async def test_sessions_keep_their_threads_apart() -> None:
    binding, _ = counting_binding()
    log = MemoryCheckpointStore()
    agent = review_builder().build(binding, log=log).as_agent()
    async with anyio.create_task_group() as tg:
        for topic in ("a", "b", "c"):
            tg.start_soon(lambda t: agent.run("go", Session(id=t)).collect(), topic)
    for topic in ("a", "b", "c"):
        assert len(await log.events(key=topic)) == 5


def test_build_mistakes_name_the_workflow_and_role() -> None:
    binding, _ = counting_binding()
    with pytest.raises(GraphValidationError, match="'review' already has a role named 'writer'"):
        review_builder().add_role("writer", "again", Draft)
    for bad in ("__start__", "__moderator__", "a.b", ""):
        with pytest.raises(GraphValidationError, match="role workflow 'r'"):
            RoleWorkflowBuilder("r").add_role(bad, "p", Draft)
    with pytest.raises(GraphValidationError, match="must be a pydantic model class"):
        RoleWorkflowBuilder("r").add_role("x", "p", dict)  # type: ignore[arg-type]
    with pytest.raises(GraphValidationError, match="has no roles"):
        RoleWorkflowBuilder("r").with_moderator(lambda c, t: END).build(binding)
    with pytest.raises(GraphValidationError, match="has no moderator"):
        RoleWorkflowBuilder("r").add_role("x", "p", Draft).build(binding)
    override = AdapterBinding(binding.adapter, overrides={"editor": binding.adapter})
    with pytest.raises(GraphValidationError, match="overrides 'editor', which are not roles"):
        review_builder().build(override)


def test_the_builder_takes_id_like_every_other_builder_and_checks_it() -> None:
    binding, _ = counting_binding()
    built = (
        RoleWorkflowBuilder(id="team.review")
        .add_role("writer", "write", Draft)
        .with_moderator(lambda chain, topic: END)
        .build(binding)
    )
    assert built.as_agent().id == "team.review"
    for bad in ("", "a/b", "x#y", 7):
        with pytest.raises(GraphValidationError, match=r"RoleWorkflowBuilder: .*agent id"):
            RoleWorkflowBuilder(id=bad)  # type: ignore[arg-type]


async def test_a_moderator_naming_an_unknown_role_fails_the_run_naming_it() -> None:
    binding, _ = counting_binding()
    workflow = (
        RoleWorkflowBuilder("review")
        .add_role("writer", "write", Draft)
        .with_moderator(lambda chain, topic: "writer" if len(chain) == 1 else "tester")
    ).build(binding)
    with pytest.raises(WorkflowError) as caught:
        await workflow.as_agent().run("go").collect()
    message = str(caught.value)
    assert "role workflow 'review'" in message and "'tester'" in message
    assert "after role 'writer'" in message and "'writer'" in message
    assert caught.value.executor_id == "__moderator__"


async def test_a_moderator_that_raises_fails_the_run_naming_workflow_and_role() -> None:
    def moderator(chain: list[RoleEvent], topic_id: str) -> str:
        if len(chain) > 1:
            raise KeyError("verdict")
        return "writer"

    binding, _ = counting_binding()
    workflow = (
        RoleWorkflowBuilder("review").add_role("writer", "write", Draft).with_moderator(moderator)
    ).build(binding)
    with pytest.raises(WorkflowError) as caught:
        await workflow.as_agent().run("go").collect()
    assert "role workflow 'review': the moderator raised KeyError" in str(caught.value)
    assert "after role 'writer'" in str(caught.value)
    assert isinstance(caught.value.__cause__, KeyError)


async def test_a_thread_that_never_ends_stops_at_max_steps() -> None:
    binding, _ = counting_binding()
    workflow = (
        RoleWorkflowBuilder("loop")
        .add_role("writer", "write", Draft)
        .with_moderator(lambda chain, topic: "writer")
        .with_max_steps(3)
    ).build(binding)
    with pytest.raises(WorkflowError, match=r"took 3 steps .* without the moderator returning END"):
        await workflow.as_agent().run("go").collect()


async def test_an_async_moderator_works() -> None:
    async def moderator(chain: list[RoleEvent], topic_id: str) -> Any:
        await anyio.lowlevel.checkpoint()
        return "writer" if len(chain) == 1 else END

    binding, _ = counting_binding()
    workflow = (
        RoleWorkflowBuilder("a").add_role("writer", "write", Draft).with_moderator(moderator)
    ).build(binding)
    response = await workflow.as_agent().run("go").collect()
    assert response.value == Draft(text="draft 1")


def _code_moderator(chain: list[RoleEvent], topic_id: str) -> Any:
    return {"__start__": "coder", "coder": "reviewer"}.get(chain[-1].role, END)


class Change(BaseModel):
    summary: str


async def test_roles_stream_tokens_and_tool_calls_on_their_paths(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    tools = workspace.tools()
    script = [
        tool_calls(("write_file", {"path": "hello.py", "content": "print('hi')\n"})),
        resolve({"summary": "added hello.py"}),
        text('{"approved": true, "notes": "fine"}'),
    ]
    async with (
        ScriptedOpenAIServer(script) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        provider = OpenAIProvider(client, "scripted")
        coder = create_react_adapter(provider, [t.definition for t in tools], tool_handler(tools))
        binding = AdapterBinding(create_llm_adapter(provider), overrides={"coder": coder})
        workflow = (
            RoleWorkflowBuilder("dev")
            .add_role("coder", "You write code.", Change)
            .add_role("reviewer", "You review code.", Review)
            .with_moderator(_code_moderator)
        ).build(binding)
        inner = workflow.as_agent()
        outer = SequentialBuilder(id="team").add_agent(inner).build().as_agent()
        async with outer.run("Add hello.py") as stream:
            items = [u async for u in stream]
    assert (tmp_path / "hello.py").read_text() == "print('hi')\n"
    coder_request, _, reviewer_request = server.requests
    names = [t["function"]["name"] for t in coder_request.body["tools"]]
    assert names == [t.name for t in tools] + ["resolve"]
    assert coder_request.body["tools"][-1]["function"]["parameters"] == Change.model_json_schema()
    assert coder_request.body["messages"][0] == {"role": "system", "content": "You write code."}
    assert reviewer_request.body["response_format"]["json_schema"]["schema"] == (
        Review.model_json_schema()
    )
    assert "added hello.py" in json.dumps(reviewer_request.body["messages"])
    starts = [u for u in items if isinstance(u, ToolCallStart)]
    assert [(u.name, u.path) for u in starts] == [
        ("write_file", ("team", "dev", "coder")),
        ("resolve", ("team", "dev", "coder")),
    ]
    called = [u for u in items if isinstance(u, ToolCalled)]
    assert called[0].path == ("team", "dev", "coder") and not called[0].is_error
    invoking = [u.executor_id for u in items if isinstance(u, ExecutorInvoking)]
    assert invoking == ["dev", "__start__", "__moderator__", "coder", "__moderator__"] + [
        "reviewer",
        "__moderator__",
    ]
    closed = [u for u in items if isinstance(u, ExecutorInvoked) and u.executor_id == "coder"]
    assert closed[0].value == Change(summary="added hello.py")
    # The reviewer (one structured call) streams its answer and usage on its path too.
    reviewer = ("team", "dev", "reviewer")
    answer = "".join(u.text for u in items if isinstance(u, TextDelta) and u.path == reviewer)
    assert json.loads(answer) == {"approved": True, "notes": "fine"}
    assert [u.path for u in items if isinstance(u, Usage)].count(reviewer) == 1


async def test_a_structured_role_call_counts_against_the_run_s_budget() -> None:
    script = [text('{"text": "draft"}'), text('{"approved": false, "notes": "again"}')]
    async with (
        ScriptedOpenAIServer(script) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        adapter = create_llm_adapter(OpenAIProvider(client, "scripted"))
        workflow = review_builder().build(AdapterBinding(adapter))
        options = RunOptions(budget=Budget(rounds=1))
        with pytest.raises(BudgetExceeded) as exceeded:
            await workflow.as_agent().run("go", options=options).collect()
    assert exceeded.value.kind == "rounds"
    assert len(server.requests) == 1


async def test_an_agent_adapter_streams_the_agent_on_the_role_s_path() -> None:
    from raf.adapters import agent_to_adapter
    from raf.testing import ScriptedProvider

    writer = FunctionAgent("author", lambda messages: "draft one")
    adapter = agent_to_adapter(writer, ScriptedProvider([text('{"text": "draft one"}')]))
    workflow = (
        RoleWorkflowBuilder("w")
        .add_role("writer", "Write.", Draft)
        .with_moderator(lambda chain, topic: "writer" if len(chain) == 1 else END)
    ).build(AdapterBinding(adapter))
    async with workflow.as_agent().run("go") as stream:
        deltas = [u async for u in stream]
    texts = [(u.path, u.text) for u in deltas if isinstance(u, TextDelta)]
    assert texts == [(("w", "writer", "author"), "draft one")]


async def test_leaving_the_stream_early_cancels_the_role() -> None:
    started = anyio.Event()

    def adapter(prompt: str, schema: type[BaseModel]) -> Any:
        async def role(thread: Any) -> BaseModel:
            started.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        return role

    workflow = (
        RoleWorkflowBuilder("w")
        .add_role("writer", "Write.", Draft)
        .with_moderator(lambda chain, topic: "writer")
    ).build(AdapterBinding(adapter))
    with anyio.fail_after(10):
        async with workflow.as_agent().run("go") as stream:
            async for update in stream:
                if isinstance(update, ExecutorInvoking) and update.executor_id == "writer":
                    await started.wait()
                    break


async def test_a_run_resumed_from_its_checkpoint_plays_no_step_twice(tmp_path: Path) -> None:
    binding, adapter = counting_binding()
    broken = {"review": True}

    def flaky(prompt: str, schema: type[BaseModel]) -> Any:
        inner = binding.adapter(prompt, schema)

        async def role(thread: Any) -> BaseModel:
            if prompt == "review" and broken["review"]:
                broken["review"] = False
                raise RuntimeError("reviewer offline")
            return await inner(thread)

        return role

    workflow = review_builder().build(AdapterBinding(flaky))
    async with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        session = Session(id="s", store=store)
        failed = await workflow.run("go", session)
        assert failed.status == "failed"
        assert [e.kind for e in await store.events(key="s")] == [
            "review.__start__",
            "review.writer",
        ]
        latest = await store.latest("s")
        assert latest is not None
        resumed = await workflow.resume(latest, store, session=session)
        assert resumed.status == "completed"
        kinds = [e.kind for e in await store.events(key="s")]
    assert kinds == REVIEW_KINDS
    assert adapter.calls == {"write": 2, "review": 2}


async def test_a_run_stopped_right_after_opening_its_thread_reopens_no_second_one() -> None:
    """The opening is written, then the run dies before its checkpoint: running the same
    turn again continues that thread (still without a step) instead of opening another."""
    binding, adapter = counting_binding()

    class DiesAfterOpening(MemoryCheckpointStore):
        died = False

        async def append(self, event: Any, content: bytes | None = None, **how: Any) -> None:
            await super().append(event, content, **how)
            if event.kind.endswith(".__start__") and not self.died:
                self.died = True
                raise RuntimeError("the process died here")

    store = DiesAfterOpening()
    workflow = review_builder().build(binding)
    failed = await workflow.run("go", Session(id="s", store=store))
    assert failed.status == "failed"
    assert [e.kind for e in await store.events(key="s")] == ["review.__start__"]
    done = await workflow.run("go", Session(id="s", store=store))
    assert done.status == "completed"
    kinds = [e.kind for e in await store.events(key="s")]
    assert kinds.count("review.__start__") == 1
    assert kinds == ["review.__start__", *["review.writer", "review.reviewer"] * 2]
    assert adapter.calls == {"write": 2, "review": 2}
