"""`create_app`: the AG-UI HTTP server of a set of agents, with the web page at `/`.

Routes:

- `POST /agents/{path}/run` takes an AG-UI `RunAgentInput` and streams AG-UI events (SSE);
- `GET /agents` lists the registered agent trees, `GET /agents/{path}` one subtree;
- `GET /` is the web page (its files under `/static/`).

With a token (`token=` or `RAF_TOKEN`) every `/agents` route wants `Authorization: Bearer
<token>` and answers 401 without it; the page itself holds no data and asks for the token.
Requests to a host name the app does not know, POSTs from other web origins or without a
JSON body, and bodies longer than `max_body_bytes`, are refused before any route
(`raf.serve.agui.guard`). A run route answers `GET` with 405. When the server stops, each
run in flight is cancelled and its stream ends with `RUN_ERROR` (code `ServerStopping`).

Example:
    >>> from raf import FunctionAgent
    >>> app = create_app(FunctionAgent("echo", lambda m: m[-1].text), store=None, token="s3cret")
    >>> sorted(r.path for r in app.routes)[:5]
    ['/', '/agents', '/agents/{path:path}', '/agents/{path:path}/run', '/static']
"""

from __future__ import annotations

import hmac
import os
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from importlib import resources

import anyio
from ag_ui.core import RunAgentInput
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from raf.agent import IAgent
from raf.registry import AgentRegistry
from raf.serve.agui.guard import DEFAULT_MAX_BODY_BYTES, GuardMiddleware, RequestGuard
from raf.serve.agui.live_runs import LiveRuns
from raf.serve.agui.run_response import Flush, RunResponse, SendBytes
from raf.serve.agui.streaming import stream_run
from raf.serve.agui.studio import studio_routes
from raf.serve.threads import Threads, ThreadStore, check_thread_id
from raf.stores import SqliteCheckpointStore

__all__ = ["DEFAULT_STORE_PATH", "create_app"]

DEFAULT_STORE_PATH = "raf-threads.db"
"""The SQLite file (in the working directory) that keeps threads when no store is given."""

_STOP_GRACE_SECONDS = 5.0
"""How long a stopping server lets a run save its thread and send its `RUN_ERROR`."""


