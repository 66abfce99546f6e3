"""Debian's headless Chromium (/usr/bin/chromium) driven by Playwright: no browser download.

One browser serves every page test a worker runs in a row (tests/serve/test_page.py and
tests/serve/test_studio_page.py): a launch costs more CPU than most of those tests. The browser
closes as soon as the next test on the worker does not use it, since Playwright's sync API keeps
an asyncio event loop running in the test thread, where other modules' tests call asyncio.run.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from tests.serve.servers import require

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    # Debian's launcher adds --enable-gpu-rasterization; without a GPU that rasterizes through
    # SwiftShader, measured 5-10% more CPU per page than Skia's own software raster.
    "--disable-gpu-rasterization",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
QUIETED = ["WebUIOmniboxPopup", "WebUIOmniboxAimPopup"]
"""Features that start two renderers for each new window, for popups of an address bar no
test has (~0.8 CPU-s a test, half of the browser's CPU)."""


class SharedBrowser:
    """The worker's browser, launched when a test first asks for it."""

    def __init__(self) -> None:
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None

    def get(self) -> Browser:
        if self._browser is None:
            from playwright.sync_api import sync_playwright

            if shutil.which(CHROMIUM) is None:
                require(
                    "chromium",
                    "apt-get install -y chromium (Debian's package; no browser download)",
                )
            playwright = sync_playwright().start()
            try:
                features = [*disabled_by_playwright(playwright), *QUIETED]
                args = [*FLAGS, f"--disable-features={','.join(features)}"]
                self._browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
            except BaseException:
                playwright.stop()
                raise
            self._playwright = playwright
        return self._browser

    def close(self) -> None:
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = None
        try:
            if browser is not None:
                browser.close()
        finally:
            if playwright is not None:
                playwright.stop()


def disabled_by_playwright(playwright: Playwright) -> list[str]:
    """The features Playwright's own `--disable-features` turns off: Chromium keeps only the
    last of the switch, so `QUIETED` goes with them. Read off the command line of a browser
    launched to see it (~0.4 CPU-s), found by a switch of its own that Chromium ignores."""
    marker = f"--raf-test-browser={uuid.uuid4().hex}"
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*FLAGS, marker])
    try:
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().decode(errors="replace").split("\0")
            except OSError:  # a process that ended
                continue
            if marker in argv:
                switch = next((a for a in argv if a.startswith("--disable-features=")), "")
                return [name for name in switch.partition("=")[2].split(",") if name]
    finally:
        browser.close()
    raise RuntimeError("the browser's command line was not found in /proc")


SHARED = SharedBrowser()
