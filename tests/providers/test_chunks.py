"""Chunk assembly into provider events, and SSE decoding, without a network."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from raf.messages import ToolCallContent
from raf.providers._chunks import ChunkAssembler
from raf.providers._sse import SseDecoder
from raf.providers.base import (
    Completion,
    ProviderEvent,
    ReasoningChunk,
    TextChunk,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}


def _call_delta(
    index: int | None, piece: str, *, call_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """A chunk with one tool-call delta; `index=None` leaves the index out."""
    function: dict[str, Any] = {"arguments": piece}
    if name is not None:
        function["name"] = name
    entry: dict[str, Any] = {"function": function}
    if index is not None:
        entry["index"] = index
    if call_id is not None:
        entry["id"] = call_id
    return _chunk({"tool_calls": [entry]})


def _run(chunks: list[dict[str, Any]]) -> list[ProviderEvent]:
    assembler = ChunkAssembler()
    events: list[ProviderEvent] = []
    for chunk in chunks:
        events.extend(assembler.feed(chunk))
    return events + assembler.finish()


def _pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


_CALLS = st.lists(
    st.tuples(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), st.text(min_size=0, max_size=60)),
    min_size=1,
    max_size=3,
)
"""One to three tool calls: (name, arguments text)."""


@st.composite
def _interleaved_calls(draw: st.DrawFn) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """Some tool calls, and a chunk sequence streaming them with interleaved argument pieces."""
    calls = draw(_CALLS)
    queues: list[list[dict[str, Any]]] = []
    for index, (name, arguments) in enumerate(calls):
        cuts = draw(st.lists(st.integers(0, len(arguments)), max_size=8))
        pieces = _pieces(arguments, cuts)
        first = _call_delta(index, "", call_id=f"id-{index}", name=name)
        queues.append([first] + [_call_delta(index, p) for p in pieces])
    chunks: list[dict[str, Any]] = []
    while any(queues):
        live = [q for q in queues if q]
        chunks.append(draw(st.sampled_from(live)).pop(0))
    return calls, chunks


@settings(max_examples=30)
@given(_interleaved_calls())
def test_any_split_and_interleaving_of_arguments_assembles_the_same_calls(
    case: tuple[list[tuple[str, str]], list[dict[str, Any]]],
) -> None:
    _assert_assembled(*case, in_order=False)


@st.composite
def _calls_told_apart_by_id(
    draw: st.DrawFn,
) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """Tool calls streamed one after another, each with its index, index 0 or no index on all
    its deltas, and its id on its first delta (and maybe repeated on later ones)."""
    calls = draw(_CALLS)
    style = draw(st.sampled_from(["index", "zero"]))
    chunks: list[dict[str, Any]] = []
    for position, (name, arguments) in enumerate(calls):
        index = draw(st.sampled_from([position if style == "index" else 0, None]))
        cuts = draw(st.lists(st.integers(0, len(arguments)), max_size=8))
        pieces = _pieces(arguments, cuts) or [""]
        if draw(st.booleans()):
            pieces.insert(0, "")  # a first delta with the name and id only
        first, *rest = pieces
        chunks.append(_call_delta(index, first, call_id=f"id-{position}", name=name))
        for piece in rest:
            chunks.append(
                _call_delta(index, piece, call_id=f"id-{position}" if draw(st.booleans()) else None)
            )
    return calls, chunks


@settings(max_examples=30)
@given(_calls_told_apart_by_id())
def test_calls_without_a_usable_index_are_told_apart_by_their_ids(
    case: tuple[list[tuple[str, str]], list[dict[str, Any]]],
) -> None:
    _assert_assembled(*case, in_order=True)


def _assert_assembled(
    calls: list[tuple[str, str]], chunks: list[dict[str, Any]], *, in_order: bool
) -> None:
    """The chunks assemble to `calls` (ids `id-0`, `id-1`, …), each started once, each
    argument delta streamed; `in_order`: started in call order."""
    events = _run([*chunks, _chunk({}, "tool_calls")])
    expected = [
        ToolCallContent(call_id=f"id-{i}", name=name, arguments=arguments)
        for i, (name, arguments) in enumerate(calls)
    ]
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert completion.tool_calls == expected
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    if not in_order:
        started.sort(key=lambda e: e.call_id)
    assert started == [ToolCallStarted(c.call_id, c.name) for c in expected]
    for call in expected:
        streamed = "".join(
            e.delta for e in events if isinstance(e, ToolCallDelta) and e.call_id == call.call_id
        )
        assert streamed == call.arguments


def test_two_calls_without_index_stay_two_calls() -> None:
    events = _run(
        [
            _call_delta(None, '{"a":1}', call_id="c1", name="add"),
            _call_delta(None, '{"b":2}', call_id="c2", name="mul"),
            _chunk({}, "tool_calls"),
        ]
    )
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert completion.tool_calls == [
        ToolCallContent(call_id="c1", name="add", arguments='{"a":1}'),
        ToolCallContent(call_id="c2", name="mul", arguments='{"b":2}'),
    ]
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [
        ToolCallStarted("c1", "add"),
        ToolCallStarted("c2", "mul"),
    ]


def test_a_delta_without_index_or_id_continues_the_last_call() -> None:
    events = _run(
        [
            _call_delta(None, '{"a"', call_id="c1", name="add"),
            _call_delta(None, ":1}"),
            _call_delta(None, "", call_id="c2", name="mul"),
            _call_delta(None, '{"b":2}'),
            _chunk({}, "tool_calls"),
        ]
    )
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert completion.tool_calls == [
        ToolCallContent(call_id="c1", name="add", arguments='{"a":1}'),
        ToolCallContent(call_id="c2", name="mul", arguments='{"b":2}'),
    ]


def test_a_new_id_at_a_used_index_does_not_take_the_next_index() -> None:
    # Call "b" was moved off index 0; the server's own index 1 still gets its own call.
    events = _run(
        [
            _call_delta(0, "{}", call_id="a", name="f"),
            _call_delta(0, "", call_id="b", name="g"),
            _call_delta(1, "", call_id="c", name="h"),
            _call_delta(0, "[1]"),
            _call_delta(1, "[2]"),
            _chunk({}, "tool_calls"),
        ]
    )
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert completion.tool_calls == [
        ToolCallContent(call_id="a", name="f", arguments="{}"),
        ToolCallContent(call_id="b", name="g", arguments="[1]"),
        ToolCallContent(call_id="c", name="h", arguments="[2]"),
    ]


def test_deltas_of_a_call_follow_its_start() -> None:
    events = _run(
        [
            _call_delta(0, '{"a"', call_id="c1", name="f"),
            _call_delta(0, ": 1}"),
            _chunk({}, "tool_calls"),
        ]
    )
    assert events[:3] == [
        ToolCallStarted("c1", "f"),
        ToolCallDelta("c1", '{"a"'),
        ToolCallDelta("c1", ": 1}"),
    ]


def test_arguments_before_the_name_are_sent_once_the_name_arrives() -> None:
    events = _run(
        [
            _call_delta(0, '{"x":', call_id="c1"),
            _call_delta(0, " 2}", name="late"),
            _chunk({}, "tool_calls"),
        ]
    )
    assert events[:2] == [ToolCallStarted("c1", "late"), ToolCallDelta("c1", '{"x": 2}')]


def test_missing_ids_get_stable_distinct_ones() -> None:
    events = _run(
        [_call_delta(0, "{}", name="a"), _call_delta(1, "{}", name="b"), _chunk({}, "tool_calls")]
    )
    completion = events[-1]
    assert isinstance(completion, Completion)
    ids = [c.call_id for c in completion.tool_calls]
    assert len(set(ids)) == 2
    assert [e.call_id for e in events if isinstance(e, ToolCallStarted)] == ids


def test_a_repeated_id_with_another_name_does_not_rename_a_started_call() -> None:
    events = _run(
        [
            _call_delta(0, "", call_id="first", name="f"),
            _call_delta(0, "{}", call_id="first", name="g"),
            _chunk({}, "tool_calls"),
        ]
    )
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert completion.tool_calls == [ToolCallContent(call_id="first", name="f", arguments="{}")]


def test_reasoning_from_either_field_and_never_twice() -> None:
    events = _run(
        [
            _chunk({"reasoning_content": "a"}),
            _chunk({"reasoning": "b"}),
            _chunk({"reasoning_content": "c", "reasoning": "c"}),
            _chunk({"content": "done"}, "stop"),
        ]
    )
    assert [e for e in events if isinstance(e, ReasoningChunk)] == [
        ReasoningChunk("a"),
        ReasoningChunk("b"),
        ReasoningChunk("c"),
    ]
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert (completion.reasoning, completion.text) == ("abc", "done")


def test_usage_is_reported_once_before_the_completion() -> None:
    events = _run(
        [
            _chunk({"content": "hi"}, "stop"),
            {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
        ]
    )
    assert events[-2:] == [
        UsageReport(5, 2),
        Completion(text="hi", input_tokens=5, output_tokens=2, finish_reason="stop"),
    ]


def test_odd_chunks_are_ignored_not_fatal() -> None:
    events = _run(
        [
            {"id": "x"},
            {"choices": "nonsense"},
            {"choices": [{"index": 1, "delta": {"content": "other choice"}}]},
            _chunk({"content": None, "role": "assistant"}),
            _chunk({"content": "ok"}, "stop"),
        ]
    )
    assert [e for e in events if isinstance(e, TextChunk)] == [TextChunk("ok")]


def test_no_finish_reason_leaves_it_unset() -> None:
    events = _run([_chunk({"content": "cut"})])
    completion = events[-1]
    assert isinstance(completion, Completion)
    assert completion.finish_reason is None


@settings(max_examples=30)
@given(
    payloads=st.lists(
        st.text(min_size=1, max_size=30).filter(lambda s: "\n" not in s and "\r" not in s),
        min_size=1,
        max_size=5,
    ),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(0, 400), max_size=10),
)
def test_sse_decoding_survives_any_split_of_the_body(
    payloads: list[str], newline: str, cuts: list[int]
) -> None:
    body = "".join(
        f"data: {json.dumps(p, ensure_ascii=False)}{newline}{newline}" for p in payloads
    ).encode()
    points = sorted({min(c, len(body)) for c in cuts} | {0, len(body)})
    decoder = SseDecoder()
    decoded: list[bytes] = []
    for a, b in itertools.pairwise(points):
        decoded.extend(decoder.feed(body[a:b]))
    assert [json.loads(d) for d in decoded] == payloads


def test_sse_comments_and_other_fields_are_skipped_and_data_lines_joined() -> None:
    decoder = SseDecoder()
    body = b": keep-alive\n\nevent: message\nid: 3\ndata: a\ndata: b\n\n"
    assert decoder.feed(body) == [b"a\nb"]
