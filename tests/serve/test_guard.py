"""The app answers only its own host names, and POSTs only from its own origin with a JSON body:
a web page elsewhere can neither run an agent (request forgery) nor read an answer (DNS
rebinding)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette

from raf import FunctionAgent
from raf.serve import create_app
from raf.serve.agui.guard import RequestGuard
from raf.stores import MemoryCheckpointStore
from tests.serve.trees import run_input, user

pytestmark = pytest.mark.anyio

ran: list[str] = []


def app(**options: Any) -> Starlette:
    def echo(messages: Any) -> str:
        ran.append(messages[-1].text)
        return messages[-1].text

    return create_app(FunctionAgent("echo", echo), MemoryCheckpointStore(), **options)


def client(served: Starlette, base_url: str = "http://127.0.0.1:8000") -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(served), base_url=base_url)


def body(text: str) -> dict[str, Any]:
    return run_input("t-1", user(f"m-{text}", text))


@pytest.mark.parametrize(
    "base_url", ["http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"]
)
async def test_the_loopback_names_are_answered(base_url: str) -> None:
    async with client(app(), base_url) as http:
        response = await http.post("/agents/echo/run", json=body("hi"))
        assert response.status_code == 200, response.text
        assert (await http.get("/")).status_code == 200


async def test_another_host_name_is_refused_before_any_route_runs() -> None:
    ran.clear()
    async with client(app(), "http://rebound.evil.test:8000") as http:
        for response in (
            await http.get("/agents"),
            await http.get("/"),
            await http.post("/agents/echo/run", json=body("steal")),
        ):
            assert response.status_code == 400
            assert "rebound.evil.test" in response.json()["detail"]
            assert "--allow-host" in response.json()["detail"]
    assert ran == []


async def test_allowed_hosts_name_the_hosts_a_proxy_serves_under() -> None:
    served = app(allowed_hosts=["raf.example.com", "*.internal.test"])
    for base_url, status in [
        ("https://raf.example.com", 200),
        ("https://a.b.internal.test:8443", 200),
        ("http://127.0.0.1:8000", 400),  # naming hosts replaces the loopback default
        ("https://example.com", 400),
    ]:
        async with client(served, base_url) as http:
            assert (await http.get("/agents")).status_code == status, base_url
    async with client(app(allowed_hosts=["*"]), "http://anything.test") as http:
        assert (await http.get("/agents")).status_code == 200


async def test_a_post_from_another_origin_is_refused_and_runs_nothing() -> None:
    ran.clear()
    async with client(app()) as http:
        response = await http.post(
            "/agents/echo/run", json=body("forged"), headers={"Origin": "https://evil.test"}
        )
        assert response.status_code == 403
        assert "https://evil.test" in response.json()["detail"]
        for origin in ("null", "http://127.0.0.1:9999", "https://127.0.0.1:8000x"):
            refused = await http.post(
                "/agents/echo/run", json=body("x"), headers={"Origin": origin}
            )
            assert refused.status_code == 403, origin
        # The page's own origin, and clients that send none (curl, SDKs), are answered.
        own = await http.post(
            "/agents/echo/run", json=body("mine"), headers={"Origin": "http://127.0.0.1:8000"}
        )
        assert own.status_code == 200
        assert (await http.post("/agents/echo/run", json=body("sdk"))).status_code == 200
    assert ran == ["mine", "sdk"]


async def test_allowed_origins_let_named_pages_post() -> None:
    async with client(app(allowed_origins=["https://app.example.com/"])) as http:
        headers = {"Origin": "https://APP.example.com"}
        response = await http.post("/agents/echo/run", json=body("ok"), headers=headers)
        assert response.status_code == 200


async def test_a_post_without_a_json_body_is_refused() -> None:
    """A page of another origin can send text/plain or a form without asking (no CORS
    preflight) and without an Origin header in old browsers: JSON only closes that door."""
    ran.clear()
    async with client(app()) as http:
        import json

        for kind in ("text/plain", "application/x-www-form-urlencoded", None):
            headers = {} if kind is None else {"Content-Type": kind}
            response = await http.post(
                "/agents/echo/run", content=json.dumps(body("sneak")), headers=headers
            )
            assert response.status_code == 415, kind
            assert "application/json" in response.json()["detail"]
        charset = {"Content-Type": "application/json; charset=utf-8"}
        ok = await http.post("/agents/echo/run", content=json.dumps(body("ok")), headers=charset)
        assert ok.status_code == 200
    assert ran == ["ok"]


def test_bad_allowed_hosts_fail_where_they_are_given() -> None:
    with pytest.raises(TypeError, match="allowed_hosts"):
        app(allowed_hosts=[""])
    with pytest.raises(TypeError, match="allowed_origins"):
        app(allowed_origins=[42])


@given(
    name=st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,10}){0,2}", fullmatch=True),
    port=st.one_of(st.none(), st.integers(1, 65535)),
)
def test_a_host_is_allowed_exactly_when_its_name_is(name: str, port: int | None) -> None:
    guard = RequestGuard(allowed_hosts=["raf.example.com", "*.corp.test"])
    header = name if port is None else f"{name}:{port}"
    expected = name == "raf.example.com" or name.endswith(".corp.test")
    assert guard.allows_host(header) == expected
    assert guard.allows_host(header.upper()) == expected
