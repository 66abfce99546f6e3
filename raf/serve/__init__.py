"""Fronts that drive any agent: the AG-UI HTTP server and its web page (`raf[server]`).

`create_app(agents)` is the Starlette app; `serve(agents)` runs it under uvicorn on
127.0.0.1. docs/serving.md maps raf's stream items to AG-UI events.

Example:
    >>> from raf import FunctionAgent
    >>> from raf.serve import create_app
    >>> app = create_app(FunctionAgent("echo", lambda m: m[-1].text))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raf._lazy import lazy_exports

if TYPE_CHECKING:
    from raf.serve.agui.app import create_app as create_app
    from raf.serve.agui.mapper import AguiMapper as AguiMapper
    from raf.serve.agui.server import serve as serve

# Starlette, uvicorn and the AG-UI types load on first use: `raf acp`, which imports
# `raf.serve.acp` (and so this package), never needs them.
_LAZY: dict[str, str] = {
    "AguiMapper": "raf.serve.agui.mapper",
    "create_app": "raf.serve.agui.app",
    "serve": "raf.serve.agui.server",
}

__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

__all__ = ["AguiMapper", "create_app", "serve"]
