"""Every async test runs on asyncio and on trio."""

from __future__ import annotations

import gc
import logging
import os
import sys
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.forkserver import ForkServers

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=60)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def _without_disk_flushes() -> None:
    """Tests kill processes, never the machine: flushing each commit to disk protects nothing
    they check, and on a busy disk it is most of their time (a SQLite commit in rollback-journal
    mode, as DBOS keeps its system database, waits ~30 ms on three fsyncs; a PostgreSQL commit
    ~8 ms). So, unless told otherwise: temporary files (`tmp_path` and `tempfile`) go to the
    RAM-backed /dev/shm, and PostgreSQL sessions commit without waiting for the WAL flush (the
    commit is visible to every other session at once all the same). Set in the environment,
    so the test workers and the processes the tests start inherit both; to keep temporary
    files elsewhere, set TMPDIR or PYTEST_DEBUG_TEMPROOT."""
    shm = "/dev/shm"
    chosen = os.environ.get("PYTEST_DEBUG_TEMPROOT") or os.environ.get("TMPDIR")
    if chosen is None and os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        os.environ["PYTEST_DEBUG_TEMPROOT"] = os.environ["TMPDIR"] = shm
        tempfile.tempdir = shm
    options = os.environ.get("PGOPTIONS", "")
    if "synchronous_commit" not in options:
        os.environ["PGOPTIONS"] = f"{options} -c synchronous_commit=off".strip()


_without_disk_flushes()


def _compiled_once() -> None:
    """Each module is compiled once, not once per process. The suite starts a few hundred
    Python processes (workers, servers, examples, crash victims); with PYTHONDONTWRITEBYTECODE
    set, as some machines set it, each compiled every raf and test module again (~0.1 CPU-s a
    process, and pytest's assertion rewriting of every test module in every worker). Lifted
    in the environment, so every process the run starts writes and reads `__pycache__` (git
    ignores it) as Python does by default. (A PYTHONPYCACHEPREFIX would not do: the installed
    packages' own compiled files would be passed over and compiled again.)"""
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        sys.dont_write_bytecode = False


_compiled_once()


class _CurrentStderr(logging.Handler):
    """Writes to whatever `sys.stderr` is now: pytest swaps it per test and closes the old one."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


# DBOS gives its logger a console handler bound to the stderr of the moment, once per process;
# set up first, the logger keeps this one, so a later test's DBOS never writes to a closed file.
_dbos_logger = logging.getLogger("dbos")
if not _dbos_logger.handlers:
    _console = _CurrentStderr()
    _console.name = "__dbos_console_log_handler__"
    _dbos_logger.addHandler(_console)
    _dbos_logger.propagate = False


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session")
def forkservers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServers]:
    """The worker's fork servers (`tests.forkserver`): the Python processes the tests start,
    forked from one that made their imports already."""
    servers = ForkServers(tmp_path_factory.mktemp("forkservers"))
    try:
        yield servers
    finally:
        servers.close()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (the default): one worker per core and one more. Many tests wait on something
    (processes they start, servers, databases, a browser); the extra worker runs while one
    waits. Measured on 2 cores, the whole suite: 2 workers 2 min 22 s and 183 CPU-s, 3 workers
    2 min 5 s and 198 CPU-s, 4 workers 2 min 1 s and 203 CPU-s (each worker imports every test
    module's dependencies first): the fourth gains little, and loses on a busier machine."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    return cores + 1


HEAVIEST_FIRST = (
    "tests/serve/test_page.py",  # with test_studio_page.py, one unit (`SHARED_WORKER`)
    "tests/durable/test_recovery.py",  # with the fan-out and vote recovery, one unit
    "tests/test_examples.py",
    "tests/serve/test_aborted_runs.py",
    "tests/durable/test_agent.py",
    "tests/tools/test_mcp_context.py",
    "tests/stores/test_cancellation_properties.py",
    "tests/adapters/test_command.py",
    "tests/bench/test_quick.py",
    "tests/reliability/test_load.py",
    "tests/tools/test_mcp.py",
    "tests/reliability/test_crash_resume.py",
    "tests/stores/test_cancellation.py",
    "tests/stores/test_stores.py",
    "tests/serve/test_serve_command.py",
    "tests/stores/test_session_locks.py",
    "tests/providers/test_openai.py",
    "tests/reliability/test_cancel_points.py",
    "tests/stores/test_linear_storage.py",
    "tests/cli/test_demo.py",
    "tests/tools/test_workspace.py",
    "tests/test_docs_examples.py",
)
"""The modules that take longest (the time in their tests, summed per module, in a full run),
longest first. Workers take whole modules (`--dist loadscope`); one of these started last would run on
alone while the other workers idle. A module missing here only loses its head start."""


SHARED_WORKER = {
    "tests/serve/test_page.py": "browser",
    "tests/serve/test_studio_page.py": "browser",
    "tests/durable/test_recovery.py": "durable-processes",
    "tests/durable/test_fanout.py": "durable-processes",
    "tests/durable/test_vote_recovery.py": "durable-processes",
}
"""Modules that one worker runs one after the other, as one unit, because they share what a
worker makes once (`browser`: one Chromium, `tests/serve/conftest.py`; `durable-processes`:
the fork server and the migrated PostgreSQL template, `tests/durable/conftest.py`)."""


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`--dist loadscope` with a unit of work per module (a test class goes with its module),
    or per `SHARED_WORKER` group."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return SHARED_WORKER.get(module, module)

    return ByModule(config, log)  # pyright: ignore[reportArgumentType]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules in `HEAVIEST_FIRST` order, then the others by their number of tests (what
    pytest-xdist's own reordering, turned off in pyproject.toml, would do); tests keep their
    order within a module."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    rank = {name: place for place, name in enumerate(HEAVIEST_FIRST)}
    ordered = sorted(modules, key=lambda m: (rank.get(m, len(rank)), -len(modules[m])))
    items[:] = [item for module in ordered for item in modules[module]]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Everything alive once the suite is collected (pytest's objects, every imported module's)
    stays out of the cyclic collector's scans from then on (`gc.freeze`). A test that keeps
    thousands of objects alive sets off full collections, and each scanned every object of the
    worker: 40% of the thousand-session load test's CPU. What the tests make is collected as
    ever."""
    gc.freeze()
