"""The AG-UI front: the HTTP/SSE server, its threads and guard, and the web page.

`app` builds the Starlette app, `server` runs it under uvicorn, `streaming` turns one run into
AG-UI events through `mapper`, `inputs` reads a request's messages, `guard` checks host, origin,
token and body before any route, and `static/` is the page.

Example:
    >>> from raf import FunctionAgent
    >>> from raf.serve.agui import create_app
    >>> app = create_app(FunctionAgent("echo", lambda m: m[-1].text))
"""

from raf.serve.agui.app import create_app as create_app
from raf.serve.agui.mapper import AguiMapper as AguiMapper
from raf.serve.agui.server import serve as serve

__all__ = ["AguiMapper", "create_app", "serve"]
