"""Tests that keep thousands of objects alive at once, without paying for the process's others."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def earlier_objects_frozen() -> Iterator[None]:
    """Leave every object alive before the block (pytest's, the imported modules') out of the
    cyclic collector's scans until the block ends.

    A test holding a thousand runs at once sets off full collections, and each full collection
    scans every object of the process: in a test worker that has imported the suite, most of
    the test's CPU time. The objects the block makes are collected as ever (`gc.collect()` in
    the block frees them), and the earlier ones are scanned again once it ends.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
