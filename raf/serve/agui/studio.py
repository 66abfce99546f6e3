"""The studio's routes: past threads, their checkpoints, a fork from one, a workflow's graph.

All are JSON, behind the app's guard and token like every `/agents` route, and bounded:

- `GET /studio/threads?limit=N&before=C`: the threads the store keeps, newest first, a page
  of at most `LIST_LIMIT` (`before`: the cursor the previous page gave, for older ones); it
  reads only the log entries appended since the last listing (`ThreadIndex`), and each
  listed thread's own events;
- `GET /studio/threads/{id}/checkpoints`: a thread's checkpoints, oldest first, the newest
  `LIST_LIMIT` of them: a `turn` checkpoint is the thread as saved after a run, a `step`
  checkpoint the engine's state after one superstep of a run;
- `GET /studio/threads/{id}/checkpoints/{checkpoint}`: one checkpoint to inspect: its pending
  requests, the nodes due next, the conversation, and its data cut to a readable size;
- `POST /studio/threads/{id}/checkpoints/{checkpoint}/fork`: a new thread from that checkpoint
  (time travel, the original thread untouched): a copy of the thread a `turn` checkpoint
  saved; from a `step` checkpoint, a run that goes on from it on the new thread, followed
  like any studio run (`runId` in the answer; see `raf.serve.agui.forks`);
- `GET /studio/graph/{path}`: the nodes and edges of the workflow an agent runs;
- `POST /studio/agents/{path}/runs`: run an agent as `POST /agents/{path}/run` does (the same
  body and events), but the run belongs to the app, not to the request (`LiveRuns`): a page that
  reloads re-attaches with `GET /studio/runs/{run}/events?after=N`, finds a thread's runs in
  flight with `GET /studio/threads/{id}/runs`, and ends one with `POST /studio/runs/{run}/stop`.

Example:
    >>> from raf import FunctionAgent
    >>> from raf.serve import create_app
    >>> app = create_app(FunctionAgent("echo", lambda m: m[-1].text))
    >>> "/studio/threads" in [getattr(r, "path", "") for r in app.routes]
    True
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

from ag_ui.core import RunAgentInput, RunErrorEvent
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from raf.agent import IAgent
from raf.engine.children import RUNNING
from raf.engine.facade import WorkflowAgent
from raf.registry import AgentRegistry
from raf.serve.agui.forks import ForkRefused, read_fork_request, resumption
from raf.serve.agui.live_runs import LiveRun, LiveRuns, RunsClosed, TooManyRuns
from raf.serve.agui.streaming import stream_run
from raf.serve.store_failures import log_failure, store_failed
from raf.serve.thread_index import ThreadIndex
from raf.serve.threads import (
    THREAD_EVENT,
    Threads,
    ThreadStore,
    check_thread_id,
    is_turn,
    listing_key,
    turn_keys,
)
from raf.stores import Checkpoint, StoredEvent, new_id

__all__ = ["FORK_EVENT", "LIST_LIMIT", "studio_routes"]

LIST_LIMIT = 100
"""The most threads, or checkpoints of a thread, one answer lists."""
FORK_EVENT = "raf.serve.fork"
"""Kind of the log event that says which checkpoint a forked thread started from."""

_GRAPH_LIMIT = 300
_MESSAGE_LIMIT = 50

Endpoint = Callable[[Request], Awaitable[Response]]

Denied = Callable[[Request], Response | None]
"""The app's token check: the refusal to send, or None when the request may go on."""


_STOPPED = EventEncoder().encode(RunErrorEvent(message="Stopped.", code="Stopped")).encode()


