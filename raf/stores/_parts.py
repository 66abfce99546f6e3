"""Content-addressed parts: a JSON value stored as a small root and parts kept once each.

`split(value)` cuts a JSON value into a small `root` and parts (JSON text, by sha256), and
`join(root, fetch)` puts it back together. What makes a conversation's storage linear:

- a string, object or short array whose JSON is longer than `INLINE_BYTES` becomes a part, so
  a message is one part however many histories, pending inputs and checkpoints hold it;
- an array longer than `CHUNK` items is cut into chunks of `CHUNK` items from its start, and
  the chunks are the leaves of perfect binary trees (sizes following the binary digits of the
  chunk count, largest first), listed by a chain of parts from the smallest tree up (the
  spine); the few items after the last whole chunk stay in the root. Appending to an array therefore changes its root,
  a new chunk every `CHUNK` items and the tree nodes above it (amortised one per chunk),
  never the parts of its earlier items: a store that keeps parts once writes per save only
  what is new.

The layout is a pure function of the value, so equal values give equal parts (and one save's
parts are the next one's). A part reference is `{"$ref": sha256}` and an array root
`{"$list": [length, spine, tail]}` (a spine node is `[tree, rest of the spine]`); a stored object that happens to have one key
among `$ref`, `$list` and `$esc` is kept as `{"$esc": object}`, so no value is mistaken for
either. JSON text of parts is UTF-8 with any lone surrogate written as its `\\uXXXX` escape.

Example:
    >>> history = [{"role": "user", "text": "x" * 300} for _ in range(20)]
    >>> parts = split({"history": history})
    >>> join(parts.root, lambda digests: {d: parts.objects[d] for d in digests}) == {
    ...     "history": history
    ... }
    True
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import pydantic_core

__all__ = [
    "CHUNK",
    "INLINE_BYTES",
    "DamagedParts",
    "KnownParts",
    "Parts",
    "join",
    "part_digest",
    "split",
]

INLINE_BYTES = 256
"""A value whose JSON is longer than this is stored as a part of its own."""
CHUNK = 2
"""Items per chunk of a long array."""

_REF = "$ref"
_LIST = "$list"
_ESCAPE = "$esc"
_MARKERS = frozenset({_REF, _LIST, _ESCAPE})
_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)

Fetch = Callable[[list[str]], dict[str, bytes]]
"""Reads the parts stored under some digests: those it has, by digest."""


class DamagedParts(Exception):
    """A stored value cannot be put back together: a part is missing or not what it should be."""


@dataclass(slots=True)
class Parts:
    """A value cut up by `split`: its `root` (small JSON) and its parts by `part_digest`."""

    root: Any
    objects: dict[str, bytes] = field(default_factory=lambda: {})


def split(value: Any, known: KnownParts | None = None) -> Parts:
    """Cut the JSON value `value` (dicts with string keys, lists, str, numbers, bools, None;
    anything else is first made JSON as `pydantic_core.to_jsonable_python` does).

    With `known`, a long string whose part the store is known to hold is not encoded again,
    and `objects` leaves that part out (the store has it).
    """
    parts = Parts(None)
    parts.root, _ = _Splitter(parts.objects, known).value(value)
    return parts


def join(root: Any, fetch: Fetch) -> Any:
    """The value that `split` cut into `root` and parts, reading the parts with `fetch`,
    one round for each level of references (so a few rounds, however long the value).

    Blocking and CPU-bound for a long value: stores call it in a worker thread.

    Raises:
        DamagedParts: a part is missing, does not match its digest, or does not fit.
    """
    loaded: dict[str, Any] = {}
    plain: set[str] = set()
    wanted, _ = _scan(root)
    while wanted:
        ordered = sorted(wanted)
        found = fetch(ordered)
        data: list[bytes] = []
        for digest in ordered:
            part = found.get(digest)
            if part is None:
                raise DamagedParts(f"part {digest} is missing from the store")
            if part_digest(part) != digest:
                raise DamagedParts(f"part {digest} does not match its digest")
            data.append(part)
        wanted: set[str] = set()
        for digest, value in zip(ordered, _parsed(ordered, data), strict=True):
            loaded[digest] = value
            references, marked = _scan(value)
            if not marked:
                plain.add(digest)
            wanted.update(reference for reference in references if reference not in loaded)
    return _Joiner(loaded, plain).value(root)


_PARSE_BATCH = 256
"""Parts parsed by one `json.loads` (one call per part would cost more than the parsing; a
bounded batch keeps each call, which holds the GIL, short)."""


def _parsed(digests: list[str], data: list[bytes]) -> list[Any]:
    """The JSON values of the parts `data` (filed under `digests`)."""
    values: list[Any] = []
    for start in range(0, len(data), _PARSE_BATCH):
        batch = data[start : start + _PARSE_BATCH]
        try:
            parsed: Any = json.loads(b"[" + b",".join(batch) + b"]")
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and len(cast(list[Any], parsed)) == len(batch):
            values.extend(cast(list[Any], parsed))
            continue
        # A part that is not one JSON value: find it, to name it.
        for digest, part in zip(digests[start : start + _PARSE_BATCH], batch, strict=True):
            try:
                values.append(json.loads(part))
            except ValueError as error:
                raise DamagedParts(f"part {digest} is not JSON: {error}") from None
    return values


class KnownParts:
    """Digests of parts a store knows it holds, so a save sends only new ones, and the
    digests of long strings it cut before, so a save does not encode them again.

    Parts are never deleted, so a digest once stored stays true; the set is emptied when it
    grows past `capacity`, the strings when they pass `text_capacity` characters (a forgotten
    part is only encoded and sent again, and stored once).
    """

    __slots__ = ("_capacity", "_digests", "_text_capacity", "_text_size", "_texts")

    def __init__(self, capacity: int = 100_000, text_capacity: int = 32 << 20) -> None:
        self._capacity = capacity
        self._digests: set[str] = set()
        self._text_capacity = text_capacity
        self._texts: dict[str, str] = {}
        self._text_size = 0

    def text(self, text: str) -> str | None:
        """The digest of `text`'s part, when it was cut before and the store holds it."""
        digest = self._texts.get(text)
        return digest if digest is not None and digest in self._digests else None

    def remember_text(self, text: str, digest: str) -> None:
        """Note that `text` is the part `digest` (used once the part is known stored)."""
        if len(text) * 4 > self._text_capacity:
            return
        if self._text_size + len(text) > self._text_capacity:
            self._texts.clear()
            self._text_size = 0
        self._texts[text] = digest
        self._text_size += len(text)

    def new(self, objects: dict[str, bytes]) -> dict[str, bytes]:
        """The parts of `objects` not known to be stored."""
        known = self._digests
        return {digest: data for digest, data in objects.items() if digest not in known}

    def add(self, digests: Iterable[str]) -> None:
        """Remember `digests` as stored (call once their transaction committed)."""
        if len(self._digests) > self._capacity:
            self._digests.clear()
            self._texts.clear()
            self._text_size = 0
        self._digests.update(digests)


