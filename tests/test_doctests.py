"""Every docstring example of the package runs as written."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import raf

MODULES = sorted(info.name for info in pkgutil.walk_packages(raf.__path__, "raf."))


def test_the_package_has_examples_to_run() -> None:
    examples = sum(
        len(test.examples)
        for name in MODULES
        for test in doctest.DocTestFinder().find(importlib.import_module(name))
    )
    assert examples >= 100


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, report=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{name}: {result.failed} docstring example(s) failed"
