"""PostgreSQL specifics: several workers on one schema, pooled connections, table layout."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime
from urllib.parse import quote

import anyio
import pytest

from raf.engine import FunctionExecutor, NodeContext, Workflow, WorkflowBuilder
from raf.session import Session
from raf.stores import Checkpoint, PostgresCheckpointStore, _records, new_id

pytestmark = pytest.mark.anyio


def _checkpoint(session_id: str, step: int) -> Checkpoint:
    return Checkpoint(
        id=new_id(),
        session_id=session_id,
        workflow_id="w",
        superstep=step,
        created_at=datetime.now(UTC),
        data={"step": step},
    )


def _run_sql(dsn: str, query: str, *parameters: object) -> list[tuple[object, ...]]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection:
        cursor = connection.execute(query, parameters)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


async def test_workers_starting_together_share_one_schema(
    postgres_dsn: str, postgres_schema: str
) -> None:
    workers = [PostgresCheckpointStore(postgres_dsn, schema=postgres_schema) for _ in range(4)]
    saved: list[str] = []

    async def work(store: PostgresCheckpointStore, index: int) -> None:
        for step in range(5):
            checkpoint = _checkpoint("shared", step)
            saved.append(checkpoint.id)
            await store.save(checkpoint)

    try:
        # Every worker creates the tables on first use, all at the same moment.
        async with anyio.create_task_group() as group:
            for index, store in enumerate(workers):
                group.start_soon(work, store, index)
        for store in workers:
            assert await store.list("shared") == sorted(saved)
    finally:
        for store in workers:
            await store.aclose()


async def test_tables_live_in_the_schema_with_json_and_bytea_columns(
    postgres_dsn: str, postgres_schema: str
) -> None:
    async with PostgresCheckpointStore(postgres_dsn, schema=postgres_schema) as store:
        await store.save(_checkpoint("s", 0))
    columns = _run_sql(
        postgres_dsn,
        "SELECT table_name, column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = %s AND column_name IN ('data', 'meta', 'content')",
        postgres_schema,
    )
    assert sorted(columns) == [
        ("checkpoints", "data", "json"),
        ("events", "meta", "json"),
        ("objects", "content", "bytea"),
    ]
    version = _run_sql(
        postgres_dsn, f'SELECT value FROM "{postgres_schema}".meta WHERE key = %s', "schema_version"
    )
    assert version == [(str(_records.SCHEMA_VERSION),)]


async def test_a_dropped_idle_connection_is_replaced(
    postgres_dsn: str, postgres_schema: str
) -> None:
    application = f"raf-test-{uuid.uuid4().hex[:12]}"
    dsn = f"{postgres_dsn}?application_name={application}"
    async with PostgresCheckpointStore(dsn, schema=postgres_schema) as store:
        first = _checkpoint("s", 0)
        await store.save(first)
        killed = _run_sql(
            postgres_dsn,
            # Waits (up to 5 s) until the server process is gone.
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
            " WHERE application_name = %s",
            application,
        )
        assert killed == [(True,)]
        second = _checkpoint("s", 1)
        await store.save(second)
        assert await store.list("s") == [first.id, second.id]


async def test_without_a_schema_the_search_path_decides(
    postgres_dsn: str, postgres_schema: str
) -> None:
    _run_sql(postgres_dsn, f'CREATE SCHEMA "{postgres_schema}"')
    dsn = f"{postgres_dsn}?options={quote(f'-csearch_path={postgres_schema}')}"
    checkpoint = _checkpoint("s", 0)
    async with PostgresCheckpointStore(dsn) as store:
        assert store.schema is None
        await store.save(checkpoint)
    async with PostgresCheckpointStore(postgres_dsn, schema=postgres_schema) as qualified:
        assert await qualified.load(checkpoint.id) == checkpoint


async def test_concurrency_is_bounded_by_max_connections(
    postgres_dsn: str, postgres_schema: str
) -> None:
    application = f"raf-test-{uuid.uuid4().hex[:12]}"
    dsn = f"{postgres_dsn}?application_name={application}"
    async with PostgresCheckpointStore(dsn, schema=postgres_schema, max_connections=2) as store:
        async with anyio.create_task_group() as group:
            for step in range(20):
                group.start_soon(store.save, _checkpoint("s", step))
        assert len(await store.list("s")) == 20
        connections = _run_sql(
            postgres_dsn,
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            application,
        )
        assert connections[0][0] in (1, 2)


def test_max_connections_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        PostgresCheckpointStore("postgresql://unused", max_connections=0)


def _approval_flow(calls: Counter[str]) -> Workflow:
    """draft -> approve (asks a human) -> publish, counting each node's invocations."""

    async def draft(topic: str, ctx: NodeContext) -> None:
        calls["draft"] += 1
        await ctx.send(f"draft on {topic}")

    async def approve(text: str, ctx: NodeContext) -> None:
        calls["approve"] += 1
        verdict = await ctx.request_info({"text": text})
        await ctx.send(f"{text}: {verdict}")

    async def publish(text: str, ctx: NodeContext) -> None:
        calls["publish"] += 1
        await ctx.yield_output(text)

    return (
        WorkflowBuilder("approval")
        .add_edge(FunctionExecutor("draft", draft), FunctionExecutor("approve", approve))
        .add_edge("approve", FunctionExecutor("publish", publish))
        .set_start("draft")
        .build()
    )


async def test_a_waiting_workflow_resumes_in_another_process_from_its_postgres_checkpoint(
    postgres_dsn: str, postgres_schema: str
) -> None:
    calls: Counter[str] = Counter()
    async with PostgresCheckpointStore(postgres_dsn, schema=postgres_schema) as store:
        waiting = await _approval_flow(calls).run("stores", Session(id="chat-1", store=store))
    assert waiting.status == "waiting"
    assert [(r.request_id, r.payload) for r in waiting.requests] == [
        ("approve@1#0", {"text": "draft on stores"})
    ]
    assert waiting.outputs == []
    assert calls == Counter({"draft": 1, "approve": 1})

    # A new process: new workflow and store objects, nothing shared but the database.
    restarted: Counter[str] = Counter()
    async with PostgresCheckpointStore(postgres_dsn, schema=postgres_schema) as reopened:
        latest = await reopened.latest("chat-1")
        assert latest is not None
        assert latest == waiting.checkpoint_id
        done = await _approval_flow(restarted).resume(
            latest, reopened, responses={"approve@1#0": "approved"}
        )
        assert done.status == "completed"
        assert done.outputs == ["draft on stores: approved"]
        # `draft` finished before the checkpoint; the waiting handling re-runs from its start.
        assert restarted == Counter({"approve": 1, "publish": 1})
        saved = await reopened.list("chat-1")
        assert saved.index(latest) < len(saved) - 1  # the resumed run checkpointed after it
        assert (await reopened.load(saved[-1])).workflow_id == "approval"

    # Resuming the finished run again from its last checkpoint runs nothing more.
    async with PostgresCheckpointStore(postgres_dsn, schema=postgres_schema) as third:
        again: Counter[str] = Counter()
        finished = await _approval_flow(again).resume(saved[-1], third)
        assert finished.status == "completed"
        assert again == Counter()
