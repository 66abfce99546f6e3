from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from raf.messages import ChatMessage, message_list_adapter
from raf.session import Session


def test_session_ids_are_unique_by_default() -> None:
    assert Session().id != Session().id
    assert Session(id="fixed").id == "fixed"


def test_json_round_trip_restores_typed_values_lazily() -> None:
    session = Session(id="s1")
    history = [ChatMessage.user("hi"), ChatMessage.assistant("hello", author="bot")]
    session.set("bot#history", history)
    session.set("bot#count", 3)
    restored = Session.from_json(session.to_json())
    assert restored.id == "s1"
    assert restored.get("bot#count") == 3
    assert restored.get_as("bot#history", message_list_adapter) == history
    assert restored.to_json() == session.to_json()


def test_get_as_leaves_live_values_alone() -> None:
    session = Session()
    session.set("k", [1, 2])
    assert session.get_as("k", TypeAdapter(list[int])) == [1, 2]
    assert session.get_as("missing", TypeAdapter(int)) is None


def test_clear_by_prefix() -> None:
    session = Session()
    session.set("a/b#x", 1)
    session.set("a/c#y", 2)
    session.set("z#y", 3)
    session.clear("a/")
    assert session.keys() == ["z#y"]
    assert session.pop("z#y") == 3
    assert session.keys() == []


def test_from_json_rejects_foreign_text() -> None:
    with pytest.raises(ValueError, match="not a raf session"):
        Session.from_json('{"id": "x"}')


@pytest.mark.parametrize("given", ["runs.db", 42, object()])
def test_a_store_that_is_not_one_is_refused_saying_what_to_pass(given: object) -> None:
    with pytest.raises(
        TypeError, match=r"Session\(store=\.\.\.\) takes a checkpoint store"
    ) as refused:
        Session(store=given)  # type: ignore[arg-type]
    if given == "runs.db":
        assert "SqliteCheckpointStore('runs.db')" in str(refused.value)
