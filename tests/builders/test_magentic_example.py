"""`examples/magentic.py` answers right, offline: the researcher's hours reach the writer."""

from __future__ import annotations

import pytest

from examples import magentic

pytestmark = pytest.mark.anyio


async def test_the_example_answers_both_questions_with_the_hours(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    await magentic.main()
    lines = capsys.readouterr().out.splitlines()
    assert "answer: Note: open 7:00-18:00." in lines
    assert lines[-1] == "follow-up: Note: open 9:00-20:00."
