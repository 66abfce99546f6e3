"""`FunctionAgent` checks its function when it is built."""

from __future__ import annotations

import pytest

from raf import FunctionAgent

PREFIX = (
    "FunctionAgent 'x': fn must be a function fn(messages) returning a str or a ChatMessage "
    "(or an async generator of str), got "
)


def test_a_text_instead_of_a_function_says_how_to_answer_it_always() -> None:
    with pytest.raises(TypeError) as raised:
        FunctionAgent("x", "hello")  # type: ignore[arg-type]
    assert (
        str(raised.value)
        == PREFIX + "the str 'hello' (for a fixed answer: lambda messages: 'hello')"
    )


@pytest.mark.parametrize(("fn", "shown"), [(3, "the int 3"), (None, "None")])
def test_anything_else_not_callable_is_named(fn: object, shown: str) -> None:
    with pytest.raises(TypeError) as raised:
        FunctionAgent("x", fn)  # type: ignore[arg-type]
    assert str(raised.value) == PREFIX + shown


def test_swapped_arguments_are_named() -> None:
    with pytest.raises(TypeError) as raised:
        FunctionAgent(lambda messages: "hi", "greeter")  # type: ignore[arg-type]
    assert str(raised.value) == (
        "FunctionAgent(id, fn) takes the id first: FunctionAgent('greeter', fn), "
        "got the function first"
    )