def create_app(
    agents: IAgent | Sequence[IAgent] | AgentRegistry,
    store: ThreadStore | None = None,
    *,
    token: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> Starlette:
    """The Starlette app serving `agents` over AG-UI, with the web page.

    Args:
        agents: one agent, several (each a root), or a registry of them.
        store: where threads (raf sessions) are kept, and runs checkpoint; a
            `SqliteCheckpointStore` on `DEFAULT_STORE_PATH` when omitted, closed with the app.
        token: the bearer token the `/agents` routes require; `RAF_TOKEN` when omitted, no
            token when that is unset or empty.
        allowed_hosts: the names the server is reached by (its `Host` header, any port):
            the loopback names when omitted; `"*"` for any, `"*.example.com"` for subdomains.
            Any other host gets 400, which stops DNS rebinding.
        allowed_origins: web origins (`"https://app.example.com"`) besides the server's own
            whose pages may POST to it; `"*"` for any. A POST from another origin gets 403,
            one whose body is not `application/json` 415 (see `raf.serve.agui.guard`).
        max_body_bytes: the longest request body read (10 MiB by default); a longer one
            gets 413 before it is read further, token or not.

    Raises:
        TypeError: when `agents` or `store` is not what is described above.
        ValueError: when two roots share an id, or `max_body_bytes` is not positive.
    """
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"max_body_bytes is a number of bytes, not {max_body_bytes!r}")
    if max_body_bytes <= 0:
        raise ValueError(f"max_body_bytes must be positive, not {max_body_bytes}")
    registry = _registry(agents)
    default_store = SqliteCheckpointStore(DEFAULT_STORE_PATH) if store is None else None
    thread_store: object = store if store is not None else default_store
    if not isinstance(thread_store, ThreadStore):
        raise TypeError(
            "store must be a checkpoint store with an event log (a store of raf.stores), "
            f"not {type(thread_store).__name__}"
        )
    guard = RequestGuard(allowed_hosts, allowed_origins)
    threads = Threads(thread_store)
    live = LiveRuns()
    secret = token if token is not None else os.environ.get("RAF_TOKEN", "")
    page = resources.files("raf.serve.agui").joinpath("static", "index.html").read_text("utf-8")

    def denied(request: Request) -> Response | None:
        if not secret:
            return None
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip(), secret):
            return None
        return JSONResponse(
            {"detail": "this server wants a bearer token: send 'Authorization: Bearer <token>'"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )

    async def index(request: Request) -> Response:
        return HTMLResponse(page, headers={"Cache-Control": "no-cache"})

    async def list_agents(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        return JSONResponse(
            [registry.tree(root).model_dump(mode="json") for root in registry.roots()]
        )

    async def show_agent(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        path: str = request.path_params["path"]
        run_of = path.removesuffix("/run")
        if path not in registry and run_of != path and run_of in registry:
            return JSONResponse(
                {"detail": f"POST an AG-UI RunAgentInput to run {run_of!r}"},
                status_code=405,
                headers={"Allow": "POST"},
            )
        if path not in registry:
            return _unknown(registry, path)
        return JSONResponse(registry.tree(path).model_dump(mode="json"))

    async def run_agent(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        path: str = request.path_params["path"]
        if path not in registry:
            return _unknown(registry, path)
        agent = registry.get(path)
        try:
            run_input = RunAgentInput.model_validate_json(await request.body())
            check_thread_id(run_input.thread_id)
        except ValidationError as exc:
            return JSONResponse(
                {"detail": "the body is not an AG-UI RunAgentInput", "errors": _errors(exc)},
                status_code=422,
            )
        except ValueError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=422)
        stopping = anyio.Event()  # set when the server stops

        async def play(send: SendBytes, flush: Flush) -> None:
            await stream_run(agent, run_input, threads, send, stopping, flush=flush)

        return RunResponse(play, stopping, grace=_STOP_GRACE_SECONDS)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        try:
            async with live.serving(_STOP_GRACE_SECONDS):
                yield
        finally:
            if default_store is not None:
                await default_store.aclose()

    static = StaticFiles(packages=[("raf.serve.agui", "static")])
    return Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            Mount("/static", app=static, name="static"),
            Route("/agents", list_agents, methods=["GET"]),
            Route("/agents/{path:path}/run", run_agent, methods=["POST"]),
            Route("/agents/{path:path}", show_agent, methods=["GET"]),
            *studio_routes(registry, threads, denied, live),
        ],
        middleware=[Middleware(GuardMiddleware, guard=guard, max_body_bytes=max_body_bytes)],
        lifespan=lifespan,
    )


def _registry(agents: IAgent | Sequence[IAgent] | AgentRegistry) -> AgentRegistry:
    if isinstance(agents, AgentRegistry):
        return agents
    if isinstance(agents, IAgent):
        agents = [agents]
    registry = AgentRegistry()
    for agent in agents:
        if not isinstance(agent, IAgent):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"create_app serves IAgents (a Workflow's .as_agent(), say), not "
                f"{type(agent).__name__}"
            )
        registry.register(agent)
    return registry


def _unknown(registry: AgentRegistry, path: str) -> Response:
    try:
        registry.get(path)
    except KeyError as exc:
        return JSONResponse({"detail": exc.args[0]}, status_code=404)
    raise AssertionError(f"{path!r} is registered")  # pragma: no cover


def _errors(exc: ValidationError) -> list[dict[str, object]]:
    return [
        {"loc": list(error["loc"]), "msg": error["msg"], "type": error["type"]}
        for error in exc.errors(include_url=False)
    ]