def studio_routes(
    registry: AgentRegistry, threads: Threads, denied: Denied, live: LiveRuns
) -> list[BaseRoute]:
    """The studio's routes over the app's `registry`, `threads` and `live` runs, each checked
    by `denied`."""
    store = threads.store

    index = ThreadIndex(store)

    async def list_threads(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        asked = request.query_params
        limit, before = asked.get("limit", str(LIST_LIMIT)), asked.get("before")
        if not limit.isdigit() or not 0 < int(limit) <= LIST_LIMIT:
            return _problem(422, f"limit must be a whole number from 1 to {LIST_LIMIT}")
        if before is not None and not before.isdigit():
            return _problem(422, "before must be the cursor a listing gave (a whole number)")
        page = await index.page(limit=int(limit), before=None if before is None else int(before))
        listed = [await _listed(store, thread_id) for thread_id in page.ids]
        truncated = page.before is not None
        return JSONResponse({"threads": listed, "truncated": truncated, "before": page.before})

    async def list_checkpoints(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        thread_id: str = request.path_params["thread"]
        records, earlier = turn_keys(thread_id)
        turns = [*await store.list(records), *await store.list(earlier)]
        steps = await store.list(thread_id)
        ids = sorted([*turns, *steps])
        shown = ids[-LIST_LIMIT:]
        loaded = [await store.load(checkpoint_id) for checkpoint_id in shown]
        listed = [_summary(c) for c in loaded if _of_thread(c, thread_id)]
        return JSONResponse(
            {"thread": thread_id, "checkpoints": listed, "truncated": len(ids) > len(shown)}
        )

    async def show_checkpoint(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        found = await _checkpoint_of(threads, request)
        if isinstance(found, Response):
            return found
        return JSONResponse(_inspected(found))

    async def fork(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        found = await _checkpoint_of(threads, request)
        if isinstance(found, Response):
            return found
        source: str = request.path_params["thread"]
        try:
            asked = await read_fork_request(request)
            new_thread = asked.thread or uuid.uuid4().hex
            if live.of_thread(new_thread) or (await threads.open(new_thread)).listed:
                raise ForkRefused(409, f"thread {new_thread!r} exists already: fork into a new id")
            if is_turn(found):
                started = None
                await _copy(threads, new_thread, found)
            else:
                started = await _run_on(new_thread, found, source, asked.agent)
        except ForkRefused as refused:
            return _problem(refused.status, refused.detail)
        origin = {"thread": source, "checkpoint": found.id}
        await store.append(
            StoredEvent(
                id=new_id(),
                occurred_at=datetime.now(UTC),
                kind=FORK_EVENT,
                key=listing_key(new_thread),
                meta=origin,
            )
        )
        made: dict[str, Any] = {"threadId": new_thread, "forkedFrom": origin}
        if started is not None:
            made |= {"runId": started[0], "agent": started[1]}
        return JSONResponse(made, status_code=201)

    async def _run_on(
        new_thread: str, checkpoint: Checkpoint, source: str, agent_path: str | None
    ) -> tuple[str, str]:
        """Start the run that goes on from the step `checkpoint` on `new_thread`: its run
        id and the path of the agent that runs it."""
        path, resumed = await resumption(registry, store, checkpoint, source, agent_path)
        run_input = RunAgentInput(
            thread_id=new_thread,
            run_id=uuid.uuid4().hex,
            messages=[],
            tools=[],
            context=[],
            state=None,
            forwarded_props=None,
        )

        async def play(send: Callable[[bytes], Awaitable[None]]) -> None:
            await stream_run(
                resumed.agent, run_input, threads, send, live.stopping, resumed=resumed
            )

        try:
            live.start(run_input.run_id, new_thread, play, stopped=_STOPPED)
        except (RunsClosed, TooManyRuns) as exc:
            raise ForkRefused(503, str(exc)) from None
        return run_input.run_id, path

    def served(request: Request) -> tuple[str, IAgent] | Response:
        """The served agent the request's path names, or the response refusing it."""
        if (refusal := denied(request)) is not None:
            return refusal
        path: str = request.path_params["path"]
        if path not in registry:
            return _problem(404, f"no agent is served at {path!r}")
        return path, registry.get(path)

    async def show_graph(request: Request) -> Response:
        if isinstance(found := served(request), Response):
            return found
        path, agent = found
        if not isinstance(agent, WorkflowAgent):
            return JSONResponse({"agent": path, "workflow": None, "nodes": [], "edges": []})
        return JSONResponse({"agent": path, **_graph(agent)})

    async def start_run(request: Request) -> Response:
        if isinstance(found := served(request), Response):
            return found
        agent = found[1]
        try:
            run_input = RunAgentInput.model_validate_json(await request.body())
            check_thread_id(run_input.thread_id)
        except ValidationError as exc:
            detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            return _problem(422, f"the body is not an AG-UI RunAgentInput: {_cut(detail, 500)}")
        except ValueError as exc:
            return _problem(422, str(exc))

        async def play(send: Callable[[bytes], Awaitable[None]]) -> None:
            await stream_run(agent, run_input, threads, send, live.stopping)

        try:
            run = live.start(run_input.run_id, run_input.thread_id, play, stopped=_STOPPED)
        except ValueError as exc:
            return _problem(409, str(exc))
        except (RunsClosed, TooManyRuns) as exc:
            return _problem(503, str(exc))
        return _followed(live, run, 0)

    async def follow_run(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        run = live.get(request.path_params["run"])
        after = request.query_params.get("after", "0")
        if run is None:
            return _problem(
                404,
                f"no run {request.path_params['run']!r} is kept: it ended long ago, or the server restarted",
            )
        if not after.isdigit() or int(after) < run.base:
            return _problem(
                410 if after.isdigit() else 422,
                f"after must be a count of events from {run.base} on",
            )
        return _followed(live, run, int(after))

    async def stop_run(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        run = live.get(request.path_params["run"])
        if run is None:
            return _problem(404, f"no run {request.path_params['run']!r} is kept")
        live.stop(run)
        return JSONResponse({"runId": run.id, "done": run.done})

    async def thread_runs(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        running = live.of_thread(request.path_params["thread"])
        return JSONResponse({"runs": [{"runId": r.id, "events": r.count} for r in running]})

    return [
        Route("/studio/agents/{path:path}/runs", start_run, methods=["POST"]),
        Route("/studio/runs/{run:path}/events", follow_run, methods=["GET"]),
        Route("/studio/runs/{run:path}/stop", stop_run, methods=["POST"]),
        Route("/studio/threads/{thread:path}/runs", thread_runs, methods=["GET"]),
        _over(store, "/studio/threads", list_threads, "could not list the threads"),
        _over(
            store,
            "/studio/threads/{thread:path}/checkpoints",
            list_checkpoints,
            "could not list the thread's checkpoints",
        ),
        _over(
            store,
            "/studio/threads/{thread:path}/checkpoints/{checkpoint}",
            show_checkpoint,
            "could not read the checkpoint",
        ),
        _over(
            store,
            "/studio/threads/{thread:path}/checkpoints/{checkpoint}/fork",
            fork,
            "could not fork the thread",
            method="POST",
        ),
        Route("/studio/graph/{path:path}", show_graph, methods=["GET"]),
    ]


def _over(
    store: ThreadStore, path: str, endpoint: Endpoint, doing: str, *, method: str = "GET"
) -> Route:
    """The route of `endpoint`, which reads the store: when the store fails, it answers 503
    saying what it was `doing`, which store failed, and how (the traceback is logged)."""

    async def answer(request: Request) -> Response:
        try:
            return await endpoint(request)
        except Exception as exc:
            said = f"{store_failed(store, doing, exc)}, then try again"
            log_failure(f"studio {request.method} {request.url.path}: {said}", exc)
            return _problem(503, said)

    return Route(path, answer, methods=[method])


def _followed(live: LiveRuns, run: LiveRun, after: int) -> EventSourceResponse:
    """The run's events from number `after` on, as SSE. When the server stops, the response
    sets `live.stopping` (the server ends the app's lifespan only once its responses have
    ended), so the run ends itself with `RUN_ERROR` and the follower reads it to its end."""
    return EventSourceResponse(
        live.follow(run, after=after),
        shutdown_event=live.stopping,
        shutdown_grace_period=live.grace,
    )


async def _checkpoint_of(threads: Threads, request: Request) -> Checkpoint | Response:
    """The checkpoint a route names, when it belongs to the thread the route names."""
    thread_id: str = request.path_params["thread"]
    checkpoint_id: str = request.path_params["checkpoint"]
    missing = _problem(404, f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}")
    try:
        checkpoint = await threads.store.load(checkpoint_id)
    except KeyError:
        return missing
    if not _of_thread(checkpoint, thread_id):
        return missing
    return checkpoint


def _of_thread(checkpoint: Checkpoint, thread_id: str) -> bool:
    """Whether `checkpoint` is a saved turn of thread `thread_id`, or a step of its runs."""
    records, earlier = turn_keys(thread_id)
    if checkpoint.session_id == earlier:  # a session named `thread:ID` files its runs there
        return is_turn(checkpoint)
    return checkpoint.session_id in (thread_id, records)


async def _copy(threads: Threads, new_thread: str, checkpoint: Checkpoint) -> None:
    """Start `new_thread` as the thread the turn `checkpoint` saved."""
    try:
        await threads.fork(new_thread, checkpoint.data)
    except ValueError as exc:
        raise ForkRefused(
            422, f"checkpoint {checkpoint.id!r} does not hold a thread's state: {exc}"
        ) from None


async def _listed(store: ThreadStore, thread_id: str) -> dict[str, Any]:
    """A thread as the listing shows it: when it was created, what it was forked from."""
    created: StoredEvent | None = None
    forked: dict[str, Any] | None = None
    events = [
        *await store.events(key=listing_key(thread_id)),
        *await store.events(key=turn_keys(thread_id)[1]),
    ]
    for event in events:
        if event.kind == THREAD_EVENT and created is None:
            created = event
        elif event.kind == FORK_EVENT:
            forked = event.meta
    return {
        "id": thread_id,
        "createdAt": None if created is None else created.occurred_at.isoformat(),
        "forkedFrom": forked,
    }


def _summary(checkpoint: Checkpoint) -> dict[str, Any]:
    turn = is_turn(checkpoint)
    return {
        "id": checkpoint.id,
        "kind": "turn" if turn else "step",
        "createdAt": checkpoint.created_at.isoformat(),
        "workflow": None if turn else checkpoint.workflow_id,
        "superstep": None if turn else checkpoint.superstep,
        "scope": None if turn else checkpoint.data.get("scope"),
        "inside": [] if turn else _inside(checkpoint),
        "pending": len(_pending(checkpoint)),
    }


def _inside(checkpoint: Checkpoint) -> list[str]:
    """The nested workflows (agent paths) whose superstep a step checkpoint was taken after:
    each keeps its state in the checkpoint's session (`"{path}#running"`)."""
    session = _dict(checkpoint.data.get("session"))
    return sorted(key.removesuffix(RUNNING) for key in session if key.endswith(RUNNING))


def _inspected(checkpoint: Checkpoint) -> dict[str, Any]:
    data = checkpoint.data
    turn = is_turn(checkpoint)
    nexts = [] if turn else [entry[0] for entry in _list(data.get("pending")) if _list(entry)]
    return {
        **_summary(checkpoint),
        "requests": _pending(checkpoint)[:LIST_LIMIT],
        "next": nexts[:LIST_LIMIT],
        "messages": _messages(checkpoint),
        "data": bounded(data),
    }


def _pending(checkpoint: Checkpoint) -> list[dict[str, Any]]:
    """The requests of a checkpoint still waiting for an answer, in the order they were asked."""
    data = checkpoint.data
    if not is_turn(checkpoint):
        runs = [data]
    else:
        state = _dict(data.get("state"))
        runs = [
            _dict(_dict(value).get("state"))
            for key, value in state.items()
            if key.endswith("#pending")
        ]
    found: list[dict[str, Any]] = []
    for run in runs:
        answered = {str(_list(entry)[0]) for entry in _list(run.get("answers")) if _list(entry)}
        for request in _list(run.get("requests")):
            fields = _dict(request)
            request_id = str(fields.get("request_id", ""))
            if request_id and request_id not in answered:
                found.append(
                    {
                        "id": request_id,
                        "node": fields.get("node_id"),
                        "path": fields.get("path"),
                        "payload": bounded(_untagged(fields.get("payload"))),
                    }
                )
    return found


def _messages(checkpoint: Checkpoint) -> list[dict[str, Any]]:
    """The conversation a checkpoint holds: the thread's history, or the turn so far."""
    data = checkpoint.data
    if is_turn(checkpoint):
        state = _dict(data.get("state"))
        histories = [v for k, v in state.items() if k.endswith("#history") and "/" not in k]
        raw = [m for history in histories for m in _list(history)]
    else:
        turn = _dict(data.get("turn"))
        raw = [*_list(_untagged(turn.get("entered"))), *_list(_untagged(turn.get("produced")))]
    messages: list[dict[str, Any]] = []
    for item in raw[-_MESSAGE_LIMIT:]:
        fields = _dict(item)
        parts = [_dict(part) for part in _list(fields.get("contents"))]
        messages.append(
            {
                "role": fields.get("role"),
                "author": fields.get("author"),
                "text": _cut(
                    "".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")
                ),
                "tools": [str(p.get("name")) for p in parts if p.get("type") == "tool_call"],
            }
        )
    return messages


def _graph(agent: WorkflowAgent) -> dict[str, Any]:
    workflow = agent.workflow
    graph = workflow.graph
    nodes: list[dict[str, Any]] = []
    for node_id in list(graph.nodes)[:_GRAPH_LIMIT]:
        attributes = graph.nodes[node_id]
        executor = workflow.executors.get(node_id)
        inner = executor.as_agent() if executor is not None else None
        nodes.append(
            {
                "id": node_id,
                "kind": attributes.get("kind", "executor"),
                "start": bool(attributes.get("start")),
                "agentKind": inner.metadata.kind if inner is not None else None,
            }
        )
    shown = {node["id"] for node in nodes}
    edges = [
        {"source": s, "target": t, "kind": a.get("kind", "direct"), "label": a.get("label", "")}
        for s, t, a in graph.edges(data=True)
        if s in shown and t in shown
    ][: _GRAPH_LIMIT * 4]
    return {
        "workflow": workflow.id,
        "kind": workflow.kind,
        "start": workflow.start_id,
        "nodes": nodes,
        "edges": edges,
        "truncated": graph.number_of_nodes() > len(nodes) or graph.number_of_edges() > len(edges),
    }


def bounded(value: Any, *, depth: int = 8, items: int = 50, chars: int = 2000) -> Any:
    """`value` (JSON data) cut to a readable size: deep parts, long lists and strings elided.

    Example:
        >>> bounded({"a": list(range(4))}, items=2)
        {'a': [0, 1, '… 2 more']}
    """
    if isinstance(value, str):
        return _cut(value, chars)
    if depth <= 0 and isinstance(value, dict | list):
        return "…"
    if isinstance(value, dict):
        fields = list(cast(Mapping[str, Any], value).items())
        kept: dict[str, Any] = {
            str(k): bounded(v, depth=depth - 1, items=items, chars=chars) for k, v in fields[:items]
        }
        if len(fields) > items:
            kept["…"] = f"{len(fields) - items} more"
        return kept
    if isinstance(value, list):
        entries = cast(list[Any], value)
        cut = [bounded(v, depth=depth - 1, items=items, chars=chars) for v in entries[:items]]
        if len(entries) > items:
            cut.append(f"… {len(entries) - items} more")
        return cut
    return value


def _cut(text: str, chars: int = 2000) -> str:
    return text if len(text) <= chars else f"{text[:chars]}… ({len(text) - chars} more characters)"


def _untagged(value: Any) -> Any:
    """A codec-tagged value (`{"t": "json", "v": ...}`) as its plain JSON."""
    fields = _dict(value)
    if set(fields) == {"t", "v"}:
        return fields["v"]
    return value


def _dict(value: Any) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


def _problem(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status)
