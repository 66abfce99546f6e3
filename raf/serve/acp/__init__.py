"""The ACP front (Agent Client Protocol over stdio, `raf[acp]`).

`server` answers the protocol (`AcpServer`, `serve_stdio`), `sessions` keeps ACP sessions as raf
sessions, `updates` maps stream items to session updates, and `questions` turns a human request
into a permission question or a message.

Example:
    >>> import raf
    >>> from raf.serve.acp import AcpServer
    >>> AcpServer(raf.FunctionAgent("echo", lambda m: m[-1].text)).agent.id
    'echo'
"""

from raf.serve.acp.server import AcpServer as AcpServer
from raf.serve.acp.server import serve_stdio as serve_stdio

__all__ = ["AcpServer", "serve_stdio"]
