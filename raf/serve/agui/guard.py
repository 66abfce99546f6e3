"""`RequestGuard`: which requests the AG-UI app answers at all, before any route runs.

A server on the loopback address is still reachable from every web page the user opens: a
page can send it requests (cross-site request forgery), and a name of the page's own that
resolves to 127.0.0.1 lets it read the answers too (DNS rebinding). So the app answers only:

- requests whose `Host` is one of `allowed_hosts` (the loopback names by default; `*` allows
  any, `*.example.com` any subdomain);
- `POST`s whose `Origin`, when a browser sends one, is the server's own or one of
  `allowed_origins`, and whose body is JSON (`Content-Type: application/json`), which a page
  of another origin cannot send without asking first (CORS), and this app never agrees;
- bodies of at most `max_body_bytes`: a longer one gets 413 as soon as its `Content-Length`
  says so, or once that much of it has arrived, before any route (or token check) runs, so
  no request holds more than that in memory;
- bodies that arrive within `body_timeout` seconds: a slower one gets 408, so a client
  trickling its body cannot hold a connection open (the head is bounded by the server's
  protocol, `raf.serve.agui.slow_clients`).

Every answer carries `SECURITY_HEADERS`: no other site may frame the page (clickjacking), the
page runs only its own scripts and talks only to its own server (a content security policy),
and browsers do not guess content types or send the page's address on.

Example:
    >>> guard = RequestGuard(allowed_hosts=["raf.example.com"])
    >>> guard.allows_host("raf.example.com:8443"), guard.allows_host("evil.test")
    (True, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

import anyio
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "LOOPBACK_HOSTS",
    "SECURITY_HEADERS",
    "GuardMiddleware",
    "RequestGuard",
]

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
"""The names a server on the loopback address is reached by."""

DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024
"""The longest request body the app reads (10 MiB): a long thread's whole conversation."""

DEFAULT_BODY_TIMEOUT = 30.0
"""Seconds a client has to send a request's whole body."""

_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", _POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)
"""The headers every answer of the app carries (see the module)."""


class RequestGuard:
    """The `Host`, `Origin` and `Content-Type` rules of the app (see the module)."""

    __slots__ = ("_any_host", "_any_origin", "_exact", "_origins", "_suffixes")

    def __init__(
        self, allowed_hosts: Sequence[str] | None = None, allowed_origins: Sequence[str] = ()
    ) -> None:
        hosts = [_checked("allowed_hosts", h).lower() for h in allowed_hosts or LOOPBACK_HOSTS]
        self._any_host = "*" in hosts
        self._suffixes = tuple(h[1:] for h in hosts if h.startswith("*."))
        self._exact = frozenset(h.strip("[]") for h in hosts if not h.startswith("*"))
        origins = [_checked("allowed_origins", o).lower().rstrip("/") for o in allowed_origins]
        self._any_origin = "*" in origins
        self._origins = frozenset(origins)

    def allows_host(self, host: str) -> bool:
        """Whether a request with this `Host` header (a port may follow) is answered."""
        if self._any_host:
            return True
        name = _host_name(host)
        return name in self._exact or any(name.endswith(s) for s in self._suffixes)

    def allows_origin(self, origin: str, host: str) -> bool:
        """Whether a request with `Origin: origin` to the server at `host` is answered."""
        origin = origin.lower().rstrip("/")
        if self._any_origin or origin in self._origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc == host.lower()

    def refusal(self, scope: Scope) -> JSONResponse | None:
        """The answer to an HTTP request this guard refuses (400, 403 or 415), else None."""
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self.allows_host(host):
            return JSONResponse(
                {
                    "detail": f"this server does not answer to the host {host!r}: add it to "
                    "allowed_hosts (raf serve --allow-host NAME)"
                },
                status_code=400,
            )
        if scope["method"] in ("GET", "HEAD", "OPTIONS"):
            return None
        origin = headers.get("origin")
        if origin is not None and not self.allows_origin(origin, host):
            return JSONResponse(
                {
                    "detail": f"requests from the origin {origin!r} are refused: add it to "
                    "allowed_origins (raf serve --allow-origin ORIGIN)"
                },
                status_code=403,
            )
        kind = headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind != "application/json":
            return JSONResponse(
                {"detail": "send the body as JSON, with 'Content-Type: application/json'"},
                status_code=415,
            )
        return None


class GuardMiddleware:
    """ASGI middleware: requests its `guard` refuses get the refusal and never reach `app`;
    a body longer than `max_body_bytes` gets 413, read no further than that, and one that
    takes longer than `body_timeout` seconds to arrive gets 408; every answer carries
    `SECURITY_HEADERS`."""

    __slots__ = ("_app", "_body_timeout", "_guard", "_max_body")

    def __init__(
        self,
        app: ASGIApp,
        guard: RequestGuard,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
    ) -> None:
        self._app = app
        self._guard = guard
        self._max_body = max_body_bytes
        self._body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        send = _secured(send)
        refusal = self._guard.refusal(scope)
        if refusal is None and scope["method"] == "POST":
            body: bytes | None = None
            timely = False
            with anyio.move_on_after(self._body_timeout):
                body = await self._body(scope, receive)
                timely = True
            if not timely:
                refusal = _too_slow(self._body_timeout)
            elif body is None:
                refusal = _too_large(self._max_body)
            else:
                receive = _replay(body, receive)
        if refusal is None:
            await self._app(scope, receive, send)
        else:
            await refusal(scope, receive, send)

    async def _body(self, scope: Scope, receive: Receive) -> bytes | None:
        """The whole body, or None once it proves longer than the limit (read no further)."""
        declared = Headers(scope=scope).get("content-length", "")
        if declared.strip().isdigit() and int(declared) > self._max_body:
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away: the app sees an empty body
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` that gives `body` first, then what the client sends next (a disconnect)."""
    pending = [body]

    async def replayed() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await receive()

    return replayed


def _secured(send: Send) -> Send:
    """`send` adding `SECURITY_HEADERS` to the start of the response."""

    async def secured(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *SECURITY_HEADERS]}
        await send(message)

    return secured


def _too_slow(limit: float) -> JSONResponse:
    return JSONResponse(
        {"detail": f"the request body took longer than {limit:g} s to arrive; send it faster"},
        status_code=408,
        headers={"Connection": "close"},
    )


def _too_large(limit: int) -> JSONResponse:
    return JSONResponse(
        {
            "detail": f"the request body is longer than {limit} bytes: send less, or raise "
            "the server's limit (raf serve --max-body-bytes N, create_app(max_body_bytes=N))"
        },
        status_code=413,
        headers={"Connection": "close"},
    )


def _host_name(host: str) -> str:
    """The name of a `Host` header, without its port or IPv6 brackets, in lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        return host.partition(":")[0]
    return host


def _checked(argument: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{argument} holds host names or origins as strings, not {value!r}")
    return value.strip()
