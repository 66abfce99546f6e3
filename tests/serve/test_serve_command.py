"""`raf serve MODULE:ATTR` in a subprocess: it binds, serves the tree and the page, wants the token.

Synchronous: the subject of each test is the `raf serve` process it starts, which runs on its
own event loop; the tests only start it, talk HTTP to it and stop it (the server on both
backends is tested in-process in the other modules of this package). A test stuck on a
process that never answers ends at pytest's timeout.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from subprocess import PIPE
from typing import IO

import httpx2
import pytest

Popen = subprocess.Popen[str]

TREES = Path(__file__).parent / "trees.py"
RAF = Path(sys.executable).parent / "raf"


def started(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> Popen:
    """`command` started with its output read by the test, as text."""
    return subprocess.Popen(command, cwd=cwd, env=env, stdout=PIPE, stderr=PIPE, text=True)


def read_until(stream: IO[str] | None, pattern: str) -> tuple[re.Match[str], str]:
    """Read `stream` line by line until `pattern` matches what was read; the match and that."""
    assert stream is not None
    said = ""
    for line in stream:
        said += line
        found = re.search(pattern, said)
        if found:
            return found, said
    raise AssertionError(f"raf serve ended without {pattern!r}:\n{said}")


def wait_for_port(process: Popen) -> int:
    """Read uvicorn's log until it says where it listens."""
    found, _ = read_until(process.stderr, r"running on http://127\.0\.0\.1:(\d+)")
    return int(found.group(1))


def test_raf_serve_serves_the_tree_with_a_token(tmp_path: Path) -> None:
    command = [str(RAF), "serve", f"{TREES}:newsroom", "--port", "0", "--token", "tok"]
    with started(command, tmp_path) as process:
        try:
            port = wait_for_port(process)
            with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=20) as http:
                refused = http.get("/agents")
                trees = http.get("/agents", headers={"Authorization": "Bearer tok"})
                page = http.get("/")
        finally:
            process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130  # stopped by Ctrl-C, after a clean shutdown
    assert refused.status_code == 401
    assert [t["id"] for t in trees.json()] == ["newsroom"]
    assert "<title>" in page.text


def test_raf_serve_explains_a_bad_target(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(RAF), "serve", "no_such_module:agent"], cwd=tmp_path, capture_output=True, timeout=30
    )
    assert done.returncode != 0
    assert b"no_such_module" in done.stderr


@pytest.mark.parametrize("route", ["/agents/staller/run", "/studio/agents/staller/runs"])
def test_a_stopping_server_ends_each_run_in_flight_with_run_error(
    tmp_path: Path, route: str
) -> None:
    command = [str(RAF), "serve", f"{TREES}:stalling", "--port", "0"]
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "u", "role": "user", "content": "x"}],
    }
    events: list[dict[str, object]] = []
    with started(command, tmp_path) as process:
        port = wait_for_port(process)
        with (
            httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=20) as http,
            http.stream("POST", route, json=body) as response,
        ):
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                events.append(json.loads(line[5:]))
                if events[-1]["type"] == "TEXT_MESSAGE_CONTENT":  # the run is in flight
                    process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
    assert events[-1]["code"] == "ServerStopping"
    assert "send it again" in str(events[-1]["message"])


def test_a_port_out_of_range_is_one_line(tmp_path: Path) -> None:
    command = [str(RAF), "serve", f"{TREES}:newsroom", "--port", "99999"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        "raf serve: port 99999 is not a TCP port: pass 0..65535 (0 picks a free one)"
    ]


def test_every_address_without_a_token_warns_and_shows_a_url_that_answers(
    tmp_path: Path,
) -> None:
    with socket.socket() as probe:  # a free port, to bind every address on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [str(RAF), "serve", f"{TREES}:newsroom", "--host", "0.0.0.0", "--port", str(port)]
    env = {k: v for k, v in os.environ.items() if k != "RAF_TOKEN"} | {"COLUMNS": "200"}
    with started(command, tmp_path, env) as process:
        try:
            _, said = read_until(process.stdout, "Ctrl-C")
            url = re.search(r"web page at (http://\S+/);", said)
            assert url is not None, said
            _, log = read_until(process.stderr, "running on")
            with httpx2.Client(timeout=20) as http:
                trees = http.get(url.group(1) + "agents")
        finally:
            process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert url.group(1) == f"http://127.0.0.1:{port}/"
    assert trees.status_code == 200
    assert "warning: serving every address without a token" in log


def test_a_body_limit_that_is_no_size_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(RAF), "serve", f"{TREES}:newsroom", "--max-body-bytes", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "raf serve: --max-body-bytes 0 is not a size: pass a positive number"
    ]
