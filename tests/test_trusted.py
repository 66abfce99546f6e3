"""Models built without validation (`raf._trusted`) are indistinguishable from validated ones."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, PrivateAttr

from raf._trusted import (
    assistant_text,
    completed_response,
    executor_invoked,
    executor_invoking,
    message_completed,
    text_delta,
    usage,
    with_paths,
)
from raf.messages import ChatMessage, TextContent
from raf.providers.seat import seen_by
from raf.updates import (
    AgentResponse,
    ExecutorInvoked,
    ExecutorInvoking,
    MessageCompleted,
    TextDelta,
    Usage,
)

ids = st.text(min_size=1, max_size=8)
paths = st.lists(ids, max_size=3).map(tuple)
texts = st.text(max_size=20)
messages = st.builds(ChatMessage.assistant, texts, st.one_of(st.none(), ids)) | st.builds(
    ChatMessage.user, texts
)
values = st.one_of(st.none(), st.integers(), texts, st.dictionaries(ids, st.integers()))


@pytest.mark.parametrize(
    "model",
    [
        ExecutorInvoking,
        ExecutorInvoked,
        MessageCompleted,
        AgentResponse,
        Usage,
        TextDelta,
        ChatMessage,
        TextContent,
    ],
)
def test_every_model_built_this_way_has_no_extra_fields_private_attributes_or_post_init(
    model: type[BaseModel],
) -> None:
    # What `trusted` leaves out: such a model would need them set.
    assert model.model_config.get("extra") != "allow"
    assert not model.__private_attributes__
    assert model.__pydantic_post_init__ is None
    assert not model.__pydantic_root_model__


def _same(made: BaseModel, validated: BaseModel) -> None:
    assert type(made) is type(validated)
    assert made == validated
    assert repr(made) == repr(validated)
    assert made.model_dump() == validated.model_dump()
    assert made.model_dump_json() == validated.model_dump_json()
    assert made.model_fields_set == validated.model_fields_set
    assert pickle.loads(pickle.dumps(made)) == validated
    assert made.model_copy() == validated.model_copy()
    assert type(validated).model_validate_json(made.model_dump_json()) == validated


@given(ids, paths)
def test_executor_invoking(node_id: str, path: tuple[str, ...]) -> None:
    _same(executor_invoking(node_id, path), ExecutorInvoking(executor_id=node_id, path=path))


@given(ids, st.lists(messages, max_size=3), values, paths)
def test_executor_invoked_owns_a_copy_of_the_messages(
    node_id: str, produced: list[ChatMessage], value: Any, path: tuple[str, ...]
) -> None:
    made = executor_invoked(node_id, produced, value, path)
    _same(made, ExecutorInvoked(executor_id=node_id, messages=produced, value=value, path=path))
    assert made.messages is not produced


@given(messages, paths)
def test_message_completed(message: ChatMessage, path: tuple[str, ...]) -> None:
    made = message_completed(message, path)
    _same(made, MessageCompleted(message=message, path=path))
    moved = made.model_copy(update={"path": ("outer", *path)})
    assert moved.path == ("outer", *path)
    assert moved.model_fields_set == {"message", "path"}
    assert made.path == path  # the copy has its own fields


@given(st.lists(messages, max_size=3), st.integers(0, 10**9), st.integers(0, 10**9), values)
def test_completed_response(
    produced: list[ChatMessage], tokens_in: int, tokens_out: int, value: Any
) -> None:
    made = completed_response(list(produced), tokens_in, tokens_out, value)
    usage = Usage(input_tokens=tokens_in, output_tokens=tokens_out)
    _same(made, AgentResponse(messages=produced, usage=usage, value=value))
    _same(made.usage, usage)
    assert made.pending == [] and made.status == "completed"


@given(st.lists(messages, max_size=3), values, st.lists(paths, max_size=3))
def test_with_paths_is_model_copy_with_the_paths(
    produced: list[ChatMessage], value: Any, attributed: list[tuple[str, ...]]
) -> None:
    response = AgentResponse(messages=produced, value=value)
    made = with_paths(response, list(attributed))
    _same(made, response.model_copy(update={"paths": list(attributed)}))
    assert made.model_fields_set == {"messages", "value", "paths"}
    assert response.paths == []  # the original keeps its own fields


class _Annotated(AgentResponse[Any]):
    model_config = ConfigDict(extra="allow")
    _seen: int = PrivateAttr(default=0)


def test_with_paths_leaves_a_subclass_with_extras_and_private_attributes_to_pydantic() -> None:
    response = _Annotated(messages=[ChatMessage.assistant("ok")], note="kept")
    response._seen = 3
    made = with_paths(response, [("team",)])
    assert made == response.model_copy(update={"paths": [("team",)]})
    assert made.model_extra == {"note": "kept"} and made._seen == 3


@given(ids, texts)
def test_another_agents_answer_is_shown_as_a_valid_attributed_user_message(
    author: str, text: str
) -> None:
    answer = ChatMessage.assistant(text, author)
    (_, shown) = seen_by("someone else", [ChatMessage.user("q"), answer])
    validated = ChatMessage(
        role="user",
        contents=[TextContent(text=f"[{author}]\n"), answer.contents[0]],
        author=author,
    )
    _same(shown, validated)
    assert shown.text == f"[{author}]\n{text}"


@given(texts, st.one_of(st.none(), ids))
def test_assistant_text(text: str, author: str | None) -> None:
    made = assistant_text(text, author)
    _same(made, ChatMessage.assistant(text, author))
    _same(made.contents[0], ChatMessage.assistant(text, author).contents[0])


@given(texts, paths)
def test_text_delta(text: str, path: tuple[str, ...]) -> None:
    _same(text_delta(text, path), TextDelta(text=text, path=path))


@given(st.integers(0, 10**9), st.integers(0, 10**9), paths)
def test_usage(tokens_in: int, tokens_out: int, path: tuple[str, ...]) -> None:
    validated = Usage(input_tokens=tokens_in, output_tokens=tokens_out, path=path)
    _same(usage(tokens_in, tokens_out, path), validated)
