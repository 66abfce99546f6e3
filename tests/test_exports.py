"""The public API: every exported name imports, is documented, and heavy modules load lazily."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import raf

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_every_public_name_imports() -> None:
    for name in raf.__all__:
        assert getattr(raf, name) is not None, name


def test_every_public_name_is_documented() -> None:
    docs = " ".join(p.read_text() for p in DOCS.glob("*.md"))
    missing = [n for n in raf.__all__ if not re.search(rf"\b{re.escape(n)}\b", docs)]
    assert missing == []


def test_public_callables_have_docstrings() -> None:
    objects = {name: getattr(raf, name) for name in raf.__all__}
    undocumented = [
        name
        for name, obj in objects.items()
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not (obj.__doc__ or "").strip()
    ]
    assert undocumented == []


def test_import_does_not_load_openai_or_networkx() -> None:
    code = "import sys, raf; print('openai' in sys.modules, 'networkx' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "False"]


def test_unknown_attribute_raises() -> None:
    try:
        raf.DoesNotExist  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as error:
        assert "DoesNotExist" in str(error)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_function_agent_is_reachable_where_the_layout_puts_it() -> None:
    from raf.agent import FunctionAgent

    assert FunctionAgent is raf.FunctionAgent


def test_dir_of_raf_lists_only_its_public_names() -> None:
    import raf
    import raf.testing

    assert dir(raf) == sorted(raf.__all__)
    for leftover in ("Any", "TYPE_CHECKING", "annotations", "lazy_exports", "agent"):
        assert leftover not in dir(raf)
    assert dir(raf.testing) == sorted(raf.testing.__all__)
