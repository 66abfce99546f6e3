"""`python -m bench.sse` keeps working: its workload streams every token over a real uvicorn.

The workload itself checks that each run's body carries every token and ends the run; the
times are not judged here.
"""

from __future__ import annotations

import anyio
import pytest

from bench.sse import MODELS, workload


@pytest.mark.parametrize("model", MODELS)
def test_the_workload_streams_every_token_of_each_run(model: str) -> None:
    seconds = anyio.run(workload, 5, model, 2, True)  # uvicorn runs on asyncio
    assert len(seconds) == 2
    assert all(s > 0 for s in seconds)
