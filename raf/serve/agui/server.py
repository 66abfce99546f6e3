"""`serve`: run the AG-UI app of some agents under uvicorn (what `raf serve` does).

Example:
    >>> import anyio
    >>> from raf import FunctionAgent
    >>> agent = FunctionAgent("echo", lambda m: m[-1].text)
    >>> # anyio.run(lambda: serve(agent, port=8000))   # until Ctrl-C
"""

from __future__ import annotations

from collections.abc import Sequence

import sniffio

from raf.agent import IAgent
from raf.registry import AgentRegistry
from raf.serve.agui.app import create_app
from raf.serve.agui.guard import DEFAULT_MAX_BODY_BYTES, LOOPBACK_HOSTS
from raf.serve.agui.slow_clients import DEFAULT_HEADER_TIMEOUT, bounded_protocol
from raf.serve.threads import ThreadStore

__all__ = ["serve"]

_EVERY_ADDRESS = frozenset({"", "0.0.0.0", "::"})


async def serve(
    agents: IAgent | Sequence[IAgent] | AgentRegistry,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    store: ThreadStore | None = None,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
) -> None:
    """Serve `agents` over HTTP on `host:port` until the server is stopped (Ctrl-C).

    Binds the loopback address unless told otherwise. uvicorn runs on asyncio: call this from
    `anyio.run(..., backend="asyncio")` (the default); on trio, mount `create_app(...)` in a
    trio ASGI server instead.

    Args:
        agents: what `create_app` takes.
        host: the address to bind.
        port: the TCP port (0 picks a free one).
        token: the bearer token to require (`RAF_TOKEN` when omitted).
        store: where threads are kept (`create_app`'s default when omitted).
        allowed_hosts: the names the server is reached by (`create_app`'s); when omitted,
            the loopback names and `host` itself (unless it binds every address: then pass
            the names it is reached by).
        allowed_origins: other web origins whose pages may POST to it (`create_app`'s).
        max_body_bytes: the longest request body read (`create_app`'s).
        header_timeout: seconds a client has to send a request's line and headers; a slower
            one's connection is closed (`raf.serve.agui.slow_clients`).

    Raises:
        ValueError: for a port outside 0..65535.
        RuntimeError: when called on an event loop other than asyncio.
    """
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} is not a TCP port: pass 0..65535 (0 picks a free one)")
    if sniffio.current_async_library() != "asyncio":
        raise RuntimeError(
            "raf.serve.serve runs uvicorn, which needs asyncio: use anyio.run(..., "
            "backend='asyncio'), or serve create_app(...) with a trio ASGI server"
        )
    import uvicorn

    if allowed_hosts is None and host not in _EVERY_ADDRESS:
        allowed_hosts = [*LOOPBACK_HOSTS, host]
    app = create_app(
        agents,
        store,
        token=token,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        max_body_bytes=max_body_bytes,
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="info",
        lifespan="on",
        http=bounded_protocol(header_timeout),
    )
    await uvicorn.Server(config).serve()
