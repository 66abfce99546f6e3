"""`raf.testing` exports its public names, and the in-process doubles load without `openai`."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import raf.testing


def test_every_exported_name_imports_and_is_listed_by_dir() -> None:
    assert len(raf.testing.__all__) == len(set(raf.testing.__all__))
    for name in raf.testing.__all__:
        value = getattr(raf.testing, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name} has no docstring"
    assert set(raf.testing.__all__) <= set(dir(raf.testing))


def test_the_scripted_provider_imports_without_the_openai_client() -> None:
    code = (
        "import sys\n"
        "from raf.testing import ScriptedProvider, text\n"
        "print('openai' in sys.modules)\n"
        "from raf.testing import ScriptedOpenAIServer\n"
        "print('openai' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=30
    )
    assert result.stdout.split() == ["False", "True"], result.stderr


def test_an_unknown_name_raises_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match=r"'raf.testing' has no attribute 'Nope'"):
        raf.testing.Nope  # type: ignore[attr-defined]  # noqa: B018
