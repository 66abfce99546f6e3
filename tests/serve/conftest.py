"""The PostgreSQL fixtures of the store tests, for the server's tests of several workers, and
the browser of the page tests (tests/serve/browser.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.serve.browser import SHARED
from tests.stores.conftest import postgres_dsn, postgres_schema

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

__all__ = ["postgres_dsn", "postgres_schema"]

TIMEOUT_MS = 15_000


@pytest.fixture
def browser() -> Browser:
    """The worker's one browser (launched on first use; see `pytest_runtest_teardown`)."""
    return SHARED.get()


@pytest.fixture
def viewport() -> dict[str, int]:
    return {"width": 1280, "height": 800}


@pytest.fixture
def page(browser: Browser, viewport: dict[str, int]) -> Iterator[Page]:
    """A fresh context and page per test; no uncaught error in the page by the test's end."""
    context = browser.new_context(viewport=viewport)  # pyright: ignore[reportArgumentType]
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == []


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the test's own fixtures are torn down: close the browser unless the next test on
    this worker uses it too (its event loop would stop the next test's asyncio.run)."""
    if nextitem is None or "browser" not in getattr(nextitem, "fixturenames", ()):
        SHARED.close()
