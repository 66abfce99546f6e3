"""The fork server the tests start their Python processes from behaves as `python` would: a
worker runs as a script or a module would, and its requester ends as the worker ended."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.forkserver import ForkServers, command, kill, script

WORKER = """
import os, signal, sys
signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
print(os.getpid(), sys.argv[1:], os.getcwd(), os.environ.get("ASKED"), sys.path[0], flush=True)
if sys.argv[1:] == ["wait"]:
    sys.stdin.read()
sys.exit(int(sys.argv[1]) if sys.argv[1:2] != ["wait"] else 0)
"""


@pytest.fixture(scope="module")
def server(forkservers: ForkServers) -> str:
    return forkservers.get("json.tool")


def gone_within(pid: int, seconds: float) -> bool:
    """Whether process `pid` (not a child of this one) ends within `seconds`."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([handle], [], [], seconds)[0])
    finally:
        os.close(handle)


def started(argv: list[str], cwd: Path) -> tuple[subprocess.Popen[str], int]:
    """The requester, and its worker's pid once the worker runs (blocked on its stdin)."""
    process = subprocess.Popen(
        [*argv, "wait"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline().split()[0])


def test_a_script_runs_as_python_runs_it_and_its_exit_code_comes_back(
    server: str, tmp_path: Path
) -> None:
    (tmp_path / "work.py").write_text(WORKER)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "ASKED": "yes"}
    done = subprocess.run(
        [*script(server, tmp_path / "work.py"), "7"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    pid, rest = done.stdout.split(" ", 1)
    assert done.returncode == 7
    assert int(pid) != os.getpid()
    assert rest == f"['7'] {elsewhere} yes {tmp_path}\n"


def test_a_module_runs_with_the_working_directory_first_on_its_path(
    server: str, tmp_path: Path
) -> None:
    (tmp_path / "work.py").write_text(WORKER)
    done = subprocess.run(
        [*command(server, "work"), "0"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(" ", 1)[1] == f"['0'] {tmp_path} None {tmp_path}\n"


def test_a_preloaded_module_runs_as_its_main_without_a_word(server: str) -> None:
    done = subprocess.run(
        command(server, "json.tool"), input='{"a": 1}', capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, '{\n    "a": 1\n}\n', "")


def test_an_exception_is_printed_and_exits_1(server: str, tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("raise ValueError('nope')\n")
    done = subprocess.run(script(server, tmp_path / "bad.py"), capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.rstrip().endswith("ValueError: nope")


@pytest.mark.parametrize(
    "body", ["import sys; sys.exit(-1)", "import sys; sys.exit('bye')", "raise KeyboardInterrupt"]
)
def test_an_odd_end_comes_back_as_python_ends(server: str, tmp_path: Path, body: str) -> None:
    (tmp_path / "end.py").write_text(body + "\n")
    fresh = subprocess.run([sys.executable, tmp_path / "end.py"], capture_output=True)
    forked = subprocess.run(script(server, tmp_path / "end.py"), capture_output=True)
    assert forked.returncode == fresh.returncode
    assert forked.stderr.splitlines()[-1:] == fresh.stderr.splitlines()[-1:]


def test_a_signal_to_the_requester_reaches_the_worker(server: str, tmp_path: Path) -> None:
    (tmp_path / "work.py").write_text(WORKER)
    process, _ = started(script(server, tmp_path / "work.py"), tmp_path)
    with process:
        process.terminate()
        assert process.wait(timeout=30) == 3  # the worker's SIGTERM handler's exit code


def test_kill_sigkills_the_worker_and_the_requester_ends_as_it_did(
    server: str, tmp_path: Path
) -> None:
    (tmp_path / "work.py").write_text(WORKER)
    process, worker = started(script(server, tmp_path / "work.py"), tmp_path)
    with process:
        kill(process)
        assert process.wait(timeout=30) == -signal.SIGKILL
    assert gone_within(worker, 0)  # gone before its requester ended


def test_a_requester_killed_takes_its_worker_with_it(server: str, tmp_path: Path) -> None:
    (tmp_path / "work.py").write_text(WORKER)
    process, worker = started(script(server, tmp_path / "work.py"), tmp_path)
    with process:  # the worker's stdin stays open: only the kill can end it
        process.kill()
        process.wait(timeout=30)
        assert gone_within(worker, 30)
