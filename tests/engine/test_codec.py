from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from raf.builders.group_chat.selectors import SpeakerChoice
from raf.builders.magentic.ledger import LedgerAnswer, LedgerChoice, TaskLedger
from raf.builders.vote.ballot import Ballot, VoteResult
from raf.engine.checkpointing import decode_state, encode_state
from raf.engine.codec import CheckpointValueError, decode, encode
from raf.engine.state import RunState
from raf.messages import ChatMessage, ToolCallContent
from raf.updates import AgentResponse, RequestInfoUpdate, Usage


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
        {"b", "a"},
        frozenset({1, 2}),
        {1: "one", (2, "two"): [ChatMessage.user("x")], frozenset({"k"}): {"v"}},
        datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
        datetime(2024, 5, 1, 12, 30, 15, 250),
        date(2024, 5, 1),
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
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


def test_a_parametrised_agent_response_checkpoints_as_an_agent_response() -> None:
    response = AgentResponse[Verdict](
        messages=[ChatMessage.user("x")], value=Verdict(approved=True)
    )
    back = round_trip(response)
    assert type(back) is AgentResponse
    assert back == response
    assert type(back.value) is Verdict


def test_a_waiting_agent_response_keeps_its_status_and_pending_requests() -> None:
    asked = RequestInfoUpdate(
        request_id="team/review@1#0", path=("team", "review"), payload=Verdict(approved=False)
    )
    response = AgentResponse(messages=[ChatMessage.user("x")], status="waiting", pending=[asked])
    back = round_trip(response)
    assert back == response
    assert back.status == "waiting"
    assert type(back.pending[0].payload) is Verdict
    # A completed response keeps the form it always had.
    assert set(encode(AgentResponse(), "a test value")["v"]) == {"messages", "usage", "value"}


def test_types_stay_distinct() -> None:
    assert type(round_trip((1, 2))) is tuple
    assert type(round_trip([1, 2])) is list
    assert type(round_trip({1, 2})) is set
    assert type(round_trip(frozenset({1}))) is frozenset
    assert type(round_trip(date(2024, 1, 2))) is date
    assert list(round_trip({2: "b", 1: "a"})) == [2, 1]
    assert encode([], "x") == {"t": "json", "v": []}


def test_a_set_checkpoints_as_the_same_json_whatever_its_order() -> None:
    assert encode({"b", "a", "c"}, "x") == encode({"c", "a", "b"}, "x")
    assert encode({"a", 1}, "x")["t"] == "set"  # items that do not compare keep set order


def shape(value: Any) -> Any:
    """`value` with the type of every part spelled out, to compare exactly."""
    if isinstance(value, set | frozenset):
        items: set[Any] | frozenset[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return (type(value).__name__, sorted(repr(shape(item)) for item in items))
    if isinstance(value, dict):
        pairs: dict[Any, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return ("dict", [(shape(k), shape(v)) for k, v in pairs.items()])
    if isinstance(value, list | tuple):
        parts: list[Any] | tuple[Any, ...] = value  # pyright: ignore[reportUnknownVariableType]
        return (type(value).__name__, [shape(item) for item in parts])
    return (type(value).__name__, value)


hashables = st.recursive(
    st.integers() | st.text(max_size=5) | st.dates(),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=6,
)
values = st.recursive(
    st.none()
    | st.booleans()
    | hashables
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.datetimes(timezones=st.none() | st.just(UTC))
    | st.uuids()
    | st.builds(ChatMessage.user, st.text(max_size=5))
    | st.builds(Verdict, approved=st.booleans()),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        | st.dictionaries(hashables, inner, max_size=3)
        | st.sets(hashables, max_size=3)
    ),
    max_leaves=12,
)


@given(values)
def test_every_encodable_value_comes_back_with_the_same_types(value: Any) -> None:
    back = round_trip(value)
    assert back == value
    assert shape(back) == shape(value)


def test_values_without_a_json_form_are_refused_naming_where_they_are() -> None:
    with pytest.raises(CheckpointValueError, match="the input of node 'n'") as info:
        encode({"when": object()}, "the input of node 'n'", "n")
    assert info.value.node_id == "n"
    with pytest.raises(CheckpointValueError, match="the state of 'n'"):
        encode({1: object()}, "the state of 'n'")
    with pytest.raises(CheckpointValueError, match="a value of type bytes is not JSON"):
        encode({b"raw"}, "x")
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


class Note(BaseModel):
    text: str


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a\ud800b", "a\ufffdb"),
        (["a\udfff"], ["a\ufffd"]),
        ({"k\ud800": ["v\ud800"]}, {"k\ufffd": ["v\ufffd"]}),
        ({"k\ud800": {1, 2}}, {"k\ufffd": {1, 2}}),
        (("a\ud800",), ("a\ufffd",)),
        (Note(text="a\ud800"), Note(text="a\ufffd")),
    ],
)
def test_a_lone_surrogate_in_a_value_is_checkpointed_as_the_replacement_character(
    value: Any, expected: Any
) -> None:
    # Encoded as UTF-8, as every store writes it: a lone surrogate would raise here.
    text = json.dumps(encode(value, "a test value"), ensure_ascii=False).encode()
    assert decode(json.loads(text)) == expected


