"""JSON from a model: one reader and one correction policy for every structured call."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from raf.adapters.structured import PROSE_OBJECTS, ask_json, structured_call, validate_json
from raf.errors import SchemaValidationError
from raf.messages import ChatMessage
from raf.testing import ScriptedProvider, text

pytestmark = pytest.mark.anyio

ASK = [ChatMessage.user("Ship it?")]


class Verdict(BaseModel):
    ok: bool
    why: str = ""


@pytest.mark.parametrize(
    "answer",
    [
        '{"ok": true}',
        '```json\n{"ok": true}\n```',
        'Sure. {"ok": true} That is all.',
        'First {"other": 1}, then {"ok": true}.',
        'Braces {in prose} and then {"ok": true}',
    ],
)
def test_an_answer_is_read_bare_fenced_or_from_prose(answer: str) -> None:
    assert validate_json(answer, Verdict).ok is True


@pytest.mark.parametrize("answer", ["", "no", '{"ok": "perhaps"}', "{" * 5000])
def test_an_answer_without_fitting_json_is_refused(answer: str) -> None:
    with pytest.raises(ValidationError):
        validate_json(answer, Verdict)


def test_prose_is_searched_a_bounded_number_of_objects() -> None:
    late = "{}" * PROSE_OBJECTS + '{"ok": true}'
    with pytest.raises(ValidationError):
        validate_json(late, Verdict)


@given(st.text(max_size=200))
def test_reading_any_text_gives_a_verdict_or_a_validation_error(answer: str) -> None:
    with contextlib.suppress(ValidationError):
        assert isinstance(validate_json(answer, Verdict), Verdict)


async def test_a_rejected_answer_is_corrected_and_asked_again() -> None:
    model = ScriptedProvider([text("sure!"), text('{"ok": false}'), text('{"ok": true}')])
    answer = await ask_json(
        model, ASK, Verdict, check=lambda v: None if v.ok else "it must be ok", again="Again."
    )
    assert answer.value == Verdict(ok=True)
    assert [p.split(":")[0] for p in answer.problems] == ["not JSON of Verdict", "it must be ok"]
    last = model.requests[-1].messages
    assert last[-1].text == "That answer cannot be used: it must be ok. Again."
    assert [m.role for m in last[-4:]] == ["assistant", "user", "assistant", "user"]


async def test_attempts_bound_the_calls() -> None:
    model = ScriptedProvider(lambda m: text("never JSON"))
    answer = await ask_json(model, ASK, Verdict, attempts=2)
    assert answer.value is None and len(answer.problems) == 2
    assert model.calls == 2


async def test_a_structured_call_makes_one_call_unless_told_otherwise() -> None:
    with pytest.raises(SchemaValidationError, match=r"does not match Verdict \(not JSON"):
        await structured_call(ScriptedProvider([text("nope"), text('{"ok": true}')]), ASK, Verdict)
    model = ScriptedProvider([text("nope"), text('{"ok": true}')])
    assert await structured_call(model, ASK, Verdict, attempts=2) == Verdict(ok=True)
