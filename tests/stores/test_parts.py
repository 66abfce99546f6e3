"""Content-addressed parts: any JSON value round-trips, and growing a value writes only what is new."""

from __future__ import annotations

import base64
import enum
import hashlib
import json
from datetime import datetime
from typing import Any

import pydantic_core
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from raf.stores._parts import (
    CHUNK,
    INLINE_BYTES,
    DamagedParts,
    KnownParts,
    Parts,
    join,
    part_digest,
    split,
)

_keys = st.sampled_from(["$ref", "$list", "$esc", "t", "v", "role", ""]) | st.text(max_size=6)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.text(min_size=INLINE_BYTES // 2, max_size=INLINE_BYTES * 2)
    | st.just("\ud800 a lone surrogate" * 20)
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3 * CHUNK + 3) | st.dictionaries(_keys, inner, max_size=4)
    ),
    max_leaves=60,
)


def _joined(parts: Parts) -> Any:
    def fetch(digests: list[str]) -> dict[str, bytes]:
        return {digest: parts.objects[digest] for digest in digests if digest in parts.objects}

    return join(parts.root, fetch)


@given(_json)
def test_any_json_value_comes_back_as_it_was(value: Any) -> None:
    assert _joined(split(value)) == value


@given(_json)
def test_parts_are_filed_under_their_sha256_and_are_json(value: Any) -> None:
    for digest, data in split(value).objects.items():
        assert base64.urlsafe_b64decode(digest + "=") == hashlib.sha256(data).digest()
        assert digest == part_digest(data)
        json.loads(data)


@given(st.lists(st.text(min_size=0, max_size=400), min_size=1, max_size=120))
def test_appending_to_an_array_writes_the_new_item_and_a_bounded_rest(items: list[str]) -> None:
    before = split({"history": items[:-1]})
    after = split({"history": items})
    new = sum(len(data) for digest, data in after.objects.items() if digest not in before.objects)
    item = len(json.dumps(items[-1]))
    # The new item, a chunk of references, a tree node and a spine node, and the few parts
    # above the array: never anything of the earlier items, however many there are.
    assert new <= item + CHUNK * 80 + 6 * 160 + INLINE_BYTES * 2


def test_the_bytes_written_per_append_do_not_grow_with_the_array() -> None:
    history = [{"role": "user", "text": f"message {i} " + "x" * 500} for i in range(300)]
    stored: set[str] = set()
    written: list[int] = []
    for n in range(1, len(history) + 1):  # one save per message, as a growing session makes
        parts = split({"session": {"history": history[:n]}, "pending": [history[:n]]})
        new = sum(len(data) for digest, data in parts.objects.items() if digest not in stored)
        stored.update(parts.objects)
        written.append(new + len(json.dumps(parts.root)))
    early, late = sum(written[:60]), sum(written[-60:])
    assert late < early * 1.25


def test_equal_values_share_their_parts() -> None:
    message = {"role": "assistant", "text": "y" * 1000}
    one = split({"a": [message] * 20, "b": message})
    assert len(one.objects) < 12  # the message once, its chunks and trees once each


def test_a_value_met_twice_comes_back_as_two_objects() -> None:
    # One part, used as parsed the first time: the second use must not share it.
    message = {"role": "assistant", "text": "y" * 1000}
    joined = _joined(split({"a": [message] * 6}))
    assert joined == {"a": [message] * 6}
    assert len({id(item) for item in joined["a"]}) == 6
    joined["a"][0]["text"] = "changed"
    assert joined["a"][1]["text"] == "y" * 1000


class _Colour(enum.Enum):
    RED = "red"


class _Note(BaseModel):
    at: datetime
    colour: _Colour
    tags: tuple[str, ...]


_jsonable = st.recursive(
    _scalars
    | st.builds(_Note, at=st.datetimes(), colour=st.just(_Colour.RED), tags=st.tuples(st.text()))
    | st.sets(st.integers(), max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3 * CHUNK + 3)
        | st.tuples(inner, inner)
        | st.dictionaries(_keys | st.integers().map(str), inner, max_size=4)
        | st.dictionaries(st.integers(), inner, max_size=3)
    ),
    max_leaves=40,
)


@given(_jsonable)
def test_a_value_pydantic_can_serialize_is_stored_as_its_json(value: Any) -> None:
    # Converted value by value (never the whole value at once), with pydantic's own result.
    as_json = pydantic_core.to_jsonable_python(value)
    assert split(value).objects == split(as_json).objects
    assert _joined(split(value)) == as_json


def test_a_part_that_is_not_one_json_value_is_named() -> None:
    parts = split({"text": "z" * 1000})
    (digest,) = parts.objects
    data = b"1, 2"
    parts.root = {"text": {"$ref": part_digest(data)}}
    parts.objects = {part_digest(data): data}
    with pytest.raises(DamagedParts, match=f"part {part_digest(data)} is not JSON"):
        _joined(parts)
    assert digest != part_digest(data)


def test_a_missing_part_is_named() -> None:
    parts = split({"text": "z" * 1000})
    (digest,) = parts.objects
    parts.objects.clear()
    with pytest.raises(DamagedParts, match=f"part {digest} is missing"):
        _joined(parts)


def test_a_part_that_does_not_match_its_digest_is_refused() -> None:
    parts = split({"text": "z" * 1000})
    (digest,) = parts.objects
    parts.objects[digest] = json.dumps("w" * 1000).encode()
    with pytest.raises(DamagedParts, match="does not match its digest"):
        _joined(parts)


def test_an_array_whose_layout_was_edited_is_refused() -> None:
    parts = split(list(range(40)))
    parts.root["$list"][0] = 41
    with pytest.raises(DamagedParts, match="array"):
        _joined(parts)


def test_known_parts_are_not_sent_again_until_forgotten() -> None:
    known = KnownParts(capacity=2)
    assert known.new({"a": b"1", "b": b"2"}) == {"a": b"1", "b": b"2"}
    known.add(["a", "b"])
    assert known.new({"a": b"1", "c": b"3"}) == {"c": b"3"}
    known.add(["c"])  # past capacity: forgets, so parts are only sent (and kept once) again
    known.add(["d"])
    assert "a" in known.new({"a": b"1"})
