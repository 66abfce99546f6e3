"""`python -S tests/tools/mcp_forked.py SOCKET`: the test server over this process's stdin and
stdout, forked by `mcp_server.py forks SOCKET` (its `serve_forks`) instead of started anew.
Ends with the server's exit code once it ends; killing this process kills the server."""

import os
import socket
import sys

with socket.socket(socket.AF_UNIX) as connection:
    connection.connect(sys.argv[1])
    socket.send_fds(connection, [b"stdio"], [0, 1])
    # The server holds the pipes now: only its end (or the client's) closes them.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    answer = connection.makefile().readline()
os._exit(int(answer) if answer else 1)