@pytest.mark.parametrize(
    ("old_module", "value"),
    [
        ("raf.builders.vote_ballot", Ballot(choice="tea", confidence=0.5, rationale="warm")),
        ("raf.builders.vote_ballot", VoteResult(winner="tea", tally={"tea": 1.0}, ballots={})),
        ("raf.builders.magentic_ledger", TaskLedger(facts="f", plan="p")),
        ("raf.builders.magentic_ledger", LedgerAnswer(reason="r", answer=True)),
        ("raf.builders.magentic_ledger", LedgerChoice(reason="r", answer="a")),
        ("raf.builders.group_chat_selectors", SpeakerChoice(reason="r", speaker="a")),
    ],
)
def test_a_model_named_by_the_module_it_stood_in_before_it_moved_comes_back(
    old_module: str, value: BaseModel
) -> None:
    data = json.loads(json.dumps(encode(value, "a test value")))
    name = type(value).__qualname__
    assert data["cls"] == f"{type(value).__module__}:{name}"
    data["cls"] = f"{old_module}:{name}"
    assert decode(data) == value


def test_a_checkpoint_written_before_the_patterns_had_packages_brings_its_models_back() -> None:
    ballot = Ballot(choice="tea")
    result = VoteResult(winner="tea", tally={"tea": 1.0}, ballots={"a": ballot})
    response = AgentResponse(messages=[ChatMessage.assistant("tea", author="lunch")], value=result)
    state = RunState(pending={"count": [response]}, outputs=[("count", response)])
    written = json.dumps(encode_state(state))
    assert "raf.builders.vote.ballot:VoteResult" in written
    # The same checkpoint as a release with `raf/builders/vote_ballot.py` wrote it.
    old = written.replace("raf.builders.vote.ballot:", "raf.builders.vote_ballot:")
    assert "raf.builders.vote.ballot:" not in old

    restored = decode_state(json.loads(old))

    [(node, output)] = restored.outputs
    assert node == "count"
    assert isinstance(output, AgentResponse)
    value = cast("AgentResponse[Any]", output).value
    assert isinstance(value, VoteResult)
    assert value == result
    assert isinstance(value.ballots["a"], Ballot)
    assert restored.pending["count"][0].value == result


def test_a_model_of_a_module_that_never_moved_is_not_looked_for_elsewhere() -> None:
    data = json.loads(json.dumps(encode(TaskLedger(facts="f", plan="p"), "a test value")))
    data["cls"] = "raf.builders.elsewhere:TaskLedger"
    assert decode(data) == {"facts": "f", "plan": "p"}