_DIGEST_LENGTH = 43


def part_digest(data: bytes) -> str:
    """The key a part is stored under: its sha256 in unpadded URL-safe base64 (43 characters;
    a part is referred to from every value that holds it, so the short form pays). Content put
    in the store by hand is filed under its hex digest (64 characters): the two never meet."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest())[:_DIGEST_LENGTH].decode()


def dumps(value: Any) -> bytes:
    """Compact JSON of `value` as UTF-8, lone surrogates escaped (so they round-trip)."""
    return _encoder.encode(value).encode("utf-8", "backslashreplace")


_REFERENCE_BYTES = 54
"""Length of `{"$ref":"<43 characters>"}`."""
_SCALAR_BYTES = 8
"""What a number, a bool or null is taken to cost (a size estimate only decides what is a part)."""


class _Splitter:
    """Cuts one value; sizes are estimated bottom-up (a pure function of the value, so the
    layout is too), and each part is encoded once."""

    __slots__ = ("known", "objects")

    def __init__(self, objects: dict[str, bytes], known: KnownParts | None) -> None:
        self.objects = objects
        self.known = known

    def value(self, value: Any) -> tuple[Any, int]:
        """`value` as stored, and about how long its JSON is."""
        kind: type[object] = type(cast(object, value))
        if kind is str:
            size = len(value) + 2
            return (value, size) if size <= INLINE_BYTES else (self._text(value), _REFERENCE_BYTES)
        if kind is dict and all(type(key) is str for key in value):
            kept: dict[str, Any] = {}
            size = 1
            for key, item in cast(dict[str, Any], value).items():
                kept[key], item_size = self.value(item)
                size += len(key) + 4 + item_size
            if len(kept) == 1 and next(iter(kept)) in _MARKERS:
                kept, size = {_ESCAPE: kept}, size + 9
            return self._sized(kept, size)
        if kind is list or kind is tuple:
            pairs = [self.value(item) for item in cast(list[Any], value)]
            return self._array([item for item, _ in pairs], [size for _, size in pairs])
        if value is None or kind is int or kind is float or kind is bool:
            return value, _SCALAR_BYTES
        # Anything else (a model, a datetime, an enum, a dict with other keys) as pydantic
        # serializes it to JSON. Value by value, not the whole value first: one call on a
        # long conversation would hold the GIL, and so stall the event loop, for its length.
        return self.value(pydantic_core.to_jsonable_python(value))

    def _array(self, items: list[Any], sizes: list[int]) -> tuple[Any, int]:
        if len(items) <= CHUNK:
            return self._sized(items, 1 + sum(sizes) + len(sizes))
        whole = len(items) // CHUNK
        chunks = [self._part(items[i * CHUNK : (i + 1) * CHUNK]) for i in range(whole)]
        trees: list[Any] = []
        start = 0
        for count in _tree_sizes(whole):
            trees.append(self._tree(chunks[start : start + count]))
            start += count
        # The spine lists the trees smallest first, each node naming the rest: appending a
        # chunk merges only the smallest trees, so the rest of the spine stays as stored.
        spine: Any = None
        for tree in trees:
            spine = self._part([tree, spine])
        tail = whole * CHUNK
        layout = {_LIST: [len(items), spine, items[tail:]]}
        return layout, 20 + _REFERENCE_BYTES + sum(sizes[tail:]) + len(items) - tail

    def _tree(self, nodes: list[Any]) -> Any:
        if len(nodes) == 1:
            return nodes[0]
        half = len(nodes) // 2
        return self._part([self._tree(nodes[:half]), self._tree(nodes[half:])])

    def _sized(self, value: Any, size: int) -> tuple[Any, int]:
        return (self._part(value), _REFERENCE_BYTES) if size > INLINE_BYTES else (value, size)

    def _text(self, text: str) -> dict[str, str]:
        known = self.known
        digest = None if known is None else known.text(text)
        if digest is not None:
            return {_REF: digest}
        reference = self._part(text)
        if known is not None:
            known.remember_text(text, reference[_REF])
        return reference

    def _part(self, value: Any) -> dict[str, str]:
        data = dumps(value)
        digest = part_digest(data)
        self.objects[digest] = data
        return {_REF: digest}


def _tree_sizes(chunks: int) -> list[int]:
    """Powers of two adding up to `chunks`, largest first (its binary digits)."""
    return [1 << bit for bit in range(chunks.bit_length() - 1, -1, -1) if chunks >> bit & 1]


def _scan(value: Any) -> tuple[set[str], bool]:
    """The digests `value` refers to directly (not those inside the parts), and whether it
    holds any marker (a reference, an array layout or an escape): one without is used as
    parsed."""
    references: set[str] = set()
    marked = False
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            mapping = cast(dict[str, Any], item)
            if len(mapping) == 1:
                key, inner = next(iter(mapping.items()))
                if key in _MARKERS:
                    marked = True
                if key == _REF:
                    references.add(_digest(inner))
                    continue
                if key == _ESCAPE and isinstance(inner, dict):
                    stack.extend(cast(dict[str, Any], inner).values())
                    continue
            stack.extend(mapping.values())
        elif isinstance(item, list):
            stack.extend(cast(list[Any], item))
    return references, marked


def _digest(reference: Any) -> str:
    if not isinstance(reference, str) or len(reference) != _DIGEST_LENGTH:
        raise DamagedParts(f"{reference!r} is not a part reference")
    return reference


class _Joiner:
    """Puts a value together from its loaded parts. A part without markers is used as parsed
    the first time (no walk through its items, the bulk of a long conversation) and copied
    by the walk any later time, so no two places of the value share an object."""

    __slots__ = ("loaded", "plain")

    def __init__(self, loaded: dict[str, Any], plain: set[str]) -> None:
        self.loaded = loaded
        self.plain = plain

    def value(self, value: Any) -> Any:
        if isinstance(value, dict):
            mapping = cast(dict[str, Any], value)
            if len(mapping) == 1:
                key, inner = next(iter(mapping.items()))
                if key == _REF:
                    digest = _digest(inner)
                    if digest in self.plain:
                        self.plain.discard(digest)
                        return self.loaded[digest]
                    return self.value(self.loaded[digest])
                if key == _LIST:
                    return self._array(inner)
                if key == _ESCAPE:
                    return {k: self.value(v) for k, v in cast(dict[str, Any], inner).items()}
            return {key: self.value(item) for key, item in mapping.items()}
        if isinstance(value, list):
            return [self.value(item) for item in cast(list[Any], value)]
        return value

    def _array(self, layout: Any) -> list[Any]:
        try:
            length, spine, tail = cast(list[Any], layout)
            trees: list[Any] = []
            node = self.value(spine)
            while node is not None:
                tree, node = cast(list[Any], node)
                trees.append(tree)
            trees.reverse()
            items: list[Any] = []
            sizes = _tree_sizes(int(length) // CHUNK)
            if len(trees) != len(sizes):
                raise ValueError("the spine does not fit the length")
            for tree, size in zip(trees, sizes, strict=True):
                _leaves(tree, size.bit_length() - 1, items)
            items.extend(self.value(item) for item in cast(list[Any], tail))
        except (TypeError, ValueError) as error:
            raise DamagedParts(f"an array layout is damaged: {error}") from None
        if len(items) != length:
            raise DamagedParts(f"an array holds {len(items)} items, not {length}")
        return items


def _leaves(tree: Any, level: int, into: list[Any]) -> None:
    """Append the items of a joined tree of `2**level` chunks to `into`."""
    if level == 0:
        into.extend(cast(list[Any], tree))
        return
    left, right = cast(list[Any], tree)
    _leaves(left, level - 1, into)
    _leaves(right, level - 1, into)
