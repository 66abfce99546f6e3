from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from raf.engine.codec import CheckpointValueError, decode, encode
from raf.messages import ChatMessage, ToolCallContent
from raf.updates import AgentResponse, Usage


class Verdict(BaseModel):
    approved: bool
    notes: list[str] = []


def round_trip(value: Any) -> Any:
    return decode(json.loads(json.dumps(encode(value, "a test value"))))


@pytest.mark.parametrize(
    "value",
    [
        None,
        3,
        2.5,
        "text",
        True,
        [1, "two", None],
        {"a": [1, 2], "b": {"c": None}},
        ChatMessage.user("hi"),
        [ChatMessage.user("hi"), ChatMessage.assistant("yo", author="bot")],
        ChatMessage(
            role="assistant",
            contents=[ToolCallContent(call_id="c1", name="search", arguments='{"q": 1}')],
        ),
        Verdict(approved=True, notes=["fine"]),
        [ChatMessage.user("x"), 7, Verdict(approved=False)],
        ("tuple", 1),
        {"message": ChatMessage.user("in a dict"), "n": 1},
    ],
)
def test_values_round_trip_through_json(value: Any) -> None:
    assert round_trip(value) == value


def test_an_agent_response_round_trips_with_its_typed_value() -> None:
    response = AgentResponse(
        messages=[ChatMessage.assistant("ok", author="w")],
        usage=Usage(input_tokens=3, output_tokens=4),
        value=Verdict(approved=True),
    )
    back = round_trip(response)
    assert isinstance(back, AgentResponse)
    assert back.messages == response.messages
    assert back.usage.total_tokens == 7
    assert back.value == Verdict(approved=True)


def test_types_stay_distinct() -> None:
    assert type(round_trip((1, 2))) is tuple
    assert type(round_trip([1, 2])) is list
    assert encode([], "x") == {"t": "json", "v": []}


def test_values_without_a_json_form_are_refused_naming_where_they_are() -> None:
    with pytest.raises(CheckpointValueError, match="the input of node 'n'") as info:
        encode({"when": object()}, "the input of node 'n'", "n")
    assert info.value.node_id == "n"
    with pytest.raises(CheckpointValueError):
        encode({1: "non-string key"}, "x")
    with pytest.raises(CheckpointValueError, match="float"):
        encode(float("nan"), "x")
    with pytest.raises(CheckpointValueError, match="float"):
        encode([1.5, float("inf")], "x")


def test_models_defined_in_functions_are_refused() -> None:
    class Local(BaseModel):
        x: int = 1

    with pytest.raises(CheckpointValueError, match="module level"):
        encode(Local(), "x")


def test_unknown_tags_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown tag"):
        decode({"t": "pickle", "v": "..."})
