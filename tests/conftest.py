"""Every async test runs on asyncio and on trio."""

from __future__ import annotations

import logging
import os
import sys

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=60)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


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
